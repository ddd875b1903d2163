#!/usr/bin/env python3
"""Connection churn soak: the server's memory must not grow with connections or requests.

For each kind (capture WebSocket raw and `format=opus`, a live `container=ogg` capture over HTTP,
playback WebSocket bare and with audio + mark + clear, POST of 100 ms of silence, POST of 200 ms of
MP3, Ogg Opus, FLAC and WebM Opus made with ffmpeg at the start, POST /v1/say, Wyoming mic and snd
connections, GET /v1/status as a control) it reads the server's RSS, runs thousands of connections,
reads RSS again and fails when a kind grew by more than the threshold per connection. Every
connection must succeed (status 200, the events expected), and after each kind every capture client
slot must come back (`/v1/status`), so no kind starts against the last one's. Expects a release
build; builds nothing.

Every WebSocket leaves a cancelled auto-ping sleep behind that holds a few hundred bytes until its
timer fires (up to 30 s after the close). So the WebSocket kinds first run a warm-up as large as the
measured run, the check waits for those timers, and the measured runs then reuse that memory: what
still grows is kept for good. The compressed uploads and /v1/say warm up as long too: their work
runs on the decoder and speech threads, whose heap takes thousands of requests to reach its
high-water mark. Plain HTTP and Wyoming connections warm up with 500, which also load what is
loaded once on first use.

    .venv/bin/python Tests/EndToEnd/check_churn.py [--binary .build/release/audiogate] [--count 5000]
"""
import argparse
import asyncio
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import websockets
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import async_read_event, async_write_event
from wyoming.info import Describe, Info
from wyoming.snd import Played

import e2e

HOST = "127.0.0.1"
DESCRIPTIONS = {
    "capture_ws": "capture WebSocket: connect, `start`, close",
    "capture_opus_ws": "capture WebSocket `format=opus`: `start`, one packet, close",
    "capture_ogg": "`GET /v1/capture?container=ogg`: read to the first audio page, close",
    "playback_ws": "playback WebSocket: connect, close",
    "playback_ws_audio": "playback WebSocket: 100 ms of audio, a mark, a clear",
    "post_playback": "`POST /v1/playback` of 100 ms, then `DELETE`",
    "post_mp3": "`POST /v1/playback` of 200 ms of MP3, then `DELETE`",
    "post_ogg": "`POST /v1/playback` of 200 ms of Ogg Opus, then `DELETE`",
    "post_flac": "`POST /v1/playback` of 200 ms of FLAC, then `DELETE`",
    "post_webm": "`POST /v1/playback` of 200 ms of WebM Opus, then `DELETE`",
    "say": "`POST /v1/say` of one word on its own stream, then `DELETE`",
    "wyoming_mic": "Wyoming mic: connect, `audio-start`, `describe` answered with `info`, close",
    "wyoming_snd": "Wyoming snd: `audio-start`, 100 ms `audio-chunk`, `audio-stop`, `played`, close",
    "get_status": "`GET /v1/status` (control)",
}
RESULTS = []  # (kind, KB per connection, connections, steal %) of the measured runs
KINDS = ["capture_ws", "capture_opus_ws", "capture_ogg", "playback_ws", "playback_ws_audio", "post_playback",
         "post_mp3", "post_ogg", "post_flac", "post_webm", "say", "wyoming_mic", "wyoming_snd", "get_status"]
WEBSOCKET_KINDS = {"capture_ws", "capture_opus_ws", "playback_ws", "playback_ws_audio"}
# Kinds whose work runs on the decoder and speech threads: their heap takes a few thousand requests
# to reach its high-water mark (1 to 3 MB above a 500-request warm-up), so they warm up as long as
# the WebSocket kinds.
THREADED_KINDS = {"post_mp3", "post_ogg", "post_flac", "post_webm", "say"}
# Kinds measured over another number of connections than --count, and their name in the Markdown.
# A Wyoming snd connection waits for its 100 ms to be heard, so it runs fewer (2000 of 5000: RSS is
# read in KB, so they still resolve a growth well under 0.3 KB each). The RSS of the threaded kinds
# moves by up to 1 MB between readings with no trend (each upload is decoded on a thread of its own,
# espeak-ng's buffers come and go from the heap), so they run twice as many.
COUNT_SCALE = {"wyoming_snd": 0.4} | {kind: 2 for kind in THREADED_KINDS}
# Short names of those kinds for the Markdown.
SHORT = {"post_mp3": "MP3", "post_ogg": "Ogg", "post_flac": "FLAC", "post_webm": "WebM", "say": "`/v1/say`",
         "wyoming_snd": "Wyoming snd"}
# 100 ms of 24 kHz mono s16le silence: the playback defaults.
SILENCE = bytes(4800)
# The compressed uploads: content type, and how ffmpeg encodes 200 ms of a 440 Hz tone into it.
COMPRESSED = {
    "post_mp3": ("audio/mpeg", "mp3", ["-c:a", "libmp3lame", "-b:a", "64k"]),
    "post_ogg": ("audio/ogg", "ogg", ["-c:a", "libopus", "-b:a", "32k"]),
    "post_flac": ("audio/flac", "flac", ["-c:a", "flac"]),
    "post_webm": ("audio/webm", "webm", ["-c:a", "libopus", "-b:a", "32k"]),
}
MEDIA = {}  # kind -> the file's bytes, made by make_media
WYOMING_PORTS = {}  # "mic"/"snd" -> port
# 100 ms of 16 kHz mono s16le silence for the Wyoming snd kind.
WYOMING_AUDIO = bytes(3200)


def make_media(directory):
    """200 ms of a tone in each compressed format, encoded by ffmpeg."""
    for kind, (_, extension, codec) in COMPRESSED.items():
        path = pathlib.Path(directory) / f"tone.{extension}"
        subprocess.run(
            ["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi",
             "-i", "sine=frequency=440:sample_rate=48000:duration=0.2", "-ac", "1", *codec, str(path)],
            check=True)
        MEDIA[kind] = path.read_bytes()


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def http(port, method, path, body=b"", content_type=None):
    """One request on a fresh connection; returns (status, body)."""
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        head = f"{method} {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n"
        if content_type:
            head += f"Content-Type: {content_type}\r\n"
        if body or method in ("POST", "PUT"):
            head += f"Content-Length: {len(body)}\r\n"
        writer.write(head.encode() + b"\r\n" + body)
        await writer.drain()
        response = await reader.read()
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass
    status_line, _, rest = response.partition(b"\r\n")
    parts = status_line.split()
    if len(parts) < 2:
        raise RuntimeError(f"{method} {path}: no HTTP answer")
    return int(parts[1]), rest.partition(b"\r\n\r\n")[2]


async def one(kind, port, worker):
    base = f"ws://{HOST}:{port}"
    if kind == "capture_ws":
        async with websockets.connect(f"{base}/v1/capture") as ws:
            start = json.loads(await ws.recv())
            assert start["type"] == "start", start
    elif kind == "capture_opus_ws":
        async with websockets.connect(f"{base}/v1/capture?format=opus") as ws:
            start = json.loads(await ws.recv())
            assert start["type"] == "start" and start["codec"] == "opus", start
            packet = await ws.recv()
            assert isinstance(packet, bytes) and packet, packet
    elif kind == "capture_ogg":
        await ogg_first_audio_page(port)
    elif kind == "playback_ws":
        async with websockets.connect(f"{base}/v1/playback?stream=churn-{worker}"):
            pass
    elif kind == "playback_ws_audio":
        async with websockets.connect(f"{base}/v1/playback?stream=churn-{worker}") as ws:
            await ws.send(SILENCE)
            await ws.send(json.dumps({"type": "mark", "name": "m"}))
            await ws.send(json.dumps({"type": "clear"}))
            # Clear answers at once; the mark before it is dropped with the audio.
            while json.loads(await ws.recv())["type"] != "cleared":
                pass
    elif kind == "post_playback":
        status, body = await http(
            port, "POST", f"/v1/playback?stream=churn-{worker}&rate=24000&channels=1&format=s16le", SILENCE,
            "application/octet-stream")
        assert status == 200, (status, body)
        # Flush so thousands of uploads never fill the stream's queue (it plays in real time).
        status, body = await http(port, "DELETE", f"/v1/playback?stream=churn-{worker}")
        assert status == 200, (status, body)
    elif kind in COMPRESSED:
        status, body = await http(
            port, "POST", f"/v1/playback?stream=churn-{worker}", MEDIA[kind], COMPRESSED[kind][0])
        assert status == 200, (status, body)
        # Decoded whole: 200 ms, give or take an encoder's padding.
        assert 150 <= json.loads(body)["duration_ms"] <= 260, body
        status, body = await http(port, "DELETE", f"/v1/playback?stream=churn-{worker}")
        assert status == 200, (status, body)
    elif kind == "say":
        status, body = await http(
            port, "POST", "/v1/say", json.dumps({"text": "churn", "stream": f"churn-{worker}"}).encode(),
            "application/json")
        assert status == 200, (status, body)
        assert json.loads(body)["duration_ms"] > 0, body
        status, body = await http(port, "DELETE", f"/v1/playback?stream=churn-{worker}")
        assert status == 200, (status, body)
    elif kind == "wyoming_mic":
        reader, writer = await asyncio.open_connection(HOST, WYOMING_PORTS["mic"])
        try:
            start = await async_read_event(reader)
            assert start is not None and AudioStart.is_type(start.type), start
            await async_write_event(Describe().event(), writer)
            # Audio chunks may come before the answer.
            while True:
                event = await async_read_event(reader)
                assert event is not None, "the mic connection closed before info"
                if Info.is_type(event.type):
                    break
        finally:
            writer.close()
            await wait_closed(writer)
    elif kind == "wyoming_snd":
        reader, writer = await asyncio.open_connection(HOST, WYOMING_PORTS["snd"])
        try:
            await async_write_event(AudioStart(rate=16000, width=2, channels=1).event(), writer)
            await async_write_event(AudioChunk(rate=16000, width=2, channels=1, audio=WYOMING_AUDIO).event(), writer)
            await async_write_event(AudioStop().event(), writer)
            played = await async_read_event(reader)
            assert played is not None and Played.is_type(played.type), played
        finally:
            writer.close()
            await wait_closed(writer)
    elif kind == "get_status":
        status, body = await http(port, "GET", "/v1/status")
        assert status == 200, (status, body)
    else:
        raise ValueError(kind)


async def ogg_first_audio_page(port):
    """`GET /v1/capture?container=ogg` read up to its first page of audio (after the header pages),
    then closed while the stream goes on."""
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(f"GET /v1/capture?container=ogg HTTP/1.1\r\nHost: {HOST}:{port}\r\n\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        assert status == 200, head
        assert b"audio/ogg" in head and b"chunked" in head.lower(), head
        body = bytearray()
        while True:
            # One chunk of the chunked body: its size in hex, CRLF, the bytes, CRLF.
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            assert size > 0, "the stream ended"
            body += await reader.readexactly(size + 2)
            del body[-2:]
            while len(body) >= 27 and len(body) >= 27 + body[26]:
                assert body[:4] == b"OggS", bytes(body[:32])
                segments = body[26]
                length = 27 + segments + sum(body[27:27 + segments])
                if len(body) < length:
                    break
                granule = int.from_bytes(body[6:14], "little", signed=True)
                if granule > 0:
                    return
                del body[:length]
    finally:
        writer.close()
        await wait_closed(writer)


async def wait_closed(writer):
    try:
        await writer.wait_closed()
    except OSError:
        pass


def count_of(kind, args):
    """Measured connections of `kind`."""
    return max(1, round(args.count * COUNT_SCALE.get(kind, 1)))


def warmup_of(kind, args):
    """Connections of `kind` before any RSS reading."""
    full = count_of(kind, args) if args.warmup is None else args.warmup
    return full if kind in WEBSOCKET_KINDS | THREADED_KINDS else min(full, 500)


async def run(kind, port, count, concurrency):
    next_index = 0

    async def worker(number):
        nonlocal next_index
        while next_index < count:
            next_index += 1
            await asyncio.wait_for(one(kind, port, number), timeout=10)

    await asyncio.gather(*(worker(n) for n in range(concurrency)))


async def settle(port, kind):
    """Waits until no client is left on the server, so RSS is read with every connection gone and
    the next kind starts with every capture client slot free. Fails when the capture clients' slots
    (subscribers, compressed clients, shared encoders) are not all given back within 10 s."""
    deadline = time.monotonic() + 10
    while True:
        status, body = await http(port, "GET", "/v1/status")
        state = json.loads(body)
        wyoming = state["wyoming"]
        capture = state["capture"]
        # A compressed capture client's slot is given back when the server notices it left: an
        # HTTP stream's when it fails to send the next page (pages are 100 ms), a WebSocket's at
        # the close handshake.
        held = {name: capture[name] for name in ("subscribers", "encoded_clients") if capture[name]}
        if capture["encoders"]:
            held["encoders"] = len(capture["encoders"])
        others = state["playback"]["streams"] or wyoming["mic_clients"] or wyoming["snd_clients"]
        if status == 200 and not held and not others:
            break
        if time.monotonic() > deadline:
            # Other clients are only waited for; a capture slot never given back fails the check.
            if held:
                e2e.check(False, f"{kind}: capture client slots still held 10 s after the last close: {held}")
            break
        await asyncio.sleep(0.05)
    # Gives the last connections' tasks time to unwind after they left the status.
    await asyncio.sleep(0.3)


async def measure(kind, server, port, args):
    before = rss_kb(server.process.pid)
    steal_before = e2e.cpu_sample()
    started = time.monotonic()
    count = count_of(kind, args)
    await run(kind, port, count, args.concurrency)
    elapsed = time.monotonic() - started
    await settle(port, kind)
    after = rss_kb(server.process.pid)
    steal = e2e.steal_percent(steal_before, e2e.cpu_sample())
    per = (after - before) / count
    print(
        f"{kind}: {per:+.2f} KB per connection ({count} connections, RSS {before / 1024:.1f} -> "
        f"{after / 1024:.1f} MB; {elapsed:.1f} s, steal {steal:.1f}%)", flush=True)
    return per, steal


async def quiesce(port, args, kind):
    await settle(port, kind)
    print(f"waiting {args.timer_seconds:.0f} s for the closed sockets' timers to fire", flush=True)
    await asyncio.sleep(args.timer_seconds)


async def main_async(args, server, port):
    for kind in args.kinds:
        # See warmup_of; the warm-up also loads what is loaded once (espeak-ng's voice data, the codecs).
        before = rss_kb(server.process.pid)
        await run(kind, port, warmup_of(kind, args), args.concurrency)
        await settle(port, kind)
        print(f"warm-up {kind}: {warmup_of(kind, args)} connections, RSS {before / 1024:.1f} -> "
              f"{rss_kb(server.process.pid) / 1024:.1f} MB", flush=True)
    await quiesce(port, args, kind)
    for index, kind in enumerate(args.kinds):
        per, steal = await measure(kind, server, port, args)
        if per > args.threshold and steal > e2e.STEAL_LIMIT:
            print(f"{kind}: over {args.threshold} KB with {steal:.1f}% steal: retrying once", flush=True)
            await quiesce(port, args, kind)
            per, steal = await measure(kind, server, port, args)
        e2e.check(per <= args.threshold, f"{kind}: grows {per:+.2f} KB per connection (at most {args.threshold})")
        RESULTS.append((kind, per, count_of(kind, args), steal))
        # The next kind starts without another kind's pending timers.
        if kind in WEBSOCKET_KINDS and index + 1 < len(args.kinds):
            await quiesce(port, args, kind)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", type=pathlib.Path, default=e2e.ROOT / ".build/release/audiogate",
                        help="a release build of the server (default .build/release/audiogate)")
    parser.add_argument("--device", default=os.environ.get("AUDIOGATE_TEST_DEVICE", "pulse"))
    # RSS moves by a few hundred KB between readings whatever the server does: over 5000 connections
    # that noise stays near 0.1 KB each, well under the threshold a real leak crosses.
    parser.add_argument(
        "--count", type=int, default=5000,
        help="measured connections per kind (0.4 times as many Wyoming snd, twice as many compressed uploads and /v1/say)")
    parser.add_argument(
        "--warmup", type=int,
        help="connections per kind before any RSS reading (default: as many as measured; at most 500 for plain HTTP "
             "and Wyoming)")
    parser.add_argument(
        "--timer-seconds", type=float, default=31, help="wait for closed WebSockets' auto-ping timers (30 s) to fire")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--threshold", type=float, default=0.3, help="most KB of growth per connection")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=KINDS)
    parser.add_argument("--markdown", type=pathlib.Path, help="also write the figures as a Markdown table here")
    args = parser.parse_args()
    if not os.access(args.binary, os.X_OK):
        raise SystemExit(f"check-churn: {args.binary} not found; build it first (swift build -c release)")
    data_dir = tempfile.mkdtemp(prefix="audiogate-churn-")
    make_media(data_dir)
    steal_start = e2e.cpu_sample()
    WYOMING_PORTS.update(mic=e2e.free_port(), snd=e2e.free_port())
    server = e2e.Server(args.binary, args.device, data_dir=data_dir,
                        extra=["--wyoming-mic-port", str(WYOMING_PORTS["mic"]),
                               "--wyoming-snd-port", str(WYOMING_PORTS["snd"])])
    print(f"check-churn: {args.binary} on {args.device}, port {server.port}", flush=True)
    try:
        if e2e.check(server.start(capture=True, seconds=20), "the server starts and captures"):
            asyncio.run(main_async(args, server, server.port))
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    print(f"steal over the run: {e2e.steal_percent(steal_start, e2e.cpu_sample()):.1f}%")
    if args.markdown:
        counts = {}
        for kind, _, count, _ in RESULTS:
            if count != args.count:
                counts.setdefault(count, []).append(SHORT[kind])
        other = [f"{count} of {', '.join(names[:-1]) + ' and ' if len(names) > 1 else ''}{names[-1]}"
                 for count, names in counts.items()]
        plain = min(args.warmup if args.warmup is not None else args.count, 500)
        lines = ["## Memory under connection churn", "",
                 f"`Tests/EndToEnd/check_churn.py` against the release build on the `{args.device}` card: "
                 f"RSS after a warm-up (as many connections as measured for the WebSocket kinds, the compressed "
                 f"uploads and `/v1/say`; {plain} for the others), then after {args.count} more of each kind"
                 + (f" ({', '.join(other)})" if other else "")
                 + f", {args.concurrency} at a time. Fails above {args.threshold} KB per connection.", "",
                 "| kind | growth per connection | steal |", "| --- | --- | --- |"]
        lines += [f"| {DESCRIPTIONS[kind]} | {per:+.2f} KB | {steal:.1f}% |" for kind, per, _, steal in RESULTS]
        args.markdown.write_text("\n".join(lines) + "\n")
    e2e.finish()


if __name__ == "__main__":
    main()
