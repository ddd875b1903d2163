#!/usr/bin/env python3
"""Connection churn soak: the server's memory must not grow with connections or requests.

For each kind (capture WebSocket, playback WebSocket bare and with audio + mark + clear, POST of
100 ms of silence, GET /v1/status as a control) it reads the server's RSS, runs thousands of
connections, reads RSS again and fails when a kind grew by more than the threshold per connection.
Expects a release build; builds nothing.

Every WebSocket leaves a cancelled auto-ping sleep behind that holds a few hundred bytes until its
timer fires (up to 30 s after the close). So all kinds first run a warm-up as large as the measured
run, the check waits for those timers, and the measured runs then reuse that memory: what still
grows is kept for good.

    .venv/bin/python Tests/EndToEnd/check_churn.py [--binary .build/release/audiogate] [--count 5000]
"""
import argparse
import asyncio
import json
import os
import pathlib
import shutil
import tempfile
import time

import websockets

import e2e

HOST = "127.0.0.1"
DESCRIPTIONS = {
    "capture_ws": "capture WebSocket: connect, `start`, close",
    "playback_ws": "playback WebSocket: connect, close",
    "playback_ws_audio": "playback WebSocket: 100 ms of audio, a mark, a clear",
    "post_playback": "`POST /v1/playback` of 100 ms, then `DELETE`",
    "get_status": "`GET /v1/status` (control)",
}
RESULTS = []  # (kind, KB per connection, steal %) of the measured runs
KINDS = ["capture_ws", "playback_ws", "playback_ws_audio", "post_playback", "get_status"]
WEBSOCKET_KINDS = {"capture_ws", "playback_ws", "playback_ws_audio"}
# 100 ms of 24 kHz mono s16le silence: the playback defaults.
SILENCE = bytes(4800)


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
    elif kind == "get_status":
        status, body = await http(port, "GET", "/v1/status")
        assert status == 200, (status, body)
    else:
        raise ValueError(kind)


async def run(kind, port, count, concurrency):
    next_index = 0

    async def worker(number):
        nonlocal next_index
        while next_index < count:
            next_index += 1
            await asyncio.wait_for(one(kind, port, number), timeout=10)

    await asyncio.gather(*(worker(n) for n in range(concurrency)))


async def settle(port):
    """Waits until no client is left on the server, so RSS is read with every connection gone."""
    for _ in range(100):
        status, body = await http(port, "GET", "/v1/status")
        state = json.loads(body)
        if status == 200 and state["capture"]["subscribers"] == 0 and state["playback"]["streams"] == 0:
            break
        await asyncio.sleep(0.05)
    # Gives the last connections' tasks time to unwind after they left the status.
    await asyncio.sleep(0.3)


async def measure(kind, server, port, args):
    before = rss_kb(server.process.pid)
    steal_before = e2e.cpu_sample()
    started = time.monotonic()
    await run(kind, port, args.count, args.concurrency)
    elapsed = time.monotonic() - started
    await settle(port)
    after = rss_kb(server.process.pid)
    steal = e2e.steal_percent(steal_before, e2e.cpu_sample())
    per = (after - before) / args.count
    print(
        f"{kind}: {per:+.2f} KB per connection ({args.count} connections, RSS {before / 1024:.1f} -> "
        f"{after / 1024:.1f} MB; {elapsed:.1f} s, steal {steal:.1f}%)", flush=True)
    return per, steal


async def quiesce(port, args):
    await settle(port)
    print(f"waiting {args.timer_seconds:.0f} s for the closed sockets' timers to fire", flush=True)
    await asyncio.sleep(args.timer_seconds)


async def main_async(args, server, port):
    warmup = args.warmup if args.warmup is not None else args.count
    for kind in args.kinds:
        # Plain HTTP leaves no timers behind: a short warm-up is enough.
        await run(kind, port, warmup if kind in WEBSOCKET_KINDS else min(warmup, 500), args.concurrency)
    print(f"warm-up: {warmup} connections per kind", flush=True)
    await quiesce(port, args)
    for index, kind in enumerate(args.kinds):
        per, steal = await measure(kind, server, port, args)
        if per > args.threshold and steal > e2e.STEAL_LIMIT:
            print(f"{kind}: over {args.threshold} KB with {steal:.1f}% steal: retrying once", flush=True)
            await quiesce(port, args)
            per, steal = await measure(kind, server, port, args)
        e2e.check(per <= args.threshold, f"{kind}: grows {per:+.2f} KB per connection (at most {args.threshold})")
        RESULTS.append((kind, per, steal))
        # The next kind starts without another kind's pending timers.
        if kind in WEBSOCKET_KINDS and index + 1 < len(args.kinds):
            await quiesce(port, args)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", type=pathlib.Path, default=e2e.ROOT / ".build/release/audiogate",
                        help="a release build of the server (default .build/release/audiogate)")
    parser.add_argument("--device", default=os.environ.get("AUDIOGATE_TEST_DEVICE", "pulse"))
    # RSS moves by a few hundred KB between readings whatever the server does: over 5000 connections
    # that noise stays near 0.1 KB each, well under the threshold a real leak crosses.
    parser.add_argument("--count", type=int, default=5000, help="measured connections per kind")
    parser.add_argument("--warmup", type=int, help="connections per kind before any RSS reading (default: --count)")
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
    steal_start = e2e.cpu_sample()
    server = e2e.Server(args.binary, args.device, data_dir=data_dir)
    print(f"check-churn: {args.binary} on {args.device}, port {server.port}", flush=True)
    try:
        if e2e.check(server.start(capture=True, seconds=20), "the server starts and captures"):
            asyncio.run(main_async(args, server, server.port))
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    print(f"steal over the run: {e2e.steal_percent(steal_start, e2e.cpu_sample()):.1f}%")
    if args.markdown:
        lines = ["## Memory under connection churn", "",
                 f"`Tests/EndToEnd/check_churn.py` against the release build on the `{args.device}` card: "
                 f"RSS after a warm-up of as many connections, then after {args.count} more of each kind "
                 f"({args.concurrency} at a time). Fails above {args.threshold} KB per connection.", "",
                 "| kind | growth per connection | steal |", "| --- | --- | --- |"]
        lines += [f"| {DESCRIPTIONS[kind]} | {per:+.2f} KB | {steal:.1f}% |" for kind, per, steal in RESULTS]
        args.markdown.write_text("\n".join(lines) + "\n")
    e2e.finish()


if __name__ == "__main__":
    main()
