#!/usr/bin/env python3
"""Measures audiogate's voice processing on the echo room; prints a Markdown section.

ERLE (echo return loss enhancement) is the raw microphone level minus the processed level while
only the agent talks: in the first second of its speech and from 2 s on. PulseAudio's
module-echo-cancel (aec_method=webrtc) runs on the same room for comparison. Double talk (the
agent, then the user alone, then both at once, as the Swift room test plays them) measures what each
canceller keeps of the user while the echo is cancelled. CPU is read from the server's processing
threads (/proc/PID/task/*/stat, named voice-<setting>), steal from /proc/stat.
"""
import argparse
import asyncio
import base64
import collections
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
# Double talk uses the texts of the Swift room test (VoiceRoomTests), so its figures and the test's
# compare; the user's copy in double talk lies wholly inside the agent's speech.
TURN_AGENT = "Hello, I am the agent. The weather today is sunny with a light breeze, and tomorrow will be much the same."
TURN_USER = "Stop, wait a moment please. I have another question."
# Echo-to-user ratios at the microphone: a quiet echo, echo as loud as the user (a speakerphone on a
# table), an echo 10 dB louder than the user.
RATIOS = [-10, 0, 10]
Speech = collections.namedtuple("Speech", "path seconds")


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


async def capture(url, seconds, sink, events=None):
    """Collects (timestamp_ms, arrival_ms, samples) of a JSON capture socket for `seconds`, and its
    VAD events as (timestamp_ms, state) into `events` when given."""
    async with websockets.connect(url, max_size=1 << 22) as ws:
        await ws.recv()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            message = json.loads(await ws.recv())
            if message["type"] == "audio":
                pcm = np.frombuffer(base64.b64decode(message["data"]), dtype="<i2").astype(np.float32) / 32768
                sink.append((message["timestamp_ms"], time.monotonic() * 1000, pcm))
            elif message["type"] == "vad" and events is not None:
                events.append((message["timestamp_ms"], message["state"]))


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


def pulseaudio_recording(play):
    """Runs `play(t0)` with module-echo-cancel (webrtc) loaded on the same room, `t0` being the
    monotonic time the recordings started; returns the microphone (room.monitor) and the canceller's
    output (room_ec) as recorded meanwhile, and what `play` returned. Its analog gain control (on by
    default) is off: it turns the volume of the microphone itself, which every raw figure and every
    later run of audiogate reads, and audiogate's figures are without gain control too."""
    module = pa("load-module", "module-echo-cancel", "source_master=room.monitor", "sink_master=spk",
                "source_name=room_ec", "sink_name=spk_ec", "aec_method=webrtc", "use_master_format=1",
                'aec_args="analog_gain_control=0 digital_gain_control=0"')
    try:
        time.sleep(1.0)
        with tempfile.TemporaryDirectory() as tmp:
            raw_path, ec_path = os.path.join(tmp, "raw.raw"), os.path.join(tmp, "ec.raw")
            fmt = ["--format=s16le", f"--rate={RATE}", "--channels=1", "--raw"]
            t0 = time.monotonic()
            rec_raw = subprocess.Popen(["parec", "--device=room.monitor", *fmt], stdout=open(raw_path, "wb"))
            rec_ec = subprocess.Popen(["parec", "--device=room_ec", *fmt], stdout=open(ec_path, "wb"))
            time.sleep(1.0)
            played = play(t0)
            time.sleep(1.0)
            rec_raw.terminate()
            rec_ec.terminate()
            rec_raw.wait()
            rec_ec.wait()
            r = np.fromfile(raw_path, dtype="<i2").astype(np.float32) / 32768
            p = np.fromfile(ec_path, dtype="<i2").astype(np.float32) / 32768
        # The two recordings start within a few ms of each other; aligning them by their onsets is
        # not possible (the processed one is cancelled), so spans of both are taken from the raw one.
        n = min(len(r), len(p))
        return r[:n], p[:n], played
    finally:
        pa("unload-module", module)


def pulseaudio_erle(wav, seconds_agent):
    """The same speech through module-echo-cancel (webrtc) on the same room."""
    r, p, _ = pulseaudio_recording(lambda t0: subprocess.run(["paplay", "--device=spk_ec", wav], check=True))
    return erle(r, p, onset(r), seconds_agent)


def speech(text, voice, path):
    subprocess.run(["espeak-ng", "-v", voice, "-w", path, text], check=True)
    with wave.open(path) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2"), w.getframerate()


def scaled(samples, rate, gain_db, path):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.round(samples * 10 ** (gain_db / 20)).astype("<i2").tobytes())
    return Speech(path, len(samples) / rate)


def speech_pairs(tmp):
    """The agent's and the user's speech for each ratio, scaled as TestRoom.speechPair does: the
    agent's echo reaches the microphone `ratio` dB louder than the user (both paths of the room are
    at unity gain); the louder of the two is turned down, so nothing clips. The levels compared are
    the ones measured: the agent from 2 s into its speech to its end, the user over the whole utterance."""
    agent, agent_rate = speech(TURN_AGENT, "en", os.path.join(tmp, "turn-agent.wav"))
    user, user_rate = speech(TURN_USER, "en+f3", os.path.join(tmp, "turn-user.wav"))
    natural = level_db(agent[2 * agent_rate:] / 32768) - level_db(user / 32768)
    return {ratio: (scaled(agent, agent_rate, min(0, ratio - natural), os.path.join(tmp, f"agent{ratio}.wav")),
                    scaled(user, user_rate, min(0, natural - ratio), os.path.join(tmp, f"user{ratio}.wav")))
            for ratio in RATIOS}


def contiguous(chunks, start_ms):
    """A stream's chunks back to back from the first one's capture time (sample 0 at `start_ms`):
    sample-exact over seconds, where each chunk's own timestamp may be a few samples off the running
    count, which would decorrelate the user's two copies."""
    lead = int(round((chunks[0][0] - start_ms) * RATE / 1000))
    return np.concatenate([np.zeros(lead, dtype=np.float32)] + [pcm for _, _, pcm in chunks])


def best_lag(template, signal, max_lag):
    """The shift within ±max_lag at which signal[max_lag + lag:] matches `template` best (largest
    normalized cross-correlation), as Signal.bestLag."""
    template, signal = template.astype(np.float64), signal.astype(np.float64)
    dot = np.correlate(signal, template, "valid")
    running = np.concatenate([[0.0], np.cumsum(signal ** 2)])
    energy = running[len(template):] - running[:-len(template)]
    score = np.where(energy > 0, dot / np.sqrt(np.maximum(energy, 1e-30)), 0)
    return int(np.argmax(score[: 2 * max_lag + 1])) - max_lag


def component_level(template, signal, frame=RATE // 50):
    """The level (dB, relative to `template`) of the part of `signal` that follows it, frame by
    frame, as Signal.componentLevel: each 20 ms frame of `signal` is projected onto the same frame of
    `template`, so residual echo does not count as kept and a suppressor ducking the user does."""
    count = min(len(template), len(signal)) // frame * frame
    t = template[:count].astype(np.float64).reshape(-1, frame)
    s = signal[:count].astype(np.float64).reshape(-1, frame)
    energy = np.sum(t * t, axis=1)
    dots = np.sum(s * t, axis=1)
    kept = float(np.sum(np.where(energy > 1e-12, dots ** 2 / np.maximum(energy, 1e-12), 0)))
    total = float(np.sum(energy))
    return 10 * math.log10(kept / total) if total > 0 and kept > 0 else SILENCE_DB


def double_talk_figures(raw, processed, user_mark_ms, double_mark_ms, agent, user):
    """Measured echo-to-user ratio, ERLE (first second, from 2 s), user alone (processed minus raw)
    and user kept in double talk, from the raw and processed microphone laid out from the same
    sample 0, with the times (ms after sample 0) the user's two utterances were started; also the
    onsets (ms) of the agent's first speech, the user alone and the user in double talk."""
    def at(ms):
        return max(0, int(ms * RATE / 1000))

    agent_start = onset(raw)
    # The mark is taken as the user's playback starts; a parec recording's sample 0 comes a little
    # after its own mark, so the search starts early (the agent's echo ended ~0.8 s before).
    search = at(user_mark_ms - 300)
    user_start = search + onset(raw[search:])
    user_len = at(user.seconds * 1000)
    user_alone = slice(user_start, user_start + user_len)
    late = slice(agent_start + 2 * RATE, agent_start + int((agent.seconds - 0.2) * RATE))
    # The user's double-talk copy found sample-exactly in the raw microphone (the echo is
    # uncorrelated with it), ±60 ms around where the marks put it.
    margin = RATE * 60 // 1000
    expected = user_start + at(double_mark_ms - user_mark_ms)
    lag = best_lag(raw[user_alone], raw[expected - margin:expected + user_len + margin], margin)
    double_start = expected + lag
    early_erle, late_erle = erle(raw, processed, agent_start, agent.seconds)
    figures = (level_db(raw[late]) - level_db(raw[user_alone]), early_erle, late_erle,
               level_db(processed[user_alone]) - level_db(raw[user_alone]),
               component_level(processed[user_alone], processed[double_start:double_start + user_len]))
    return figures, tuple(i * 1000 / RATE for i in (agent_start, user_start, double_start))


def vad_figures(events, agent_start, user_start, double_start, user_ms):
    """(speech event for the user alone, speech event in double talk, speech events while only the
    agent's echo played), with the room test's tolerances (ms after the same sample 0)."""
    speech_at = [t for t, state in events if state == "speech"]
    user = any(user_start - 100 <= t < user_start + user_ms for t in speech_at)
    double = any(double_start - 300 <= t < double_start + user_ms for t in speech_at)
    echo = sum(agent_start <= t < user_start - 100 or user_start + user_ms + 300 <= t < double_start - 100
               for t in speech_at)
    return user, double, echo


async def play_into_room(path):
    """The user's speech straight into the room (only the microphone hears it); returns when done."""
    proc = await asyncio.create_subprocess_exec("paplay", "--device=room", path)
    await proc.wait()


async def ours_double_talk(args, agent, user):
    """The agent alone, ~0.8 s after it the user alone, then both at once (the user 1 s into the
    agent's speech), with a raw and an `aec=true&ns=true&vad=true` capture beside each other."""
    base = f"ws://127.0.0.1:{args.port}/v1/capture?rate={RATE}&encoding=json"
    raw, processed, events = [], [], []
    seconds = agent.seconds + 2 * user.seconds + 5
    steal = cpu_sample()
    tasks = [asyncio.create_task(capture(base, seconds, raw)),
             asyncio.create_task(capture(base + "&aec=true&ns=true&vad=true", seconds, processed, events))]
    await asyncio.sleep(1.0)
    await post_wav(args.port, agent.path)
    await asyncio.sleep(agent.seconds + 0.8)
    user_mark = time.monotonic() * 1000
    await play_into_room(user.path)
    await asyncio.sleep(1)
    await post_wav(args.port, agent.path)
    await asyncio.sleep(1)
    double_mark = time.monotonic() * 1000
    await play_into_room(user.path)
    await asyncio.gather(*tasks)
    steal = steal_percent(steal, cpu_sample())
    start_ms = min(raw[0][0], processed[0][0])
    r, p = contiguous(raw, start_ms), contiguous(processed, start_ms)
    n = min(len(r), len(p))
    figures, onsets = double_talk_figures(r[:n], p[:n], user_mark - start_ms, double_mark - start_ms, agent, user)
    vad = vad_figures([(t - start_ms, state) for t, state in events], *onsets, user.seconds * 1000)
    return figures, vad, steal


def pulseaudio_double_talk(agent, user):
    """The same sequence through module-echo-cancel (webrtc): the agent plays into spk_ec, the
    user straight into the room; the marks are taken on the recordings' clock."""
    def play(t0):
        subprocess.run(["paplay", "--device=spk_ec", agent.path], check=True)
        time.sleep(0.8)
        user_mark = (time.monotonic() - t0) * 1000
        subprocess.run(["paplay", "--device=room", user.path], check=True)
        time.sleep(1)
        talking = subprocess.Popen(["paplay", "--device=spk_ec", agent.path])
        time.sleep(1)
        double_mark = (time.monotonic() - t0) * 1000
        subprocess.run(["paplay", "--device=room", user.path], check=True)
        talking.wait()
        return user_mark, double_mark

    steal = cpu_sample()
    r, p, (user_mark, double_mark) = pulseaudio_recording(play)
    figures, _ = double_talk_figures(r, p, user_mark, double_mark, agent, user)
    return figures, None, steal_percent(steal, cpu_sample())


def decibels(value, unit=" dB"):
    return "silent" if math.isinf(value) else f"{value:.1f}{unit}"


async def double_talk(args, tmp):
    """The double-talk section: per echo-to-user ratio, both cancellers in alternating runs."""
    pairs = speech_pairs(tmp)
    runs = {(ratio, name): [] for ratio in RATIOS for name in ("ours", "pulseaudio")}
    for _ in range(args.rounds):
        for ratio, (agent, user) in pairs.items():
            runs[ratio, "ours"].append(await ours_double_talk(args, agent, user))
            await asyncio.sleep(1)
            try:
                runs[ratio, "pulseaudio"].append(pulseaudio_double_talk(agent, user))
            except Exception as error:  # a daemon without the module: report, do not fail the rest
                print(f"(PulseAudio module-echo-cancel failed: {error})\n")
            await asyncio.sleep(1)
    agent, user = pairs[0]
    print(f"### Double talk\n\nThe agent alone ({agent.seconds:.1f} s of espeak-ng), ~0.8 s after it the user alone "
          f"({user.seconds:.1f} s, espeak-ng `en+f3` straight into the room), then the agent again and 1 s into it the user "
          "again; the two scaled to each echo-to-user ratio at the microphone, the louder one turned down. audiogate: "
          "`aec=true&ns=true&vad=true` beside a raw capture; PulseAudio: module-echo-cancel webrtc, its output beside "
          "`room.monitor`. *Measured ratio*: the raw echo from 2 s into the agent's speech against the raw user alone. "
          "*User alone*: processed minus raw level of the user talking alone. *User kept in double talk*: the part of the "
          "processed double talk that follows the processed user alone, projected 20 ms frame by 20 ms frame (residual "
          "echo does not count, ducking the user does), against the user alone. *VAD*: runs with a speech event for the "
          "user alone and in double talk, and speech events while only the agent's echo played.\n")
    print("Targets: user kept in double talk >= -6 dB at 0 dB and >= -10 dB at +10 dB; ERLE >= 30 dB from 2 s and "
          ">= 15 dB in the first second; user alone within 3 dB; VAD speech for each user utterance and none on echo alone.\n")
    print(f"| ratio | canceller (median of {args.rounds} alternating runs) | measured ratio | ERLE first 1 s | ERLE from 2 s "
          "| user alone | user kept in double talk | VAD (ours) | steal (max) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")

    def cell(values):
        if not values:
            return "failed"
        median = decibels(statistics.median(values))
        return median if len(values) == 1 else f"{median} ({' / '.join(decibels(v, '') for v in values)})"

    for ratio in RATIOS:
        for name, label in (("ours", "audiogate"), ("pulseaudio", "PulseAudio webrtc")):
            done = runs[ratio, name]
            figures = " | ".join(cell([run[0][i] for run in done]) for i in range(5))
            vad = ""
            if name == "ours":
                vad = (f"user {sum(run[1][0] for run in done)}/{len(done)}, double talk {sum(run[1][1] for run in done)}/"
                       f"{len(done)}, on echo {sum(run[1][2] for run in done)}")
            steal = f"{max(run[2] for run in done):.1f}%" if done else ""
            print(f"| {f'{ratio:+d}' if ratio else '0'} dB | {label} | {figures} | {vad} | {steal} |")


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
        if args.double_talk_only:
            await double_talk(args, tmp)
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
        print()
        await double_talk(args, tmp)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--binary", default="audiogate")
    parser.add_argument("--rounds", type=int, default=3, help="alternating runs of the ERLE, double-talk and 100-client comparisons")
    parser.add_argument("--fan-out-only", action="store_true")
    parser.add_argument("--double-talk-only", action="store_true", help="only the double-talk section")
    asyncio.run(main(parser.parse_args()))
