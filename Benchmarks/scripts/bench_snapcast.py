#!/usr/bin/env python3
"""CPU of the Snapcast client beside snapclient's, on one snapserver FLAC stream (48 kHz stereo).

    .venv/bin/python Benchmarks/scripts/bench_snapcast.py --binary .build/release/audiogate [--seconds 20] [--runs 5]

One snapserver (loopback, FIFO source of music-like noise so FLAC has real work, empty config), one
reference `snapclient --player pulse` and one audiogate (`--device pulse --device-idle-ms 0`) joined
to it at once. Per window: audiogate's CPU with the snapcast stream playing, and snapclient's,
from /proc/PID/schedstat of all threads, in % of one core. audiogate's idle cost with its devices
open and no stream (the same server before it joins: a second server without --snapcast-server)
is measured in paired windows and subtracted, so the figure is the stream's own cost. Every figure
is the median of --runs windows with the hypervisor steal of its windows beside it.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

SCRIPTS = pathlib.Path(__file__).resolve().parent
ROOT = SCRIPTS.parents[1]
sys.path.insert(0, str(ROOT / "Tests/EndToEnd"))
import e2e  # noqa: E402
import check_snapcast as snap  # noqa: E402


def cpu_ns(pid):
    total = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def window(pids, seconds):
    """(% of one core per pid, steal %) over one window."""
    before = {pid: cpu_ns(pid) for pid in pids}
    stat = e2e.cpu_sample()
    started = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - started
    after = {pid: cpu_ns(pid) for pid in pids}
    steal = e2e.steal_percent(stat, e2e.cpu_sample())
    return {pid: 100 * (after[pid] - before[pid]) / 1e9 / elapsed for pid in pids}, steal


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    e2e.add_binary_argument(parser)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-snapcast-") as scratch:
        server = snap.SnapServer(scratch, "flac", kind="music")
        server.start()
        reference = snap.start_reference(server, scratch)
        gate = snap.start_audiogate(args.binary, server, scratch, extra=["--device-idle-ms", "0"])
        idle = e2e.Server(args.binary, log=pathlib.Path(scratch) / "idle.log", extra=["--device-idle-ms", "0"])
        try:
            gate.start()
            idle.start()
            e2e.wait_for(lambda: gate.get("/v1/status")["snapcast"]["queued_ms"] > 0, 10)
            # The idle server keeps its playback device open with silence, as the snapcast one does.
            subprocess.run(["curl", "-s", "-o", "/dev/null", "-X", "POST",
                            f"{idle.base}/v1/playback?rate=48000&channels=2", "--data-binary", "@/dev/null"])
            time.sleep(3)
            rows = []
            for _ in range(args.runs):
                figures, steal = window([gate.process.pid, reference.pid, idle.process.pid], args.seconds)
                rows.append((figures[gate.process.pid], figures[reference.pid], figures[idle.process.pid], steal))
                print(f"audiogate {rows[-1][0]:.2f} % (idle server {rows[-1][2]:.2f} %), snapclient {rows[-1][1]:.2f} %,"
                      f" steal {steal:.1f} %", flush=True)
            status = gate.get("/v1/status")["snapcast"]
        finally:
            reference.terminate()
            reference.wait(5)
            gate.stop()
            idle.stop()
            server.close()
    gate_cpu = statistics.median(r[0] for r in rows)
    idle_cpu = statistics.median(r[2] for r in rows)
    stream = statistics.median(r[0] - r[2] for r in rows)
    client = statistics.median(r[1] for r in rows)
    steal = statistics.median(r[3] for r in rows)
    print(f"\n| stream | audiogate server | its snapcast stream (over an idle server) | snapclient | steal |")
    print(f"|---|---:|---:|---:|---:|")
    print(f"| FLAC 48000 Hz 2 ch | {gate_cpu:.2f}% | {stream:.2f}% (idle {idle_cpu:.2f}%) | {client:.2f}% | {steal:.1f}% |")
    print(f"\nframes dropped/inserted meanwhile: {status['frames_dropped']}/{status['frames_inserted']},"
          f" clock jitter {status['clock_jitter_ms']} ms")


if __name__ == "__main__":
    main()
