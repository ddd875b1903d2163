#!/usr/bin/env python3
"""Measures audiogate's voice processing on the echo room; prints a Markdown section.

ERLE (echo return loss enhancement) is the raw microphone level minus the processed level while
only the agent talks: in the first second of its speech and from 2 s on. PulseAudio's
module-echo-cancel (aec_method=webrtc) runs on the same room for comparison. CPU is read from the
server's processing threads (/proc/PID/task/*/stat, named voice-<setting>), steal from /proc/stat.
"""
import argparse
import asyncio
import base64
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np
import websockets

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "Tests/EndToEnd"))
from e2e import cpu_sample, steal_percent  # noqa: E402

RATE = 16000
AGENT = ("Hello, I am the agent. The weather today is sunny with a light breeze, "
         "and tomorrow will be much the same. Is there anything else you would like to know?")
TICK = os.sysconf("SC_CLK_TCK")


def speech_wav(path):
    subprocess.run(["espeak-ng", "-w", path, AGENT], check=True)
    with wave.open(path) as w:
        return w.getnframes() / w.getframerate()


SILENCE_DB = -120.0


def level_db(samples):
    if len(samples) == 0:
        return SILENCE_DB
    power = float(np.mean(samples.astype(np.float64) ** 2))
    return 10 * math.log10(power) if power > 1e-12 else SILENCE_DB


def onset(samples, threshold_db=-50, rate=RATE):
    frame = rate // 100
    for i in range(0, len(samples) - frame, frame):
        if level_db(samples[i:i + frame]) > threshold_db:
            return i
    return None


def erle(raw, processed, start, seconds_agent, rate=RATE):
    first = slice(start, start + rate)
    late = slice(start + 2 * rate, start + int((seconds_agent - 0.2) * rate))

    def enhancement(part):
        left = level_db(processed[part])
        # Digital silence left: the enhancement is more than the two levels can show.
        return math.inf if left <= SILENCE_DB else level_db(raw[part]) - left

    return enhancement(first), enhancement(late)


def thread_ticks(pid, prefix="voice-"):
    total = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{task}/comm").read().strip()
            stat = open(f"/proc/{pid}/task/{task}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if name.startswith(prefix):
            total[name] = total.get(name, 0) + int(stat[11]) + int(stat[12])
    return total


def process_ticks(pid):
    stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(stat[11]) + int(stat[12])


async def capture(url, seconds, sink):
    """Collects (timestamp_ms, arrival_ms, samples) of a JSON capture socket for `seconds`."""
    async with websockets.connect(url, max_size=1 << 22) as ws:
        await ws.recv()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            message = json.loads(await ws.recv())
            if message["type"] == "audio":
                pcm = np.frombuffer(base64.b64decode(message["data"]), dtype="<i2").astype(np.float32) / 32768
                sink.append((message["timestamp_ms"], time.monotonic() * 1000, pcm))


def timeline(chunks, start_ms):
    end = max(t for t, _, p in chunks) + 40
    out = np.zeros(int((end - start_ms) * RATE / 1000) + RATE // 10, dtype=np.float32)
    for t, _, pcm in chunks:
        i = int(round((t - start_ms) * RATE / 1000))
        if i >= 0:
            out[i:i + len(pcm)] = pcm[: max(0, len(out) - i)]
    return out


async def post_wav(port, path):
    data = open(path, "rb").read()
    proc = await asyncio.create_subprocess_exec(
        "curl", "-fs", "-o", "/dev/null", "-H", "Content-Type: audio/wav", "--data-binary", "@" + path,
        f"http://127.0.0.1:{port}/v1/playback")
    await proc.wait()
    return len(data)


async def ours(args, wav, seconds_agent):
    base = f"ws://127.0.0.1:{args.port}/v1/capture?rate={RATE}&encoding=json"
    raw, processed = [], []
    steal = cpu_sample()
    tasks = [asyncio.create_task(capture(base, seconds_agent + 3, raw)),
             asyncio.create_task(capture(base + "&aec=true&ns=true", seconds_agent + 3, processed))]
    await asyncio.sleep(1.0)
    ticks0, wall0 = thread_ticks(args.pid), time.monotonic()
    await post_wav(args.port, wav)
    await asyncio.gather(*tasks)
    cpu = {k: 100.0 * (v - ticks0.get(k, 0)) / TICK / (time.monotonic() - wall0) for k, v in thread_ticks(args.pid).items()}
    start_ms = min(raw[0][0], processed[0][0])
    r, p = timeline(raw, start_ms), timeline(processed, start_ms)
    n = min(len(r), len(p))
    first = onset(r[:n])
    early, late = erle(r[:n], p[:n], first, seconds_agent)
    by_ts = {round(t, 1): a for t, a, _ in raw}
    added = [a - by_ts[round(t, 1)] for t, a, _ in processed if round(t, 1) in by_ts]
    return early, late, statistics.median(added) if added else float("nan"), cpu, steal_percent(steal, cpu_sample())


def pa(*args):
    return subprocess.run(["pactl", *args], check=True, capture_output=True, text=True).stdout.strip()


def pulseaudio_erle(wav, seconds_agent):
    """The same speech through module-echo-cancel (webrtc) on the same room."""
    module = pa("load-module", "module-echo-cancel", "source_master=room.monitor", "sink_master=spk",
                "source_name=room_ec", "sink_name=spk_ec", "aec_method=webrtc", "use_master_format=1")
    try:
        time.sleep(1.0)
        with tempfile.TemporaryDirectory() as tmp:
            raw_path, ec_path = os.path.join(tmp, "raw.raw"), os.path.join(tmp, "ec.raw")
            fmt = ["--format=s16le", f"--rate={RATE}", "--channels=1", "--raw"]
            rec_raw = subprocess.Popen(["parec", "--device=room.monitor", *fmt], stdout=open(raw_path, "wb"))
            rec_ec = subprocess.Popen(["parec", "--device=room_ec", *fmt], stdout=open(ec_path, "wb"))
            time.sleep(1.0)
            subprocess.run(["paplay", "--device=spk_ec", wav], check=True)
            time.sleep(1.0)
            rec_raw.terminate()
            rec_ec.terminate()
            rec_raw.wait()
            rec_ec.wait()
            r = np.fromfile(raw_path, dtype="<i2").astype(np.float32) / 32768
            p = np.fromfile(ec_path, dtype="<i2").astype(np.float32) / 32768
        # The two recordings start within a few ms of each other; align by the onsets' offset in
        # the processed stream is not possible (it is cancelled), so both are taken from the raw onset.
        n = min(len(r), len(p))
        first = onset(r[:n])
        return erle(r[:n], p[:n], first, seconds_agent)
    finally:
        pa("unload-module", module)


async def cpu_per_setting(args, wav, seconds_agent):
    rows = []
    for query in ["ns=true", "aec=true", "aec=true&ns=true", "aec=true&ns=true&vad=true", "agc=true"]:
        sink = []
        task = asyncio.create_task(capture(f"ws://127.0.0.1:{args.port}/v1/capture?rate={RATE}&encoding=json&{query}", 8, sink))
        await asyncio.sleep(1.0)
        steal = cpu_sample()
        ticks0, wall0 = thread_ticks(args.pid), time.monotonic()
        await post_wav(args.port, wav)
        await asyncio.sleep(6)
        ticks = thread_ticks(args.pid)
        elapsed = time.monotonic() - wall0
        cpu = sum(v - ticks0.get(k, 0) for k, v in ticks.items()) / TICK / elapsed * 100
        rows.append((query, cpu, steal_percent(steal, cpu_sample())))
        await task
        await asyncio.sleep(seconds_agent - 6)
    return rows


async def fan_out(args, query, clients=100, seconds=10):
    async def client():
        async with websockets.connect(f"ws://127.0.0.1:{args.port}/v1/capture?rate={RATE}&{query}", max_size=1 << 22) as ws:
            end = time.monotonic() + seconds + 3
            while time.monotonic() < end:
                await ws.recv()
    tasks = [asyncio.create_task(client()) for _ in range(clients)]
    await asyncio.sleep(2)
    steal = cpu_sample()
    t0, w0, v0 = process_ticks(args.pid), time.monotonic(), sum(thread_ticks(args.pid).values())
    await asyncio.sleep(seconds)
    elapsed = time.monotonic() - w0
    total = (process_ticks(args.pid) - t0) / TICK / elapsed * 100
    voice = (sum(thread_ticks(args.pid).values()) - v0) / TICK / elapsed * 100
    await asyncio.gather(*tasks, return_exceptions=True)
    return total, voice, steal_percent(steal, cpu_sample())


async def main(args):
    with tempfile.TemporaryDirectory() as tmp:
        wav = os.path.join(tmp, "agent.wav")
        seconds_agent = speech_wav(wav)
        if args.fan_out_only:
            for _ in range(args.rounds):
                for query in ["aec=false", "aec=true"]:
                    print(query, await fan_out(args, query))
            return
        print("## Voice processing (echo room)\n")
        print(f"`Benchmarks/scripts/bench-voice.sh` on {os.cpu_count()} cores, binary `{os.path.basename(os.path.dirname(args.binary))}`; "
              f"espeak-ng speech ({seconds_agent:.1f} s) played by the agent, 16 kHz mono. The room: null sink `spk` -> "
              "fixed 40 ms loopback -> null sink `room`, microphone `room.monitor`.\n")
        # Alternating runs, medians: the first second of either canceller moves by tens of dB from
        # one run to the next, so one run is noise.
        ours_runs, pa_runs = [], []
        for _ in range(args.rounds):
            ours_runs.append(await ours(args, wav, seconds_agent))
            await asyncio.sleep(1)
            try:
                pa_runs.append(pulseaudio_erle(wav, seconds_agent))
            except Exception as error:  # a daemon without the module: report, do not fail the rest
                print(f"(PulseAudio module-echo-cancel failed: {error})\n")
                pa_runs.append((float("nan"), float("nan")))
            await asyncio.sleep(1)

        def decibels(value, unit=" dB"):
            return "silent" if math.isinf(value) else f"{value:.1f}{unit}"

        def erle_cell(runs, index):
            values = [run[index] for run in runs]
            return f"{decibels(statistics.median(values))} ({' / '.join(decibels(v, '') for v in values)})"

        steal = max(run[4] for run in ours_runs)
        added = statistics.median(run[2] for run in ours_runs)
        print(f"| canceller (median of {args.rounds} alternating runs) | ERLE first 1 s | ERLE from 2 s | steal (max) |")
        print("| --- | --- | --- | --- |")
        print(f"| audiogate `aec=true&ns=true` | {erle_cell(ours_runs, 0)} | {erle_cell(ours_runs, 1)} | {steal:.1f}% |")
        print(f"| PulseAudio module-echo-cancel webrtc | {erle_cell(pa_runs, 0)} | {erle_cell(pa_runs, 1)} | |")
        print("\n*silent*: nothing of the echo was left, the processed microphone was digital silence over the span.")
        print(f"\nAdded latency (median arrival of a processed chunk after the raw chunk of the same capture time): "
              f"{added:.1f} ms (processing works on whole 10 ms frames).\n")
        print("| setting (16 kHz, agent talking) | CPU, % of one core | steal |")
        print("| --- | --- | --- |")
        for query, value, steal in await cpu_per_setting(args, wav, seconds_agent):
            print(f"| `{query}` | {value:.1f}% | {steal:.1f}% |")
        # Alternating runs, medians: the machine is shared and one run of each is noise.
        runs = {"aec=false": [], "aec=true": []}
        for _ in range(args.rounds):
            for query in runs:
                runs[query].append(await fan_out(args, query))
        plain, shared = (tuple(statistics.median(r[i] for r in runs[q]) for i in range(3)) for q in runs)
        print(f"\n| 100 capture clients (10 s, median of {args.rounds} alternating runs) | server CPU, % of one core | of which processing threads | steal |")
        print("| --- | --- | --- | --- |")
        print(f"| plain | {plain[0]:.1f}% | {plain[1]:.1f}% | {plain[2]:.1f}% |")
        print(f"| all `aec=true` (one shared canceller) | {shared[0]:.1f}% | {shared[1]:.1f}% | {shared[2]:.1f}% |")
        verdict = "holds" if shared[0] <= plain[0] + shared[1] + 5 else "does NOT hold"
        print(f"\n100 clients sharing `aec=true` cost {shared[0]:.1f}% against 100 plain clients ({plain[0]:.1f}%) plus "
              f"one canceller ({shared[1]:.1f}%): the claim {verdict} (5 points of noise allowed).")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--binary", default="audiogate")
    parser.add_argument("--rounds", type=int, default=3, help="alternating runs of the ERLE and 100-client comparisons")
    parser.add_argument("--fan-out-only", action="store_true")
    asyncio.run(main(parser.parse_args()))
