#!/usr/bin/env python3
"""Play a WAV file (or raw s16le from stdin) through audiogate's WebSocket playback.

    python3 play.py speech.wav [--url ws://127.0.0.1:8750] [--stream default]
    sox in.mp3 -t raw -r 24000 -c 1 -b 16 -e signed - | python3 play.py - --rate 24000

Sends audio paced at real time (slightly ahead), puts a mark after the last chunk and waits until
the server says it was heard. Ctrl-C sends `clear` (barge-in) and prints how much was heard.
Needs only `websockets` and the standard library.
"""
import argparse
import asyncio
import json
import sys
import time
import wave

import websockets

import gateway

CHUNK_MS = 40
LEAD_SECONDS = 0.3


def read_input(path, rate, channels):
    if path == "-":
        return sys.stdin.buffer.read(), rate, channels
    with wave.open(path, "rb") as source:
        if source.getsampwidth() != 2:
            sys.exit("play.py sends 16-bit WAV files; convert others with sox, or POST them to /v1/playback")
        return source.readframes(source.getnframes()), source.getframerate(), source.getnchannels()


async def play(args):
    pcm, rate, channels = read_input(args.input, args.rate, args.channels)
    url = gateway.websocket_url(args.url, "/v1/playback", rate=rate, channels=channels, format="s16le",
                                stream=args.stream)
    headers = gateway.headers(args.token)
    chunk = rate * channels * 2 * CHUNK_MS // 1000
    async with websockets.connect(url, additional_headers=headers) as socket:
        async def events():
            async for message in socket:
                event = json.loads(message)
                print(f"\n{event}", file=sys.stderr)
                if event["type"] == "mark" and event["name"] == "end":
                    return event
                if event["type"] == "cleared":
                    return event

        listener = asyncio.create_task(events())
        start = time.monotonic()
        sent = 0
        try:
            for offset in range(0, len(pcm), chunk):
                await socket.send(pcm[offset:offset + chunk])
                sent += len(pcm[offset:offset + chunk])
                seconds = sent / (rate * channels * 2)
                print(f"\rsent {seconds:6.2f} s", end="", file=sys.stderr, flush=True)
                # Stay a little ahead of real time: gapless without queueing the whole file.
                ahead = seconds - (time.monotonic() - start) - LEAD_SECONDS
                if ahead > 0:
                    await asyncio.sleep(ahead)
            await socket.send(json.dumps({"type": "mark", "name": "end"}))
            await listener
        except (KeyboardInterrupt, asyncio.CancelledError):
            await socket.send(json.dumps({"type": "clear"}))
            await asyncio.wait_for(listener, 2)
            raise


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="a 16-bit WAV file, or - for raw s16le on stdin")
    parser.add_argument("--rate", type=int, default=24000, help="rate of raw stdin audio")
    parser.add_argument("--channels", type=int, default=1, help="channels of raw stdin audio")
    parser.add_argument("--stream", default="default")
    parser.add_argument("--url", default=gateway.DEFAULT_URL, help="the server: http(s):// or ws(s)://")
    parser.add_argument("--token", default=None)
    gateway.run("play.py", play(parser.parse_args()))


if __name__ == "__main__":
    main()
