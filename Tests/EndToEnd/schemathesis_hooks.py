"""Schemathesis hooks for Tests/EndToEnd/check_openapi.py: how to send the audio bodies of POST /v1/playback.

Schemathesis only knows how to send application/octet-stream bytes. The audio/pcm body is such
bytes; the audio/wav body is wrapped in a WAV header whose format is picked from the generated
bytes, so the run covers every encoding the server plays and the ones it must refuse (415) or
reject as broken (400), not only bodies that are sniffed as raw PCM.
"""

import struct

import schemathesis
from schemathesis.transport.serialization import serialize_binary

# (format tag, bits per sample, channels, rate): played (listed twice, so most bodies play), then refused.
PLAYABLE = [
    (1, 16, 1, 16000),
    (1, 16, 2, 44100),
    (1, 8, 1, 8000),
    (1, 24, 2, 48000),
    (1, 32, 1, 22050),
    (3, 32, 2, 24000),
]
WAV_FORMATS = PLAYABLE * 2 + [
    (0x55, 16, 1, 16000),  # MP3: compressed, 415
    (1, 12, 1, 16000),  # odd bit depth, 415
    (1, 16, 3, 16000),  # three channels, 400
    (1, 16, 1, 4000),  # rate below 8000, 400
]

schemathesis.serializer.alias("audio/pcm", "application/octet-stream")


@schemathesis.serializer("audio/wav")
def wav(ctx, value):
    data = serialize_binary(value)
    if not data:
        return data  # an empty body must answer 400
    tag, bits, channels, rate = WAV_FORMATS[data[0] % len(WAV_FORMATS)]
    block = channels * ((bits + 7) // 8)
    fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * block, block, bits)
    body = b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WAVE" + body
