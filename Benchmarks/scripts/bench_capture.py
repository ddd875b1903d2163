#!/usr/bin/env python3
"""Load generator for audiogate's /v1/capture WebSocket.

Opens N clients (encoding=json), receives for a number of seconds and prints a JSON summary:
chunks and frames per client, seq gaps, overruns, and the delay from each chunk's last captured
sample (timestamp_ms + chunk duration, on the server's CLOCK_MONOTONIC) to its arrival here
(time.monotonic(), also CLOCK_MONOTONIC on Linux), plus hypervisor steal over the run.

    .venv/bin/python Benchmarks/scripts/bench_capture.py --url ws://127.0.0.1:8750/v1/capture --clients 100 --seconds 30

With --processes K the clients are spread over K processes, so one Python event loop parsing
thousands of messages a second does not add its own queueing to the measured delay.
"""
import argparse
import asyncio
import json
import multiprocessing
import pathlib
import statistics
import sys
import time

import websockets

# The /proc/stat reader is the end-to-end checks' one.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "Tests/EndToEnd"))
from e2e import cpu_sample, steal_percent  # noqa: E402


async def client(url, seconds, start_barrier, results, index):
    delays, gaps, overruns, chunks, frames = [], 0, 0, 0, 0
    expected_seq = 0
    async with websockets.connect(url, max_size=1 << 22, compression=None) as ws:
        start = json.loads(await ws.recv())
        assert start["type"] == "start", start
        rate, chunk_ms = start["rate"], start["chunk_ms"]
        bytes_per_frame = start["channels"] * (2 if start["format"] == "s16le" else 4)
        await start_barrier.wait()
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                message = await asyncio.wait_for(ws.recv(), timeout=remaining)
            except asyncio.TimeoutError:
                break
            now_ms = time.monotonic() * 1000
            event = json.loads(message)
            kind = event["type"]
            if kind == "audio":
                if event["seq"] != expected_seq:
                    gaps += 1
                expected_seq = event["seq"] + 1
                chunks += 1
                # base64 length -> bytes without decoding (4 chars per 3 bytes, minus padding)
                data = event["data"]
                nbytes = len(data) * 3 // 4 - data[-2:].count("=")
                frames += nbytes // bytes_per_frame
                delays.append(now_ms - (event["timestamp_ms"] + chunk_ms))
            elif kind == "overrun":
                overruns += 1
    results[index] = dict(chunks=chunks, frames=frames, gaps=gaps, overruns=overruns, delays=delays,
                          rate=rate, chunk_ms=chunk_ms)


def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


async def run_clients(url, seconds, count):
    barrier = asyncio.Barrier(count)
    results = [None] * count
    await asyncio.gather(*(client(url, seconds, barrier, results, i) for i in range(count)))
    return results


def worker(url, seconds, count, start_at, queue):
    # Every process starts receiving at the same wall-clock moment.
    time.sleep(max(0.0, start_at - time.time()))
    queue.put(asyncio.run(run_clients(url, seconds, count)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="ws://127.0.0.1:8750/v1/capture?rate=16000&chunk_ms=20&encoding=json")
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--status-url", default=None, help="the server's /v1/status, to report its own send delay")
    args = parser.parse_args()
    url = args.url
    if "encoding=" not in url:
        url += ("&" if "?" in url else "?") + "encoding=json"

    processes = max(1, min(args.processes, args.clients))
    shares = [args.clients // processes + (1 if i < args.clients % processes else 0) for i in range(processes)]
    queue = multiprocessing.Queue()
    start_at = time.time() + 1.0
    steal_before = cpu_sample()
    started = time.monotonic()
    workers = [multiprocessing.Process(target=worker, args=(url, args.seconds, n, start_at, queue)) for n in shares]
    for w in workers:
        w.start()
    results = [r for _ in workers for r in queue.get()]
    for w in workers:
        w.join()
    elapsed = time.monotonic() - started
    steal = steal_percent(steal_before, cpu_sample())

    server_send_delay = None
    if args.status_url:
        import urllib.request
        with urllib.request.urlopen(args.status_url) as response:
            server_send_delay = json.load(response)["capture"].get("send_delay")

    delays = [d for r in results for d in r["delays"]]
    expected_chunks = args.seconds * 1000 / results[0]["chunk_ms"]
    summary = dict(
        clients=args.clients,
        processes=processes,
        seconds=args.seconds,
        url=url,
        elapsed_s=round(elapsed, 2),
        chunks_min=min(r["chunks"] for r in results),
        chunks_max=max(r["chunks"] for r in results),
        chunks_expected=round(expected_chunks),
        frames_per_second_median=statistics.median(r["frames"] / args.seconds for r in results),
        seq_gaps=sum(r["gaps"] for r in results),
        overruns=sum(r["overruns"] for r in results),
        clients_with_drops=sum(1 for r in results if r["overruns"] or r["gaps"]),
        delay_ms_p50=round(percentile(delays, 50), 2) if delays else None,
        delay_ms_p99=round(percentile(delays, 99), 2) if delays else None,
        delay_ms_max=round(max(delays), 2) if delays else None,
        server_send_delay=server_send_delay,
        steal_percent=round(steal, 2),
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
