#!/usr/bin/env python3
"""Record the microphone through audiogate's WebSocket capture into a WAV file.

    python3 record.py out.wav --seconds 5 [--rate 16000] [--channels 1] [--url ws://127.0.0.1:8750]

Needs the `audiogate` package (pip install ./clients/python) or a checkout of the repository.
"""
import argparse
import sys
import wave

import gateway


async def record(args):
    wanted = int(args.seconds * args.rate) * args.channels * 2
    received = bytearray()
    async with gateway.client(args).capture(rate=args.rate, channels=args.channels, format="s16le",
                                            chunk_ms=20) as capture:
        async for item in capture:
            if isinstance(item, gateway.audiogate.AudioChunk):
                received += item.data
                done = min(len(received), wanted) / (args.rate * args.channels * 2)
                print(f"\rrecording {done:5.2f}/{args.seconds:.2f} s", end="", file=sys.stderr, flush=True)
                if len(received) >= wanted:
                    break
            elif isinstance(item, (gateway.audiogate.OverrunEvent, gateway.audiogate.DeviceEvent)):
                print(f"\n{gateway.message(item)}", file=sys.stderr)
    print(file=sys.stderr)
    with wave.open(args.output, "wb") as out:
        out.setnchannels(args.channels)
        out.setsampwidth(2)
        out.setframerate(args.rate)
        out.writeframes(bytes(received[:wanted]))
    print(f"wrote {args.output}: {args.seconds} s at {args.rate} Hz", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rate", type=int, default=16000)
    parser.add_argument("--channels", type=int, default=1)
    parser.add_argument("--url", default=gateway.DEFAULT_URL, help="the server: http(s):// or ws(s)://")
    parser.add_argument("--token", default=None)
    gateway.run("record.py", record(parser.parse_args()))


if __name__ == "__main__":
    main()
