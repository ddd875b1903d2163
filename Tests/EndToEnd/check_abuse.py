#!/usr/bin/env python3
"""Hostile clients against audiogate, while one well-behaved capture client listens.

    .venv/bin/python Tests/EndToEnd/check_abuse.py [--binary .build/debug/audiogate] [--device pulse]
    .venv/bin/python Tests/EndToEnd/check_abuse.py --port 8750 [--connections 500] [--seconds 15]

Starts the server on the test card (AUDIOGATE_TEST_DEVICE, default pulse), or with --port uses one
already running there. The abusers: WebSockets that send garbage text, binary junk and half frames,
messages of 10 MB, playback sockets that never read, raw TCP that sends half an HTTP request and
stalls, and plain HTTP garbage. The well-behaved client (16 kHz, 20 ms chunks, encoding=json) must
receive every chunk: no seq gap, no overrun, and at least 98% of real time's chunk count in the
window. Prints a JSON summary; exits 1 if the good client was disturbed or the server stopped
answering.
"""
import argparse
import asyncio
import json
import os
import random
import resource
import sys
import time
import urllib.request

import websockets

import e2e
from e2e import check


async def good_client(port, seconds, result):
    url = f"ws://127.0.0.1:{port}/v1/capture?rate=16000&chunk_ms=20&encoding=json"
    async with websockets.connect(url, max_size=1 << 22) as ws:
        await ws.recv()
        expected_seq, gaps, overruns, chunks, first = 0, 0, 0, 0, None
        deadline = None
        while True:
            message = json.loads(await ws.recv())
            now = time.monotonic()
            if message["type"] == "overrun":
                overruns += 1
            if message["type"] != "audio":
                continue
            if first is None:
                first, deadline = now, now + seconds
            if message["seq"] != expected_seq:
                gaps += 1
            expected_seq = message["seq"] + 1
            chunks += 1
            if now >= deadline:
                break
        result.update(chunks=chunks, gaps=gaps, overruns=overruns, seconds=now - first)


async def garbage_websocket(port, rng, stats):
    kind = rng.choice(["text", "binary_json", "huge", "stall_playback", "bad_query"])
    try:
        if kind == "bad_query":
            async with websockets.connect(f"ws://127.0.0.1:{port}/v1/capture?rate=12345"):
                pass
            return
        url = f"ws://127.0.0.1:{port}/v1/playback?stream=abuse{rng.randrange(4)}"
        async with websockets.connect(url, max_size=1 << 24, open_timeout=20) as ws:
            if kind == "text":
                for _ in range(20):
                    await ws.send(rng.choice(["{", "null", "[]", '{"type":"nope"}', '{"type":"audio","data":"***"}',
                                              '{"type":"mark","name":' + '"x' * 400 + '"}', "\x00" * 100]))
            elif kind == "binary_json":
                await ws.send(os.urandom(rng.randrange(1, 5000)))
            elif kind == "huge":
                await ws.send(b"\x00" * (10 * 1024 * 1024))
            elif kind == "stall_playback":
                await ws.send(b"\x00\x01" * 4800)
            await asyncio.sleep(rng.uniform(0.5, 3))
        stats[kind] = stats.get(kind, 0) + 1
    except Exception as error:  # the server closing on abuse is the expected outcome
        stats[kind + "_closed"] = stats.get(kind + "_closed", 0) + 1
        stats.setdefault("close_reasons", set()).add(type(error).__name__)


async def raw_tcp(port, rng, stats):
    kind = rng.choice(["half_request", "half_frame", "http_garbage"])
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        if kind == "half_request":
            writer.write(b"GET /v1/status HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        elif kind == "http_garbage":
            writer.write(os.urandom(512) + b"\r\n\r\n")
        else:
            writer.write(b"GET /v1/playback HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            writer.write(b"\x82\xfe\x10\x00\x01\x02")  # a masked-less binary frame header promising 4096 bytes
        await writer.drain()
        await asyncio.sleep(rng.uniform(1, 4))
        writer.close()
        stats[kind] = stats.get(kind, 0) + 1
    except Exception:
        stats[kind + "_closed"] = stats.get(kind + "_closed", 0) + 1


async def abusers(port, connections, seconds, stats):
    rng = random.Random(7)
    end = time.monotonic() + seconds
    tasks = set()
    while time.monotonic() < end:
        while len(tasks) < connections:
            job = garbage_websocket if rng.random() < 0.6 else raw_tcp
            tasks.add(asyncio.create_task(job(port, rng, stats)))
        done, tasks = await asyncio.wait(tasks, timeout=0.2, return_when=asyncio.FIRST_COMPLETED)
        stats["finished"] = stats.get("finished", 0) + len(done)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def run(port, connections, seconds):
    good, stats = {}, {}
    before = e2e.cpu_sample()
    await asyncio.gather(good_client(port, seconds, good), abusers(port, connections, seconds + 2, stats))
    after = e2e.cpu_sample()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            healthy = response.status == 200
    except OSError:
        healthy = False
    expected = good["seconds"] * 1000 / 20
    stats.pop("close_reasons", None)
    summary = dict(
        connections=connections, seconds=seconds, abusive_connections_finished=stats.get("finished", 0),
        abuse=stats, good_chunks=good["chunks"], good_chunks_expected=round(expected), good_seq_gaps=good["gaps"],
        good_overruns=good["overruns"], server_healthy_after=healthy,
        steal_percent=round(e2e.steal_percent(before, after), 2))
    print("check-abuse: " + json.dumps(summary), flush=True)
    # Every chunk arrived (gapless seq, no overrun) and the client kept up with real time.
    check(healthy, "the server answers /healthz after the abuse")
    check(good["gaps"] == 0, f"the well-behaved client saw no seq gap ({good['gaps']})")
    check(good["overruns"] == 0, f"the well-behaved client saw no overrun ({good['overruns']})")
    check(good["chunks"] >= 0.98 * expected - 2,
          f"the well-behaved client kept up with real time ({good['chunks']} of {round(expected)} chunks)")


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    e2e.add_binary_argument(parser)
    parser.add_argument("--device", default=os.environ.get("AUDIOGATE_TEST_DEVICE", "pulse"))
    parser.add_argument("--port", type=int, help="a server already running on this port (default: start one)")
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=15)
    args = parser.parse_args()
    # For this process and the server it starts: 500 connections need more than 1024 descriptors.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))

    server = None
    if args.port is None:
        server = e2e.Server(args.binary, args.device)
        if not server.start(capture=True):
            check(False, "check-abuse: the server did not start")
            e2e.finish()
    try:
        await run(args.port or server.port, args.connections, args.seconds)
    except Exception as error:  # a client that could not run at all means the server did not serve it
        check(False, f"check-abuse: the run ended early: {type(error).__name__}: {error}")
    finally:
        if server:
            server.stop()
    if e2e.failures():
        print("check-abuse: the well-behaved client was disturbed", file=sys.stderr, flush=True)
    else:
        print(f"check-abuse: a well-behaved client got every chunk while {args.connections} hostile connections ran")
    e2e.finish()


if __name__ == "__main__":
    asyncio.run(main())
