#!/usr/bin/env python3
"""Playback benchmark for audiogate: concurrent WebSocket streams, POST latency, clear-to-silence.

Prints one JSON object. Needs a running server (see Benchmarks/scripts/bench-playback.sh) and `websockets`.

  python3 Benchmarks/scripts/bench_playback.py --url http://127.0.0.1:8750 --streams 8 --seconds 30 --server-pid PID
"""
import argparse
import asyncio
import json
import math
import os
import pathlib
import random
import statistics
import struct
import sys
import time
import urllib.request

import websockets

# The /proc/stat reader is the end-to-end checks' one.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "Tests/EndToEnd"))
import e2e  # noqa: E402

read_steal = e2e.cpu_sample


def steal_percent(before, after):
    return round(e2e.steal_percent(before, after), 2)


def process_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    fields = text[text.rindex(")") + 2 :].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def http_json(url, method="GET", body=None, headers=None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def tone_bytes(frequency, rate, seconds, amplitude):
    count = int(rate * seconds)
    step = 2 * math.pi * frequency / rate
    return struct.pack(f"<{count}h", *(int(amplitude * 32767 * math.sin(step * n)) for n in range(count)))


async def stream_client(ws_url, name, frequency, rate, seconds, chunk_ms, jitter_ms, seed):
    """Sends a tone in chunk_ms chunks on a real-time schedule, each send up to jitter_ms late."""
    rng = random.Random(seed)
    pcm = tone_bytes(frequency, rate, seconds, 0.08)
    chunk = rate * chunk_ms // 1000 * 2
    async with websockets.connect(f"{ws_url}?stream={name}&rate={rate}", max_size=None) as ws:
        start = time.monotonic()
        for index, offset in enumerate(range(0, len(pcm), chunk)):
            due = start + index * chunk_ms / 1000 + rng.uniform(0, jitter_ms) / 1000
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await ws.send(pcm[offset : offset + chunk])
        await ws.send(json.dumps({"type": "mark", "name": "end"}))
        while True:
            message = json.loads(await asyncio.wait_for(ws.recv(), timeout=30))
            if message.get("type") == "mark":
                return


async def sample_cpu(pid, stop, samples):
    previous = process_cpu_seconds(pid)
    previous_time = time.monotonic()
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), timeout=1.0)
        except asyncio.TimeoutError:
            pass
        now = time.monotonic()
        current = process_cpu_seconds(pid)
        samples.append(100.0 * (current - previous) / (now - previous_time))
        previous, previous_time = current, now


async def concurrent_streams(args, ws_url):
    status_before = http_json(args.url + "/v1/status")["playback"]
    steal_before = read_steal()
    stop = asyncio.Event()
    cpu = []
    sampler = asyncio.create_task(sample_cpu(args.server_pid, stop, cpu)) if args.server_pid else None
    await asyncio.gather(
        *(
            stream_client(ws_url, f"bench{i}", 300 + 40 * i, args.rate, args.seconds, args.chunk_ms, args.jitter_ms, i)
            for i in range(args.streams)
        )
    )
    stop.set()
    if sampler:
        await sampler
    status_after = http_json(args.url + "/v1/status")["playback"]
    # The first and last seconds hold start-up and the tail; the steady state is in between.
    steady = cpu[1:-1] if len(cpu) > 3 else cpu
    return {
        "streams": args.streams,
        "seconds": args.seconds,
        "chunk_ms": args.chunk_ms,
        "jitter_ms": args.jitter_ms,
        "cpu_percent_median": round(statistics.median(steady), 2) if steady else None,
        "cpu_percent_max": round(max(steady), 2) if steady else None,
        "underruns": status_after["underruns"] - status_before["underruns"],
        "device_xruns": status_after["xruns"] - status_before["xruns"],
        "steal_percent": steal_percent(steal_before, read_steal()),
    }


def post_latency(args):
    steal_before = read_steal()
    body = tone_bytes(700, args.rate, 0.2, 0.1)
    rng = random.Random(1)
    for _ in range(args.posts):
        http_json(
            f"{args.url}/v1/playback?stream=latency&rate={args.rate}&wait=true",
            method="POST",
            body=body,
            headers={"Content-Type": "application/octet-stream"},
        )
        # Start the next upload at a random phase of the device period.
        time.sleep(rng.uniform(0.01, 0.05))
    status = http_json(args.url + "/v1/status")["playback"]
    negotiated = http_json(args.url + "/v1/info")["playback"]
    rate = negotiated.get("rate") or 48000
    return {
        "posts": args.posts,
        "latency": status.get("latency"),
        "buffer_ms": round(1000 * (negotiated.get("buffer_frames") or 0) / rate, 2),
        "period_ms": round(1000 * (negotiated.get("period_frames") or 0) / rate, 2),
        "steal_percent": steal_percent(steal_before, read_steal()),
    }


async def clear_to_silence(args, ws_url):
    steal_before = read_steal()
    pcm = tone_bytes(500, args.rate, 2.0, 0.1)
    rng = random.Random(2)
    async with websockets.connect(f"{ws_url}?stream=clear&rate={args.rate}", max_size=None) as ws:
        for _ in range(args.clears):
            await ws.send(pcm)
            await asyncio.sleep(0.3 + rng.uniform(0, 0.05))
            await ws.send(json.dumps({"type": "clear"}))
            while json.loads(await asyncio.wait_for(ws.recv(), timeout=10)).get("type") != "cleared":
                pass
            await asyncio.sleep(0.1)
    status = http_json(args.url + "/v1/status")["playback"]
    return {
        "clears": args.clears,
        "clear_to_silence": status.get("clear_to_silence"),
        "steal_percent": steal_percent(steal_before, read_steal()),
    }


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8750")
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rate", type=int, default=24000)
    parser.add_argument("--chunk-ms", type=int, default=20)
    parser.add_argument("--jitter-ms", type=float, default=15)
    parser.add_argument("--posts", type=int, default=100)
    parser.add_argument("--clears", type=int, default=30)
    parser.add_argument("--server-pid", type=int, default=0, help="server process for CPU sampling")
    args = parser.parse_args()
    ws_url = args.url.replace("http://", "ws://", 1) + "/v1/playback"
    result = {"url": args.url}
    result["concurrent"] = await concurrent_streams(args, ws_url)
    result["post_latency"] = post_latency(args)
    result["clear"] = await clear_to_silence(args, ws_url)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
