#!/usr/bin/env python3
"""A minimal voice-agent loop over audiogate: listen, detect speech, play it back, and stop
talking the moment the user speaks again (barge-in).

    python3 echo_agent.py [--url http://127.0.0.1:8750] [--turns 0] [--level-detection]

Capture: 16 kHz mono s16le with `aec=True, vad=True`: the server cancels the echo of what it plays
and sends `vad` events on the cancelled audio, so the agent's own voice never counts as the user
and a barge-in works at any level. Playback: the utterance is sent back at 16 kHz on stream
`agent`; the server resamples it for the card. A mark after each answer says when it was heard.

`--level-detection` is the fallback without processing: speech by level (`--threshold-db`); the agent
then hears itself, so while it talks a barge-in needs the room to be clearly louder than its own
playback (`--barge-in-margin-db`), and the echo tail after it stops is ignored.
Needs the `audiogate` package (pip install ./clients/python) or a checkout of the repository.
"""
import argparse
import array
import math
import sys

import gateway

audiogate = gateway.audiogate

RATE = 16000
CHUNK_MS = 20
SILENCE_MS = 500
ECHO_TAIL_MS = 300
PREROLL_MS = 300


def level_db(chunk):
    samples = array.array("h", chunk)
    if not samples:
        return -120.0
    power = sum(s * s for s in samples) / len(samples)
    return 10 * math.log10(power / (32768.0 ** 2)) if power > 0 else -120.0


def show(event):
    print(f"agent: {gateway.message(event)}", file=sys.stderr)


async def vad_agent(args):
    """Barge-in and turn-taking from the server's voice activity events on echo-cancelled audio."""
    client = gateway.client(args)
    answer = None             # the mark after the agent's last answer: pending while it talks
    listening = False         # the user is talking (between vad speech and silence)
    preroll = bytearray()     # the last moments before speech was detected
    utterance = bytearray()
    turns = 0
    async with client.playback(rate=RATE, stream="agent", on_event=show) as speaker:
        async with client.capture(rate=RATE, chunk_ms=CHUNK_MS, aec=True, vad=True) as mic:
            show(mic.start)  # the processing in effect
            async for item in mic:
                if isinstance(item, audiogate.AudioChunk):
                    if listening:
                        utterance += item.data
                    else:
                        preroll += item.data
                        del preroll[:max(0, len(preroll) - RATE * 2 * PREROLL_MS // 1000)]
                    continue
                if not isinstance(item, audiogate.VadEvent):
                    continue
                if item.state == "speech":
                    if answer is not None and not answer.done():
                        # The user talks over the agent: its own echo was cancelled, so this is them.
                        await speaker.clear()
                        print("agent: barge-in", file=sys.stderr)
                    listening = True
                    utterance = bytearray(preroll)
                elif listening:
                    listening = False
                    print(f"agent: heard {len(utterance) / (RATE * 2):.2f} s, echoing it", file=sys.stderr)
                    await speaker.write(bytes(utterance))
                    answer = speaker.mark(f"turn-{turns}")
                    turns += 1
                    if args.turns and turns >= args.turns:
                        break
        # The microphone is closed first (a socket nobody reads fills up); then the last answer ends.
        if answer is not None:
            await answer


async def agent(args):
    client = gateway.client(args)
    answer = None             # the mark after the agent's last answer: pending while it talks
    own_level = -120.0        # level of what the agent is playing
    deaf_ms = 0               # echo tail still to ignore
    utterance = bytearray()   # what the user is saying
    quiet_ms = 0
    turns = 0

    def on_event(event):
        nonlocal deaf_ms
        if isinstance(event, audiogate.Mark):
            # Finished talking: ignore the echo still on its way back. (After a barge-in's
            # `cleared` the user is talking: keep listening to them.)
            deaf_ms = ECHO_TAIL_MS
        show(event)

    async with client.playback(rate=RATE, stream="agent", on_event=on_event) as speaker:
        async with client.capture(rate=RATE, chunk_ms=CHUNK_MS) as mic:
            async for chunk in mic.chunks():
                level = level_db(chunk.data)
                if answer is not None and not answer.done():
                    if level > max(args.threshold_db, own_level + args.barge_in_margin_db):
                        # The user talks over the agent: stop at once, and listen to them.
                        await speaker.clear()
                        utterance += chunk.data
                        print(f"agent: barge-in at {level:.1f} dBFS", file=sys.stderr)
                    continue
                if deaf_ms > 0:
                    deaf_ms -= CHUNK_MS
                    continue
                if level > args.threshold_db:
                    utterance += chunk.data
                    quiet_ms = 0
                elif utterance:
                    utterance += chunk.data
                    quiet_ms += CHUNK_MS
                    if quiet_ms >= SILENCE_MS:
                        print(f"agent: heard {len(utterance) / (RATE * 2):.2f} s, echoing it", file=sys.stderr)
                        own_level = level_db(bytes(utterance))
                        await speaker.write(bytes(utterance))
                        answer = speaker.mark(f"turn-{turns}")
                        utterance.clear()
                        quiet_ms = 0
                        turns += 1
                        if args.turns and turns >= args.turns:
                            break
        if answer is not None:
            await answer


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
