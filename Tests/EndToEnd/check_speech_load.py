#!/usr/bin/env python3
"""No request freezes capture clients: ten binary capture clients (16 kHz, 20 ms chunks) keep
receiving while three long `/v1/say` texts are synthesized and queued and `GET /v1/voices` is asked
every 100 ms for 10 s. Fails when any client waits more than 60 ms between two chunks.

    .venv/bin/python Tests/EndToEnd/check_speech_load.py [--binary .build/release/audiogate] [--device pulse]
"""
import argparse
import asyncio
import json
import time

import websockets

import e2e
from e2e import check

CLIENTS = 10
SECONDS = 10
GAP_LIMIT_MS = 60


async def client(port, arrivals, stop):
    async with websockets.connect(f"ws://127.0.0.1:{port}/v1/capture?rate=16000&chunk_ms=20") as ws:
        start = json.loads(await ws.recv())
        assert start["type"] == "start", start
        while not stop.is_set():
            message = await ws.recv()
            if isinstance(message, bytes):
                arrivals.append(time.monotonic())


async def attempt(args):
    server = e2e.Server(args.binary, args.device)
    if not server.start(capture=True):
        check(False, "check-speech-load: the server did not start")
        e2e.finish()
    port = server.port
    stop = asyncio.Event()
    arrivals = [[] for _ in range(CLIENTS)]
    statuses = {"say": [], "voices": []}
    try:
        clients = [asyncio.create_task(client(port, arrivals[n], stop)) for n in range(CLIENTS)]
        await asyncio.sleep(1)
        window_start = time.monotonic()
        says = [asyncio.create_task(e2e.http(port, "POST", "/v1/say", json.dumps({"text": e2e.LONG_TEXT}).encode(), timeout=15))
                for _ in range(3)]
        while time.monotonic() - window_start < SECONDS:
            statuses["voices"].append((await e2e.http(port, "GET", "/v1/voices"))[0])
            await asyncio.sleep(0.1)
        window_end = time.monotonic()
        # Answered once synthesized: a server that answers only when the speech is queued never
        # gets there within the check.
        statuses["say"] = [status for status, _, _ in await asyncio.gather(*says)]
        stop.set()
        await asyncio.wait(clients, timeout=2)
        for task in clients:
            task.cancel()
    finally:
        server.stop()
    gaps = []
    for times in arrivals:
        inside = [t for t in times if window_start <= t <= window_end]
        gaps.append(max((b - a for a, b in zip(inside, inside[1:])), default=float("inf")) * 1000)
    return dict(gaps_ms=[round(g, 1) for g in gaps], statuses=statuses,
                chunks=[len([t for t in times if window_start <= t <= window_end]) for times in arrivals])


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    e2e.add_binary_argument(parser)
    parser.add_argument("--device", default="pulse")
    args = parser.parse_args()
    for run in e2e.attempts():
        mark = e2e.mark()
        result = await attempt(args)
        print("check-speech-load: " + json.dumps(dict(
            largest_gap_ms=max(result["gaps_ms"]), gaps_ms=result["gaps_ms"], chunks=result["chunks"],
            voices_requests=len(result["statuses"]["voices"]), steal_percent=round(run.steal, 2))), flush=True)
        check(all(status == 200 for status in result["statuses"]["say"]),
              f"three long /v1/say answer 200 ({result['statuses']['say']})")
        check(result["statuses"]["voices"] and all(status == 200 for status in result["statuses"]["voices"]),
              f"GET /v1/voices every 100 ms answers 200 ({len(result['statuses']['voices'])} requests)")
        check(min(result["chunks"]) >= SECONDS * 1000 / 20 * 0.9,
              f"every capture client received its chunks over {SECONDS} s (fewest {min(result['chunks'])})")
        check(max(result["gaps_ms"]) <= GAP_LIMIT_MS,
              f"no capture client waited more than {GAP_LIMIT_MS} ms between chunks (largest {max(result['gaps_ms'])} ms)")
        if not e2e.failures_since(mark) or not run.retry():
            break
        e2e.rewind(mark)
    e2e.finish()


if __name__ == "__main__":
    asyncio.run(main())
