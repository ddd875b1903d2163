#!/usr/bin/env python3
"""Capture latency by the click method: a click played into the test card (the null sink "speaker")
every 507.5 ms, timed where it enters the card (the sink's monitor read by parec in 2 ms blocks), and
again where a capture client has it: one audiogate WebSocket client (16 kHz mono, 20 ms chunks,
encoding=json; arrival of the chunk holding the click) and, beside it, `arecord -D pulse` with its
defaults (arrival of the bytes holding the click). Prints a JSON summary; with --markdown writes the
table, and exits 1 when audiogate's p50 or p99 is over its bound (the bench's gated rows fail so).

    .venv/bin/python Benchmarks/scripts/bench_click.py --binary .build/release/audiogate [--seconds 30]
"""
import argparse
import asyncio
import base64
import json
import pathlib
import statistics
import subprocess
import sys
import threading
import time

import numpy as np
import websockets

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "Tests/EndToEnd"))
import e2e  # noqa: E402

RATE = 48000
# 507.5 ms: not a multiple of a chunk or a period, so the clicks fall at every phase of the
# client's 20 ms chunks (2.5 ms apart) instead of at one phase a run would be stuck with.
CLICK_EVERY = 24360
CLICK_FRAMES = 48  # 1 ms: survives the resampling to 16 kHz
CLICK_LEVEL = 0.8
THRESHOLD = 0.3
P50_BOUND_MS = 25.0
P99_BOUND_MS = 40.0


class Reader:
    """A process's raw s16le mono stdout, read as it comes: (arrival time, first frame, samples) blocks."""

    def __init__(self, argv, block_bytes):
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.blocks = []
        self.block_bytes = block_bytes
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        frame = 0
        pending = b""
        while True:
            data = self.process.stdout.read1(self.block_bytes)
            if not data:
                return
            now = time.monotonic()
            pending += data
            usable = len(pending) // 2 * 2
            samples = np.frombuffer(pending[:usable], dtype="<i2") / 32768.0
            pending = pending[usable:]
            self.blocks.append((now, frame, samples))
            frame += len(samples)

    def stop(self):
        self.process.terminate()
        self.process.wait()
        self.thread.join(2)


def onsets(blocks, rate, entered):
    """Times of the clicks: for `entered`, when the click's first sample reached the reader (its
    block's arrival less the samples after it); otherwise when the block holding it arrived."""
    times = []
    last = None
    for arrival, first, samples in blocks:
        loud = np.flatnonzero(np.abs(samples) > THRESHOLD)
        if not len(loud):
            continue
        index = first + int(loud[0])
        if last is not None and index - last < rate // 5:
            continue
        last = index
        times.append(arrival - (len(samples) - loud[0]) / rate if entered else arrival)
    return times


def latencies(reference, heard):
    """For each click at the card, the delay until the reader had it (within 1 s)."""
    out = []
    for t in reference:
        later = [h - t for h in heard if -0.002 <= h - t < 1.0]
        if later:
            out.append(min(later) * 1000)
    return out


def dating_errors(reference, dated):
    """For each click at the card, the server's date of it less its time at the card (within 100 ms)."""
    out = []
    for t in reference:
        near = [d - t for d in dated if abs(d - t) < 0.1]
        if near:
            out.append(min(near, key=abs) * 1000)
    return out


async def audiogate_client(url, seconds, heard, dated):
    async with websockets.connect(url, max_size=1 << 22, compression=None) as ws:
        start = json.loads(await ws.recv())
        rate = start["rate"]
        deadline = time.monotonic() + seconds
        last = None
        frames = 0
        while time.monotonic() < deadline:
            try:
                message = await asyncio.wait_for(ws.recv(), timeout=max(0.01, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                break
            now = time.monotonic()
            event = json.loads(message)
            if event["type"] != "audio":
                continue
            samples = np.frombuffer(base64.b64decode(event["data"]), dtype="<i2") / 32768.0
            loud = np.flatnonzero(np.abs(samples) > THRESHOLD)
            if len(loud) and (last is None or frames + loud[0] - last >= rate // 5):
                last = frames + int(loud[0])
                heard.append(now)
                # When the server says the click entered the card: the chunk's timestamp plus its offset.
                dated.append(event["timestamp_ms"] / 1000 + loud[0] / rate)
            frames += len(samples)


def player(seconds, stop):
    """pacat into the card: silence with a click every 507.5 ms, paced by the sound server."""
    process = subprocess.Popen(
        ["pacat", "--playback", "--device=speaker", "--raw", "--format=s16le", f"--rate={RATE}", "--channels=1",
         "--latency-msec=20"], stdin=subprocess.PIPE)
    block = np.zeros(CLICK_EVERY, dtype="<i2")
    block[:CLICK_FRAMES] = int(CLICK_LEVEL * 32767)
    data = block.tobytes()
    try:
        for _ in range(int(seconds * RATE / CLICK_EVERY)):
            if stop.is_set():
                break
            process.stdin.write(data)
            process.stdin.flush()
    except BrokenPipeError:
        pass
    finally:
        process.stdin.close()
        process.terminate()
        process.wait()


def figures(values):
    if not values:
        return {"count": 0, "p50_ms": None, "p99_ms": None, "max_ms": None, "min_ms": None}
    return {"count": len(values), "p50_ms": round(float(np.percentile(values, 50)), 1),
            "p99_ms": round(float(np.percentile(values, 99)), 1), "max_ms": round(max(values), 1),
            "min_ms": round(min(values), 1)}


def run(binary, seconds):
    server = e2e.Server(binary, device="pulse", log_level="error")
    if not server.start(capture=True, seconds=30):
        raise RuntimeError("the server did not start")
    stop = threading.Event()
    reference = Reader(["parec", "--device=speaker.monitor", "--raw", "--format=s16le", f"--rate={RATE}",
                        "--channels=1", "--latency-msec=2"], 192)
    arecord = Reader(["arecord", "-D", "pulse", "-q", "-f", "S16_LE", "-r", str(RATE), "-c", "1", "-t", "raw"], 4096)
    heard, dated = [], []
    try:
        time.sleep(2)
        before = e2e.cpu_sample()
        feeder = threading.Thread(target=player, args=(seconds + 4, stop), daemon=True)
        feeder.start()
        asyncio.run(audiogate_client(
            f"ws://127.0.0.1:{server.port}/v1/capture?rate=16000&chunk_ms=20&encoding=json", seconds + 2, heard, dated))
        steal = e2e.steal_percent(before, e2e.cpu_sample())
    finally:
        stop.set()
        reference.stop()
        arecord.stop()
        server.stop()
    clicks = onsets(reference.blocks, RATE, entered=True)
    # The first 2 s hold the clients' start and the sound server's first timing update.
    clicks = [t for t in clicks if clicks and t > clicks[0] + 2]
    return {
        "clicks": len(clicks),
        "audiogate": figures(latencies(clicks, heard)),
        "arecord": figures(latencies(clicks, onsets(arecord.blocks, RATE, entered=False))),
        # The server's timestamp of each click less when it entered the card: how well capture is dated.
        "dating_error_ms": figures(dating_errors(clicks, dated)),
        "steal_percent": round(steal, 2),
    }


def markdown(result):
    ag, ar = result["audiogate"], result["arecord"]
    ok = passed(result)
    return "\n".join([
        "## Capture latency (click to client)",
        "",
        "`Benchmarks/scripts/bench_click.py`, release build, `--device pulse`: a 1 ms click played into the",
        "test card every 507.5 ms (`pacat`; at every phase of the 20 ms chunks), timed where it enters the card (the sink's monitor read by `parec`",
        "in 2 ms blocks) and where a client has it: one WebSocket client (16 kHz mono, 20 ms chunks, JSON),",
        "the arrival of the chunk holding the click; beside it `arecord -D pulse` with its defaults.",
        "",
        "| reader | clicks | p50 | p99 | max | bound | steal % |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: |",
        f"| audiogate, 1 client | {ag['count']} | {ag['p50_ms']} ms | {ag['p99_ms']} ms | {ag['max_ms']} ms | "
        f"p50 <= {P50_BOUND_MS:g} ms, p99 <= {P99_BOUND_MS:g} ms: {'pass' if ok else 'FAIL'} | {result['steal_percent']} |",
        f"| arecord -D pulse (defaults) | {ar['count']} | {ar['p50_ms']} ms | {ar['p99_ms']} ms | {ar['max_ms']} ms | | |",
        "",
        "A click waits for the end of the client's chunk (0-20 ms, 10 ms on average), then for the sound",
        "server's delivery and the server's fan-out (about 10 ms, `docs/bench-capture.md`). Clicks 500 ms apart",
        "(a multiple of the chunk) fell at one phase of the chunks for a whole run, so a run's median was",
        "anywhere from 16 to 25 ms on one build; 507.5 ms apart they sweep the chunk. Measured so (debug",
        "builds, 80 clicks each): before the device clock p50 19.5 / p99 31.3 ms, with it 19.5 / 32.1 ms,",
        "and with the capture thread woken every 10 ms period instead of once per 20 ms batch 19.5 / 31.8 ms:",
        "waking per batch costs no latency once the phases are swept.",
        "",
        f"audiogate's own date of each click (the chunk's `timestamp_ms` plus the click's offset in it) less the",
        f"time it entered the card: median {result['dating_error_ms']['p50_ms']} ms, from {result['dating_error_ms']['min_ms']} "
        f"to {result['dating_error_ms']['max_ms']} ms.",
        "",
    ])


def passed(result):
    ag = result["audiogate"]
    return (ag["count"] >= 0.9 * result["clicks"] and ag["p50_ms"] is not None
            and ag["p50_ms"] <= P50_BOUND_MS and ag["p99_ms"] <= P99_BOUND_MS)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    e2e.add_binary_argument(parser)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--markdown", type=pathlib.Path)
    args = parser.parse_args()
    result = run(args.binary, args.seconds)
    print(json.dumps(result), flush=True)
    if args.markdown:
        args.markdown.write_text(markdown(result))
    if not passed(result):
        print(f"bench: capture latency over its bound (p50 {result['audiogate']['p50_ms']} ms, "
              f"p99 {result['audiogate']['p99_ms']} ms)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
