#!/usr/bin/env python3
"""Play a WAV file (or raw s16le from stdin) through audiogate's WebSocket playback.

    python3 play.py speech.wav [--url ws://127.0.0.1:8750] [--stream default]
    sox in.mp3 -t raw -r 24000 -c 1 -b 16 -e signed - | python3 play.py - --rate 24000

Writes the audio (the server's flow control paces a long file), puts a mark after it and waits
until the server says it was heard. Ctrl-C sends `clear` (barge-in) and prints how much was heard.
Needs the `audiogate` package (pip install ./clients/python) or a checkout of the repository.
"""
import argparse
import asyncio
import sys
import wave

import gateway

CHUNK_MS = 40


def read_input(path, rate, channels):
    if path == "-":
        return sys.stdin.buffer.read(), rate, channels
    with wave.open(path, "rb") as source:
        if source.getsampwidth() != 2:
            sys.exit("play.py sends 16-bit WAV files; convert others with sox, or POST them to /v1/playback")
        return source.readframes(source.getnframes()), source.getframerate(), source.getnchannels()


def show(event):
    print(f"\n{gateway.message(event)}", file=sys.stderr)


async def play(args):
    pcm, rate, channels = read_input(args.input, args.rate, args.channels)
    chunk = rate * channels * 2 * CHUNK_MS // 1000
    client = gateway.client(args)
    async with client.playback(rate=rate, channels=channels, format="s16le", stream=args.stream,
                               on_event=show) as playback:
        try:
            for offset in range(0, len(pcm), chunk):
                await playback.write(pcm[offset:offset + chunk])
                print(f"\rsent {playback.written_ms / 1000:6.2f} s", end="", file=sys.stderr, flush=True)
            await playback.mark("end")
        except (KeyboardInterrupt, asyncio.CancelledError):
            await asyncio.wait_for(playback.clear(), 2)
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
