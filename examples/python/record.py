#!/usr/bin/env python3
"""Record the microphone through audiogate's WebSocket capture into a WAV file.

    python3 record.py out.wav --seconds 5 [--rate 16000] [--channels 1] [--url ws://127.0.0.1:8750]

Needs only `websockets` (pip install websockets) and the standard library.
"""
import argparse
import json
import sys
import wave

import websockets

import gateway


async def record(args):
    url = gateway.websocket_url(args.url, "/v1/capture", rate=args.rate, channels=args.channels, format="s16le",
                                chunk_ms=20)
    headers = gateway.headers(args.token)
    wanted = int(args.seconds * args.rate) * args.channels * 2
    received = bytearray()
    async with websockets.connect(url, additional_headers=headers, max_size=2**22) as socket:
        start = json.loads(await socket.recv())
        assert start["type"] == "start", start
        while len(received) < wanted:
            message = await socket.recv()
            if isinstance(message, bytes):
                received += message
                done = min(len(received), wanted) / (args.rate * args.channels * 2)
                print(f"\rrecording {done:5.2f}/{args.seconds:.2f} s", end="", file=sys.stderr, flush=True)
            else:
                event = json.loads(message)
                if event["type"] in ("overrun", "device"):
                    print(f"\n{event}", file=sys.stderr)
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
