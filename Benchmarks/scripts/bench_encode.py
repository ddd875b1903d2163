#!/usr/bin/env python3
"""Measures what encoding costs the server; prints a Markdown section.

1. CPU per encoded stream: a recording of the room's tone (16 kHz mono) is exported as Ogg/Opus
   24 kb/s, FLAC, MP3 64 kb/s and M4A (AAC 64 kb/s). An export encodes as fast as it can, so the
   server's CPU time over the request (/proc/PID/stat utime+stime), less the idle rate over the same
   wall time, is the encoder's cost for that much audio: *x realtime/core* = seconds of audio per
   second of CPU, and its inverse the share of a core one live stream of that setting costs.
   Median of the runs.
2. Sharing: 1 and then 100 HTTP clients of one live setting (`container=ogg`, Opus 16 kHz mono
   24 kb/s) for a while each; the server's CPU % over the run against the idle server's, and the
   number of encoders the server runs (`/v1/status` capture.encoders). 100 clients cost one
   encoder plus the sends.
Steal from /proc/stat over the same intervals stands beside each figure.
"""
import argparse
import asyncio
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "Tests/EndToEnd"))
from e2e import cpu_sample, steal_percent  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
EXPORTS = [
    ("Ogg/Opus 24 kb/s", "ogg"),
    ("FLAC", "flac"),
    ("MP3 64 kb/s", "mp3"),
    ("M4A (AAC 64 kb/s)", "m4a"),
]


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def request(url, method="GET", data=None, headers=None):
    with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers or {}),
                                timeout=300) as response:
        return response.read()


def idle_rate(pid, seconds=5):
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / seconds


def record(base, seconds, tone):
    player = subprocess.Popen(["paplay", str(tone)])
    try:
        time.sleep(0.5)
        body = json.dumps({"segment_seconds": 60, "max_seconds": seconds, "name": "bench"}).encode()
        answer = json.loads(request(base + "/v1/recordings", "POST", body, {"Content-Type": "application/json"}))
        recording = answer["id"]
        while json.loads(request(f"{base}/v1/recordings/{recording}"))["state"] == "recording":
            time.sleep(0.5)
        return recording
    finally:
        player.kill()
        player.wait()


def export_costs(base, pid, recording, seconds, runs, idle):
    rows = []
    for label, extension in EXPORTS:
        speeds, steals = [], []
        for _ in range(runs):
            stolen = cpu_sample()
            cpu = cpu_seconds(pid)
            started = time.monotonic()
            data = request(f"{base}/v1/recordings/{recording}/audio.{extension}")
            wall = time.monotonic() - started
            used = max(cpu_seconds(pid) - cpu - idle * wall, 1 / TICK)
            speeds.append(seconds / used)
            steals.append(steal_percent(stolen, cpu_sample()))
            assert len(data) > 1000, f"{extension}: {len(data)} bytes"
        speed = statistics.median(speeds)
        rows.append(f"| {label} | {speed:.0f}x | {100 / speed:.2f}% of a core | {statistics.median(steals):.1f}% |")
    return rows


async def live_clients(port, query, clients, seconds):
    """Opens `clients` HTTP streams, reads them for `seconds`; returns the bytes each received."""
    received = [0] * clients

    async def one(index):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /v1/capture?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        await writer.drain()
        deadline = time.monotonic() + seconds
        try:
            while (remaining := deadline - time.monotonic()) > 0:
                try:
                    chunk = await asyncio.wait_for(reader.read(65536), timeout=remaining)
                except asyncio.TimeoutError:
                    break
                if not chunk:
                    break
                received[index] += len(chunk)
        finally:
            writer.close()

    await asyncio.gather(*(one(i) for i in range(clients)))
    return received


def live_run(base, port, pid, clients, seconds, status):
    query = "container=ogg&rate=16000&bitrate=24k"
    stolen = cpu_sample()
    cpu = cpu_seconds(pid)
    started = time.monotonic()
    loop = asyncio.new_event_loop()
    task = loop.create_task(live_clients(port, query, clients, seconds))
    loop.run_until_complete(asyncio.sleep(seconds / 2))
    encoders = json.loads(request(base + "/v1/status"))["capture"].get("encoders", [])
    received = loop.run_until_complete(task)
    loop.close()
    wall = time.monotonic() - started
    percent = 100 * (cpu_seconds(pid) - cpu) / wall
    status.append((clients, percent, encoders, min(received), steal_percent(stolen, cpu_sample())))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--seconds", type=int, default=60, help="length of the recording exported")
    parser.add_argument("--live-seconds", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    base = f"http://127.0.0.1:{args.port}"
    work = pathlib.Path(tempfile.mkdtemp(prefix="audiogate-bench-encode-"))
    tone = work / "tone.wav"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                    f"sine=frequency=440:sample_rate=48000:duration={args.seconds + 5}", "-af", "volume=0.3", str(tone)],
                   check=True)

    recording = record(base, args.seconds, tone)
    idle = idle_rate(args.pid)
    rows = export_costs(base, args.pid, recording, args.seconds, args.runs, idle)

    player = subprocess.Popen(["paplay", str(tone)])
    try:
        time.sleep(0.5)
        live = []
        for clients in (1, 100):
            live_run(base, args.port, args.pid, clients, args.live_seconds, live)
    finally:
        player.kill()
        player.wait()
    expected = 24000 / 8 * args.live_seconds

    print("## Encoding (CPU per compressed stream, shared encoders)\n")
    print("`Benchmarks/scripts/bench-encode.sh` (release server, test card): a "
          f"{args.seconds} s recording of a tone (16 kHz mono s16le) exported whole as each format, which")
    print("encodes as fast as the server can; the server's CPU time over the request less its idle rate is the")
    print("encoder's cost (plus reading the segment). *x realtime/core* = seconds of audio per second of CPU;")
    print(f"its inverse is what one live stream of that setting costs. Median of {args.runs} runs.\n")
    print("| setting (16 kHz mono) | x realtime/core | CPU per stream | steal |")
    print("|---|---:|---:|---:|")
    for row in rows:
        print(row)
    print(f"\nThe idle server (capture device stopped) used {100 * idle:.1f}% of a core meanwhile.\n")
    print(f"Live `GET /v1/capture?container=ogg&rate=16000&bitrate=24k`, 1 and then 100 clients for "
          f"{args.live_seconds} s each, the room's tone playing:\n")
    print("| clients | server CPU | encoders running | fewest bytes a client got | steal |")
    print("|---:|---:|---:|---:|---:|")
    for clients, percent, encoders, fewest, steal in live:
        count = len(encoders)
        listeners = sum(e.get("clients", 0) for e in encoders)
        print(f"| {clients} | {percent:.1f}% of a core | {count} ({listeners} clients) | {fewest} (~{expected:.0f} at 24 kb/s) | {steal:.1f}% |")
    print("\nOne encoder serves every client of a setting: the second row's extra CPU over the first is the")
    print("99 more sockets' sends (each page written to each socket), not 99 more encoders.")


if __name__ == "__main__":
    main()
