#!/usr/bin/env python3
"""A minimal voice-agent loop over audiogate: listen, detect speech, play it back, and stop
talking the moment the user speaks again (barge-in).

    python3 echo_agent.py [--url http://127.0.0.1:8750] [--turns 0] [--level-detection]

Capture: 16 kHz mono s16le from WS /v1/capture with `aec=true&vad=true`: the server cancels the
echo of what it plays and sends `vad` events on the cancelled audio, so the agent's own voice never
counts as the user and a barge-in works at any level. Playback: the utterance is sent back at 16 kHz
on WS /v1/playback (`rate=16000`); the server resamples it for the card.

`--level-detection` is the fallback without processing: speech by level (`--threshold-db`); the agent
then hears itself, so while it talks a barge-in needs the room to be clearly louder than its own
playback (`--barge-in-margin-db`), and the echo tail after it stops is ignored.
Needs `websockets` and the standard library.
"""
import argparse
import array
import asyncio
import json
import math
import sys

import websockets

import gateway

RATE = 16000
CHUNK_MS = 20
SILENCE_MS = 500
ECHO_TAIL_MS = 300


def level_db(chunk):
    samples = array.array("h", chunk)
    if not samples:
        return -120.0
    power = sum(s * s for s in samples) / len(samples)
    return 10 * math.log10(power / (32768.0 ** 2)) if power > 0 else -120.0


PREROLL_MS = 300


async def vad_agent(args):
    """Barge-in and turn-taking from the server's voice activity events on echo-cancelled audio."""
    headers = gateway.headers(args.token)
    capture_url = gateway.websocket_url(args.url, "/v1/capture", rate=RATE, channels=1, format="s16le",
                                        chunk_ms=CHUNK_MS, aec="true", vad="true")
    playback_url = gateway.websocket_url(args.url, "/v1/playback", rate=RATE, channels=1, format="s16le",
                                         stream="agent")
    async with websockets.connect(capture_url, additional_headers=headers) as mic, \
            websockets.connect(playback_url, additional_headers=headers) as speaker:
        print(f"agent: {await mic.recv()}", file=sys.stderr)  # start, with the processing in effect
        speaking = False          # the agent is talking
        listening = False         # the user is talking (between vad speech and silence)
        preroll = bytearray()     # the last moments before speech was detected
        utterance = bytearray()
        turns = 0

        async def speaker_events():
            nonlocal speaking
            try:
                async for message in speaker:
                    event = json.loads(message)
                    if event["type"] == "mark":
                        speaking = False
                    print(f"agent: {event}", file=sys.stderr)
            except websockets.ConnectionClosed:
                speaking = False

        events = asyncio.create_task(speaker_events())
        async for message in mic:
            if isinstance(message, bytes):
                if listening:
                    utterance += message
                else:
                    preroll += message
                    del preroll[:max(0, len(preroll) - RATE * 2 * PREROLL_MS // 1000)]
                continue
            event = json.loads(message)
            if event.get("type") != "vad":
                continue
            if event["state"] == "speech":
                if speaking:
                    # The user talks over the agent: its own echo was cancelled, so this is them.
                    await speaker.send(json.dumps({"type": "clear"}))
                    speaking = False
                    print("agent: barge-in", file=sys.stderr)
                listening = True
                utterance = bytearray(preroll)
            elif listening:
                listening = False
                seconds = len(utterance) / (RATE * 2)
                print(f"agent: heard {seconds:.2f} s, echoing it", file=sys.stderr)
                await speaker.send(bytes(utterance))
                await speaker.send(json.dumps({"type": "mark", "name": f"turn-{turns}"}))
                speaking = True
                turns += 1
                if args.turns and turns >= args.turns:
                    break
        await mic.close()
        while speaking:
            await asyncio.sleep(0.05)
        events.cancel()


async def agent(args):
    headers = gateway.headers(args.token)
    capture_url = gateway.websocket_url(args.url, "/v1/capture", rate=RATE, channels=1, format="s16le",
                                        chunk_ms=CHUNK_MS)
    playback_url = gateway.websocket_url(args.url, "/v1/playback", rate=RATE, channels=1, format="s16le",
                                         stream="agent")
    async with websockets.connect(capture_url, additional_headers=headers) as mic, \
            websockets.connect(playback_url, additional_headers=headers) as speaker:
        await mic.recv()  # start
        speaking = False          # the agent is talking
        own_level = -120.0        # level of what the agent is playing
        deaf_ms = 0               # echo tail still to ignore
        utterance = bytearray()   # what the user is saying
        quiet_ms = 0
        turns = 0

        async def speaker_events():
            nonlocal speaking
            nonlocal deaf_ms
            try:
                async for message in speaker:
                    event = json.loads(message)
                    if event["type"] == "mark":
                        # Finished talking: ignore the echo still on its way back. (After a
                        # barge-in's `cleared` the user is talking: keep listening to them.)
                        speaking = False
                        deaf_ms = ECHO_TAIL_MS
                    print(f"agent: {event}", file=sys.stderr)
            except websockets.ConnectionClosed:
                speaking = False

        events = asyncio.create_task(speaker_events())
        async for message in mic:
            if not isinstance(message, bytes):
                continue
            level = level_db(message)
            if speaking:
                if level > max(args.threshold_db, own_level + args.barge_in_margin_db):
                    # The user talks over the agent: stop at once, and listen to them.
                    await speaker.send(json.dumps({"type": "clear"}))
                    speaking = False
                    utterance += message
                    print(f"agent: barge-in at {level:.1f} dBFS", file=sys.stderr)
                continue
            if deaf_ms > 0:
                deaf_ms -= CHUNK_MS
                continue
            loud = level > args.threshold_db
            if loud:
                utterance += message
                quiet_ms = 0
            elif utterance:
                utterance += message
                quiet_ms += CHUNK_MS
                if quiet_ms >= SILENCE_MS:
                    seconds = len(utterance) / (RATE * 2)
                    print(f"agent: heard {seconds:.2f} s, echoing it", file=sys.stderr)
                    own_level = level_db(bytes(utterance))
                    await speaker.send(bytes(utterance))
                    await speaker.send(json.dumps({"type": "mark", "name": f"turn-{turns}"}))
                    speaking = True
                    utterance.clear()
                    quiet_ms = 0
                    turns += 1
                    if args.turns and turns >= args.turns:
                        break
        # Stop listening first: a microphone socket nobody reads fills up, and closing it then
        # waits for the close timeout. Then let the last answer finish.
        await mic.close()
        while speaking:
            await asyncio.sleep(0.05)
        events.cancel()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=gateway.DEFAULT_URL, help="the server: http(s):// or ws(s)://")
    parser.add_argument("--token", default=None)
    parser.add_argument("--threshold-db", type=float, default=-35)
    parser.add_argument("--barge-in-margin-db", type=float, default=6,
                        help="while talking, how much louder than its own voice the room must get")
    parser.add_argument("--turns", type=int, default=0, help="stop after this many turns (0: run forever)")
    parser.add_argument("--level-detection", action="store_true",
                        help="detect speech by level instead of the server's echo-cancelled voice activity")
    args = parser.parse_args()
    gateway.run("echo_agent.py", agent(args) if args.level_detection else vad_agent(args))


if __name__ == "__main__":
    main()
