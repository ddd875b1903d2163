#!/usr/bin/env python3
"""Measures the CPU one compressed playback stream costs per codec; prints a Markdown section.

For each codec a 30 s tone made by ffmpeg is POSTed to a running server (no wait: the answer comes
once everything is decoded, resampled to the device rate and queued). The server's CPU time
(/proc/PID/stat utime+stime) over the request, less the idle server's rate over the same wall time,
is the stream's cost: decode plus conversion to the device format. Median of the runs; steal from
/proc/stat over the same runs.
"""
import argparse
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
SECONDS = 30
CODECS = [
    ("MP3 128 kb/s", "mp3", "audio/mpeg", ["-c:a", "libmp3lame", "-b:a", "128k"], 44100, 2),
    ("Ogg Opus 64 kb/s", "opus", "audio/ogg", ["-c:a", "libopus", "-b:a", "64k"], 48000, 2),
    ("Ogg Vorbis q4", "ogg", "audio/ogg", ["-c:a", "libvorbis", "-q:a", "4"], 44100, 2),
    ("FLAC", "flac", "audio/flac", ["-c:a", "flac"], 44100, 2),
    ("WebM Opus 64 kb/s", "webm", "audio/webm", ["-c:a", "libopus", "-b:a", "64k"], 48000, 2),
]


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def request(url, method="GET", data=None, headers=None):
    with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers or {}), timeout=120) as response:
        return response.read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    base = f"http://127.0.0.1:{args.port}"
    work = tempfile.mkdtemp(prefix="audiogate-bench-codecs-")

    # The idle server's own CPU rate (device thread, mixer), subtracted from every request.
    before, start = cpu_seconds(args.pid), time.monotonic()
    time.sleep(3)
    idle_rate = (cpu_seconds(args.pid) - before) / (time.monotonic() - start)

    print("## Compressed playback (decode CPU per stream)")
    print()
    print(f"`Benchmarks/scripts/bench-codecs.sh`: a {SECONDS} s stereo tone per codec, made by ffmpeg, POSTed to the release")
    print("server; the server's CPU time over the request less its idle rate is the stream's decode, resample")
    print(f"and queueing cost. *x realtime/core* = seconds of audio per second of CPU; median of {args.runs} runs.")
    print()
    print("| codec | source | x realtime/core | CPU per stream | steal |")
    print("|---|---|---:|---:|---:|")
    for label, extension, content_type, codec_args, rate, channels in CODECS:
        path = os.path.join(work, f"tone.{extension}")
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                        f"sine=frequency=440:sample_rate={rate}:duration={SECONDS}", "-ac", str(channels),
                        *codec_args, path], check=True)
        body = open(path, "rb").read()
        factors = []
        steal = cpu_sample()
        for _ in range(args.runs):
            request(base + "/v1/playback?stream=bench", method="DELETE")
            time.sleep(0.2)
            before, start = cpu_seconds(args.pid), time.monotonic()
            request(base + "/v1/playback?stream=bench", method="POST", data=body, headers={"Content-Type": content_type})
            elapsed = time.monotonic() - start
            used = max(cpu_seconds(args.pid) - before - idle_rate * elapsed, 1 / TICK)
            factors.append(SECONDS / used)
        request(base + "/v1/playback?stream=bench", method="DELETE")
        factor = statistics.median(factors)
        print(f"| {label} | {rate} Hz {channels} ch | {factor:.0f}x | {100 / factor:.2f}% of a core | {steal_percent(steal, cpu_sample()):.1f}% |")
    print()
    print("44.1 kHz sources include resampling to the device rate (48 kHz on the test card), which costs more")
    print("than decoding; the 48 kHz Opus streams are queued without it.")
    print(f"CPU times are read in clock ticks ({1000 // TICK} ms), so a run costing a few ticks is a coarse figure;")
    print("the idle server used {:.1f}% of a core meanwhile.".format(idle_rate * 100))


if __name__ == "__main__":
    main()
