#!/usr/bin/env python3
"""Runs the examples against a live server on the test sound card: the Python clients in
examples/python and every shell command in examples/curl.md.

    .venv/bin/python Tests/EndToEnd/check_examples.py [--binary .build/debug/audiogate] [--device pulse] [--only NAME]

The test card plays what it is given and captures it again, so each check plays into it (`paplay`
for the room, the examples for the server's speaker) and listens with the server's own HTTP capture.
  record.py      writes a WAV of the asked length, rate and channels holding the room's 440 Hz tone, gapless
  play.py        a 440 Hz WAV and raw stdin are heard whole and gapless, the `end` mark comes back
                 once it was heard; SIGINT sends `clear` and the speaker falls silent
  echo_agent.py  (--level-detection) a 600 Hz burst is heard and played back once (--turns 1); a loud burst while it talks
                 cuts it off (barge-in, `cleared`) and is answered; SIGINT ends it at once
  curl.md        every command of every ```sh block, in order, on the test server's port, in a temporary
                 directory holding speech.wav and speech.raw (the server's --data-dir is temporary too):
                 each must exit 0 with HTTP 2xx (curl --fail-with-body); JSON answers parse and carry no
                 error, WAV outputs are valid; known commands have further checks (lengths, tones, volume
                 read back). Shell variables a command sets (id=$(...)) reach the next ones. A command
                 whose comment says "until Ctrl-C" gets SIGINT after 2 s. Compressed outputs are read
                 back with ffprobe/ffmpeg; the speech-API upload goes to a local stand-in ($SPEECH_API).
A check that fails while the hypervisor was stealing CPU or the CPUs were saturated (/proc/stat) runs
once more.
Environment: AUDIOGATE_BINARY (default .build/debug/audiogate), AUDIOGATE_TEST_DEVICE (pulse),
AUDIOGATE_LOG_LEVEL (warning). Needs pulseaudio-utils (paplay), sox, curl, numpy and websockets.
"""
import argparse
import ast
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import wave

import numpy as np

import e2e
from e2e import RATE, ROOT, Listener, check, dbfs, room, stop_room, tone, tone_track, wait_for, write_wav

EXAMPLES = ROOT / "examples"
ROOM_DB = -13.5  # RMS of a sine at amplitude 0.3


# ---- signals

def dominant(x, rate):
    """(frequency, share of the power within 5 Hz of it) of a float signal."""
    x = np.asarray(x, dtype=np.float64)
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2
    spectrum[0] = 0
    peak = int(np.argmax(spectrum))
    width = max(1, int(5 * len(x) / rate))
    share = spectrum[max(0, peak - width):peak + width + 1].sum() / max(spectrum.sum(), 1e-30)
    return peak * rate / len(x), share


def regions(present, window_ms=20, bridge_ms=60):
    """[(start s, end s)] of the runs of True windows; gaps up to bridge_ms are joined."""
    runs = []
    for i, on in enumerate(present):
        if not on:
            continue
        if runs and (i - runs[-1][1]) * window_ms <= bridge_ms:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    return [(a * window_ms / 1000, b * window_ms / 1000) for a, b in runs]


def loud_regions(x, threshold_db=-30, rate=RATE, window_ms=20):
    n = rate * window_ms // 1000
    return regions([dbfs(x[i:i + n]) > threshold_db for i in range(0, len(x) - n + 1, n)], window_ms)


def longest_gap_ms(x, rate, start_s, end_s, floor=0.01):
    """The longest run of near-zero samples inside a tone (a sine at 0.3 spends microseconds near 0)."""
    inner = np.abs(x[int(start_s * rate) + rate // 50:int(end_s * rate) - rate // 50]) < floor
    longest = run = 0
    for quiet in inner:
        run = run + 1 if quiet else 0
        longest = max(longest, run)
    return 1000 * longest / rate


def describe(spans):
    return ", ".join(f"{a:.2f}-{b:.2f} s" for a, b in spans) or "none"


# ---- the examples as child processes

class Child:
    """A process whose stderr lines (progress lines split at \\r) are kept with their arrival time."""

    def __init__(self, argv, **kwargs):
        self.started = time.monotonic()
        self.process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, **kwargs)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stderr:
            self.lines.append((time.monotonic() - self.started, line.rstrip("\n")))

    def wait_line(self, pattern, seconds):
        """When (seconds since start) a line matching `pattern` arrived, waiting up to `seconds`."""
        return wait_for(lambda: next((t for t, line in self.lines if re.search(pattern, line)), None), seconds)

    def finish(self, seconds):
        """The exit code and the seconds since start, or (None, ...) after killing it when it overran."""
        try:
            code = self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            code = None
        elapsed = time.monotonic() - self.started
        self.reader.join(2)
        return code, elapsed

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def text(self):
        return "\n".join(line for _, line in self.lines)

    def events(self):
        """The server events the examples print as Python dicts."""
        found = []
        for _, line in self.lines:
            for match in re.finditer(r"\{'type': [^{}]*\}", line):
                found.append(ast.literal_eval(match.group(0)))
        return found


def example(name, *args):
    return [sys.executable, str(EXAMPLES / "python" / name), *args]


# ---- Python examples

def check_record(server, work):
    tone_file = work / "room-440.wav"
    write_wav(tone_file, tone(440, 6, 48000), 48000)
    player = room(tone_file)
    try:
        heard = wait_for(lambda: server.get("/v1/status")["level"]["rms_dbfs"] > -30, 3)
        check(heard is not None, "the room tone reaches the server's microphone")
        # The server's address as ws:// and as the http:// one it prints: both must work.
        for seconds, rate, channels, url in ((2, 16000, 1, server.base.replace("http", "ws")), (1, 48000, 2, server.base)):
            out = work / f"record-{rate}-{channels}.wav"
            child = Child(example("record.py", str(out), "--seconds", str(seconds), "--rate", str(rate),
                                  "--channels", str(channels), "--url", url))
            code, elapsed = child.finish(seconds + 10)
            what = f"record.py --seconds {seconds} --rate {rate} --channels {channels}"
            check(code == 0 and f"recording {seconds:5.2f}/{seconds:.2f} s" in child.text()
                  and f"wrote {out}" in child.text(),
                  f"{what}: exit {code} after {elapsed:.2f} s, progress line and 'wrote' on stderr")
            check(seconds - 0.1 <= elapsed <= seconds + 3, f"{what}: takes real time ({elapsed:.2f} s)")
            if not out.exists():
                check(False, f"{what}: no WAV written")
                continue
            with wave.open(str(out)) as w:
                shape = (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes())
                pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2") / 32768.0
            check(shape == (channels, 2, rate, seconds * rate),
                  f"{what}: WAV is {shape[0]} ch, {8 * shape[1]}-bit, {shape[2]} Hz, {shape[3]} frames")
            for channel in range(channels):
                x = pcm[channel::channels]
                frequency, share = dominant(x, rate)
                level = dbfs(x)
                gap = longest_gap_ms(x, rate, 0, seconds)
                check(abs(frequency - 440) <= 2 and share > 0.9 and abs(level - ROOM_DB) <= 3 and gap < 1,
                      f"{what}: channel {channel} holds the room tone: {frequency:.1f} Hz (share {share:.3f}), "
                      f"{level:.1f} dBFS, longest gap {gap:.2f} ms")
    finally:
        stop_room(player)


def check_play(server, work):
    ws = server.base.replace("http", "ws")
    server.quiet()
    wav = work / "play-440.wav"
    write_wav(wav, tone(440, 2, 24000), 24000)
    raw = tone(660, 1, 16000).tobytes()
    for what, argv, stdin, frequency, seconds in (
            ("play.py WAV", example("play.py", str(wav), "--url", ws), None, 440, 2.0),
            ("play.py stdin", example("play.py", "-", "--rate", "16000", "--url", ws), raw, 660, 1.0)):
        listener = Listener(server)
        child = Child(argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL)
        if stdin:
            child.process.stdin.buffer.write(stdin)
            child.process.stdin.close()
        code, elapsed = child.finish(seconds + 10)
        time.sleep(0.3)
        heard = listener.stop()
        marks = [e for e in child.events() if e["type"] == "mark"]
        check(code == 0 and marks == [{"type": "mark", "name": "end"}],
              f"{what}: exit {code}, the 'end' mark came back: {marks}")
        # The mark means heard: it cannot come before the audio's own length.
        check(seconds - 0.05 <= elapsed <= seconds + 2.5, f"{what}: mark after {elapsed:.2f} s for {seconds} s of audio")
        spans = loud_regions(heard)
        check(len(spans) == 1 and abs(spans[0][1] - spans[0][0] - seconds) <= 0.1,
              f"{what}: the speaker played one run of {seconds} s ({describe(spans)})")
        if spans:
            a, b = spans[0]
            x = heard[int(a * RATE):int(b * RATE)]
            found, share = dominant(x, RATE)
            level = dbfs(x)
            gap = longest_gap_ms(heard, RATE, a, b)
            check(abs(found - frequency) <= 3 and share > 0.9 and abs(level - ROOM_DB) <= 3 and gap < 1,
                  f"{what}: heard {found:.1f} Hz (share {share:.3f}) at {level:.1f} dBFS, longest gap {gap:.2f} ms")

    # Ctrl-C: play.py sends clear, prints what the server says and stops; the speaker falls silent.
    long_wav = work / "play-long.wav"
    write_wav(long_wav, tone(440, 10, 24000), 24000)
    server.quiet()
    listener = Listener(server)
    child = Child(example("play.py", str(long_wav), "--url", ws))
    try:
        playing = wait_for(lambda: server.get("/v1/status")["playback"]["queued_ms"] > 0, 5)
        check(playing is not None, "play.py: the long WAV is queued")
        time.sleep(1.5)
        at = listener.seconds()
        child.process.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        code, _ = child.finish(5)
        took = time.monotonic() - interrupted
        queued = wait_for(lambda: server.get("/v1/status")["playback"]["queued_ms"] == 0, 1)
        time.sleep(0.8)
    finally:
        child.kill()
        heard = listener.stop()
    cleared = [e for e in child.events() if e["type"] == "cleared"]
    check(code == 130 and took < 2 and "stopped" in child.text(),
          f"play.py SIGINT: exit {code} (130 is Ctrl-C's) after {took:.2f} s, prints 'stopped'")
    check(len(cleared) == 1 and 500 <= cleared[0]["played_ms"] <= 3000 and cleared[0]["flushed_ms"] > 0,
          f"play.py SIGINT: sent clear, server answered {cleared}")
    check(queued is not None, "play.py SIGINT: nothing left queued")
    spans = regions(tone_track(heard, 440) > -35)
    after = heard[int((at + 0.3) * RATE):]
    stopped = spans[-1][1] - at if spans else -1
    check(len(spans) == 1 and -0.02 <= stopped <= 0.3 and dbfs(after) < -60,
          f"play.py SIGINT: the tone ({describe(spans)}) stops {1000 * stopped:.0f} ms after SIGINT at {at:.2f} s, "
          f"then {dbfs(after):.1f} dBFS")


def agent_ready(server):
    """The agent's microphone socket is subscribed (the Listener's is HTTP)."""
    return wait_for(lambda: any(c["transport"] != "http" for c in server.get("/v1/status")["capture"]["clients"]), 5)


def check_echo_agent(server, work):
    ws = server.base.replace("http", "ws")
    burst = work / "burst-600.wav"
    write_wav(burst, tone(600, 1.0, 48000), 48000)
    server.quiet()

    # One turn: the burst is heard, played back once, and the agent exits after its mark.
    listener = Listener(server)
    child = Child(example("echo_agent.py", "--level-detection", "--turns", "1", "--url", ws))
    try:
        check(agent_ready(server) is not None, "echo_agent.py: listening")
        spoke = time.monotonic() - child.started
        room(burst).wait()
        code, elapsed = child.finish(10)
        time.sleep(0.7)  # anything the agent might still say
    finally:
        child.kill()
        heard = listener.stop()
    said = re.search(r"heard (\d+\.\d+) s, echoing it", child.text())
    marks = [e for e in child.events() if e["type"] == "mark"]
    check(said is not None and 1.3 <= float(said.group(1)) <= 1.8,
          f"echo_agent.py: heard the 1 s burst plus 0.5 s of silence ({said.group(1) if said else None} s)")
    check(code == 0 and marks == [{"type": "mark", "name": "turn-0"}],
          f"echo_agent.py --turns 1: exit {code}, marks {marks}")
    check(elapsed - spoke <= 1.0 + 0.5 + 1.5 + 2.5,
          f"echo_agent.py --turns 1: exits {elapsed - spoke:.2f} s after the burst began (1 s burst, 0.5 s silence, 1.5 s answer)")
    spans = regions(tone_track(heard, 600) > -35)
    ok = len(spans) == 2
    if ok:
        (a1, b1), (a2, b2) = spans
        echo = heard[int(a2 * RATE):int(b2 * RATE)]
        ok = (abs(b1 - a1 - 1) <= 0.1 and abs(b2 - a2 - 1) <= 0.1 and 0.45 <= a2 - b1 <= 2.0
              and abs(dbfs(echo) - dbfs(heard[int(a1 * RATE):int(b1 * RATE)])) <= 3)
        detail = f"echo {b2 - a2:.2f} s, {a2 - b1:.2f} s after the burst, {dbfs(echo):.1f} dBFS"
    else:
        detail = "600 Hz heard at " + describe(spans)
    check(ok, f"echo_agent.py: the card heard the burst, then its echo once ({detail})")

    # Barge-in: a quiet utterance is echoed; a loud burst over the echo stops it and is answered.
    quiet_burst = work / "burst-500.wav"
    loud_burst = work / "burst-800.wav"
    write_wav(quiet_burst, tone(500, 2.0, 48000, amplitude=0.1), 48000)
    write_wav(loud_burst, tone(800, 0.8, 48000, amplitude=0.7), 48000)
    server.quiet()
    listener = Listener(server)
    child = Child(example("echo_agent.py", "--level-detection", "--turns", "2", "--url", ws))
    try:
        check(agent_ready(server) is not None, "echo_agent.py: listening")
        room(quiet_burst).wait()
        answering = child.wait_line(r"echoing it", 3)
        check(answering is not None, "echo_agent.py: answers the quiet utterance")
        time.sleep(0.6)
        room(loud_burst).wait()
        code, elapsed = child.finish(8)
        time.sleep(0.7)
    finally:
        child.kill()
        heard = listener.stop()
    barge = re.search(r"barge-in at (-?\d+\.\d) dBFS", child.text())
    cleared = [e for e in child.events() if e["type"] == "cleared"]
    marks = [e for e in child.events() if e["type"] == "mark"]
    # The chunk that triggers may be only partly filled by the burst (-6 dBFS), as the burst's onset
    # falls anywhere in a chunk; the agent's own echo of the quiet utterance reads -23 dBFS. Above
    # -18, the trigger was the burst and not the echo, whatever the onset's phase.
    check(barge is not None and float(barge.group(1)) > -18,
          f"echo_agent.py: barge-in detected ({barge.group(0) if barge else 'no barge-in line'})")
    check(len(cleared) == 1 and cleared[0]["flushed_ms"] >= 500,
          f"echo_agent.py: its answer was cut off: {cleared}")
    answers = [float(a) for a in re.findall(r"heard (\d+\.\d+) s", child.text())]
    check(code == 0 and len(answers) == 2 and abs(answers[1] - 1.3) <= 0.15
          and marks == [{"type": "mark", "name": "turn-1"}],
          f"echo_agent.py --turns 2: exit {code}, answers of {answers} s (the second: 0.8 s burst and 0.5 s "
          f"of silence), marks {marks}")
    quiet_spans = regions(tone_track(heard, 500) > -35)
    loud_spans = regions(tone_track(heard, 800) > -35)
    ok = len(quiet_spans) >= 2 and len(loud_spans) == 2 and len(cleared) == 1
    if ok:
        room_span, echo_span = quiet_spans[0], quiet_spans[1]
        reaction = echo_span[1] - loud_spans[0][0]
        ok = (abs(room_span[1] - room_span[0] - 2) <= 0.1
              and abs(echo_span[1] - echo_span[0] - cleared[0]["played_ms"] / 1000) <= 0.15
              and 0 <= reaction <= 0.4
              and all(abs(b - a - 0.8) <= 0.1 for a, b in loud_spans) and loud_spans[1][0] >= loud_spans[0][1] + 0.45)
        detail = f"its answer stopped {1000 * reaction:.0f} ms after the loud burst began"
    else:
        detail = "unexpected"
    check(ok, f"echo_agent.py: card heard 500 Hz at {describe(quiet_spans)} (room 2 s, the answer until cleared), "
              f"800 Hz at {describe(loud_spans)} (burst, answer); {detail}")

    # SIGINT while idle: a clean, quick exit.
    child = Child(example("echo_agent.py", "--url", ws))
    try:
        agent_ready(server)
        child.process.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        code, _ = child.finish(5)
        took = time.monotonic() - interrupted
    finally:
        child.kill()
    check(code == 130 and took < 1.5 and "Traceback" not in child.text(),
          f"echo_agent.py SIGINT: exit {code} (130 is Ctrl-C's) after {took:.2f} s{', ' + child.text() if child.text() else ''}")


# ---- examples/curl.md

def shell_commands(markdown):
    """(section, comment, command) for each command in the ```sh blocks; `\\` continues a line."""
    section, in_block, comment, command = "", False, "", ""
    for line in markdown.splitlines():
        stripped = line.strip()
        if not in_block:
            if line.startswith("#"):
                section = line.lstrip("#").strip()
            elif stripped == "```sh":
                in_block, comment = True, ""
            continue
        if stripped == "```":
            in_block = False
        elif command:
            command += "\n" + line
        elif stripped.startswith("#"):
            comment = stripped.lstrip("# ")
            continue
        elif not stripped:
            comment = ""
            continue
        else:
            command = line
        if command and not command.endswith("\\"):
            yield section, comment, command
            command = ""


# Every request must succeed; variables set by one command reach the next (e.g. an id read from JSON).
PRELUDE = """set -o pipefail
curl() { command curl --fail-with-body "$@"; }
[ -f "$STATE" ] && . "$STATE"
set -a
"""
EPILOGUE = """
status=$?
set +a
export -p | grep -v '^declare -[a-z]*r' > "$STATE"
exit $status
"""


def run_shell(command, cwd, state, interrupt_after=None, limit=60):
    started = time.monotonic()
    process = subprocess.Popen(["bash", "-c", PRELUDE + command + EPILOGUE], cwd=cwd, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                               env=dict(os.environ, STATE=str(state)))
    try:
        out, err = process.communicate(timeout=interrupt_after or limit)
        ended = "exited"
    except subprocess.TimeoutExpired:
        # What a user's Ctrl-C does: SIGINT to the whole pipeline.
        os.killpg(process.pid, signal.SIGINT)
        ended = "interrupted" if interrupt_after else f"still running after {limit} s"
        try:
            out, err = process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
    return dict(code=process.returncode, out=out, err=err, ended=ended, seconds=time.monotonic() - started)


def wav_info(path):
    """(channels, bits, rate, frames, header's data size == data present, samples as floats)."""
    data = path.read_bytes()
    with wave.open(str(path)) as w:
        shape = (w.getnchannels(), 8 * w.getsampwidth(), w.getframerate(), w.getnframes())
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2") / 32768.0
    header_size = int.from_bytes(data[40:44], "little") if data[36:40] == b"data" else None
    return shape, header_size == len(data) - 44, pcm


def json_answer(result):
    try:
        return json.loads(result["out"])
    except ValueError:
        return None


# Further checks for the commands in curl.md today, found by a piece of their text. Each returns
# (ok, what). A command without one still gets the generic checks; one that matches nothing fails,
# so the doc and this list move together.
def expect_recorded_wav(result, work, server):
    shape, sized, pcm = wav_info(work / "speech.wav")
    frequency, share = dominant(pcm, 16000)
    return (shape == (1, 16, 16000, 80000) and sized and abs(frequency - 440) <= 2 and share > 0.9,
            f"speech.wav is {shape[0]} ch {shape[1]}-bit {shape[2]} Hz, {shape[3] / shape[2]:.2f} s, "
            f"header size {'matches' if sized else 'wrong'}; the room tone at {frequency:.1f} Hz "
            f"(share {share:.3f}), {dbfs(pcm):.1f} dBFS")


def expect_f32(result, work, server):
    data = np.frombuffer((work / "capture.f32").read_bytes(), dtype="<f4")
    left, right = data[0::2], data[1::2]
    frequency, share = dominant(left, 24000)
    return (len(data) == 2 * 24000 * 2 and np.all(np.abs(data) <= 1) and abs(frequency - 440) <= 2
            and np.allclose(left, right),
            f"capture.f32 holds {len(data) // 2} stereo frames (2 s at 24 kHz), equal channels, "
            f"{frequency:.1f} Hz (share {share:.3f})")


def expect_live_stat(result, work, server):
    text = result["out"] + result["err"]
    samples = re.search(r"Samples read:\s+(\d+)", text)
    rough = re.search(r"Rough\s+frequency:\s+(\d+)", text)
    ok = samples and int(samples.group(1)) >= 8000 and rough and abs(int(rough.group(1)) - 440) <= 5
    return (bool(ok), f"sox stat after Ctrl-C: {samples.group(1) if samples else '?'} samples, "
                      f"rough frequency {rough.group(1) if rough else '?'} Hz")


def expect_queued(stream, duration_ms):
    def expectation(result, work, server):
        answer = json_answer(result) or {}
        return (answer.get("stream") == stream and abs(answer.get("duration_ms", 0) - duration_ms) <= 5,
                f"answer {answer}")
    return expectation


def expect_waited(result, work, server):
    answer = json_answer(result) or {}
    return (abs(answer.get("duration_ms", 0) - 1500) <= 5 and answer.get("played_ms", 0) >= 1450
            and result["seconds"] >= 1.45,
            f"answer {answer} after {result['seconds']:.2f} s")


def expect_flushed(at_least_ms):
    def expectation(result, work, server):
        answer = json_answer(result) or {}
        return ({"flushed_ms", "played_ms"} <= answer.keys() and answer["flushed_ms"] >= at_least_ms,
                f"answer {answer}")
    return expectation


def expect_volume(key, value):
    def expectation(result, work, server):
        answer, now = json_answer(result) or {}, server.get("/v1/volume")
        return answer.get(key) == value and now.get(key) == value, f"answer {answer}, GET /v1/volume {now}"
    return expectation


def expect_keys(*keys):
    def expectation(result, work, server):
        answer = json_answer(result) or {}
        return set(keys) <= answer.keys(), f"answer has {', '.join(keys)}"
    return expectation


def expect_status(result, work, server):
    answer = json_answer(result) or {}
    states = (answer.get("capture", {}).get("state"), answer.get("playback", {}).get("state"))
    # A device nobody used for --device-idle-ms is stopped ("idle") and starts with the next client.
    return all(state in ("running", "idle") for state in states), f"capture and playback {states}"


def expect_metrics(result, work, server):
    lines = result["out"].splitlines()
    return (len(lines) >= 5 and all("audiogate_" in line for line in lines),
            f"{len(lines)} audiogate_ metric lines")


def expect_segment(result, work, server):
    shape, _, pcm = wav_info(work / "notes-0.wav")
    frequency, share = dominant(pcm, 16000) if len(pcm) else (0, 0)
    seconds = shape[3] / shape[2]
    return (shape[:3] == (1, 16, 16000) and 1.5 <= seconds <= 10 and abs(frequency - 440) <= 2 and share > 0.9,
            f"notes-0.wav is {shape[0]} ch {shape[1]}-bit {shape[2]} Hz, {seconds:.2f} s while recording; "
            f"the room tone at {frequency:.1f} Hz (share {share:.3f})")


def expect_output(text):
    def expectation(result, work, server):
        return result["out"].strip() == text, f"prints {result['out'].strip()!r}"
    return expectation


def probe(path):
    """ffprobe's first audio stream and the format's duration, or ({}, 0) when it cannot read the file."""
    result = subprocess.run(["ffprobe", "-v", "error", "-of", "json", "-show_streams", "-show_format", str(path)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        return {}, 0.0
    info = json.loads(result.stdout)
    stream = next((s for s in info.get("streams", []) if s.get("codec_type") == "audio"), {})
    return stream, float(info.get("format", {}).get("duration", 0) or 0)


def decoded(path, rate):
    """The file decoded by ffmpeg (any error fails) to mono float at `rate`."""
    result = subprocess.run(["ffmpeg", "-v", "error", "-xerror", "-i", str(path), "-ac", "1", "-ar", str(rate),
                             "-f", "f32le", "-"], capture_output=True)
    return np.frombuffer(result.stdout, dtype="<f4") if result.returncode == 0 else np.zeros(0, dtype="<f4")


def mp4_boxes(data):
    """The top-level box names of an MP4 file, in order."""
    names, offset = [], 0
    while offset + 8 <= len(data):
        size = int.from_bytes(data[offset:offset + 4], "big")
        names.append(data[offset + 4:offset + 8].decode("latin-1"))
        if size == 1:
            size = int.from_bytes(data[offset + 8:offset + 16], "big")
        if size < 8:
            break
        offset += size
    return names


def expect_encoded(name, codec, seconds, tolerance):
    """A compressed file ffprobe names `codec`, decoding to `seconds` holding the room's 440 Hz tone."""
    def expectation(result, work, server):
        stream, _ = probe(work / name)
        pcm = decoded(work / name, 16000)
        length = len(pcm) / 16000
        frequency, share = dominant(pcm[8000:], 16000) if len(pcm) > 16000 else (0, 0)
        boxes = mp4_boxes((work / name).read_bytes()) if name.endswith(".m4a") else []
        index_first = not boxes or ("moov" in boxes and "mdat" in boxes and boxes.index("moov") < boxes.index("mdat"))
        return (stream.get("codec_name") == codec and abs(length - seconds) <= tolerance
                and abs(frequency - 440) <= 2 and share > 0.5 and index_first,
                f"{name}: {stream.get('codec_name')}, {length:.3f} s decoded, the room tone at {frequency:.1f} Hz "
                f"(share {share:.3f}){', boxes ' + ' '.join(boxes) if boxes else ''}")
    return expectation


class SpeechStandIn:
    """A local stand-in for a transcription API: takes one multipart upload and keeps the file part."""

    def __init__(self):
        import http.server
        stand_in = self
        self.uploads = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                boundary = self.headers.get("Content-Type", "").partition("boundary=")[2].strip('"').encode()
                for part in body.split(b"--" + boundary):
                    head, _, content = part.partition(b"\r\n\r\n")
                    if b'name="file"' in head:
                        stand_in.uploads.append(content.rsplit(b"\r\n", 1)[0])
                answer = json.dumps({"text": "(stand-in transcript)"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/audio/transcriptions"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


SPEECH_API = None


def expect_uploaded(result, work, server):
    uploads = SPEECH_API.uploads if SPEECH_API else []
    data = uploads[-1] if uploads else b""
    boxes = mp4_boxes(data)
    same = data == (work / "meeting.m4a").read_bytes() if (work / "meeting.m4a").exists() else False
    answer = json_answer(result) or {}
    return (same and "moov" in boxes and boxes.index("moov") < boxes.index("mdat") and "text" in answer,
            f"the stand-in got meeting.m4a ({len(data)} bytes, boxes {' '.join(boxes)}), answered {answer}")


EXPECTATIONS = [  # a regular expression on the command as one line, without its trailing comment
    (r"-o speech\.wav '\S+/v1/capture\?container=wav&seconds=5'$", expect_recorded_wav),
    (r"-o capture\.f32 ", expect_f32),
    (r"/v1/capture' \| sox -t raw .* stat$", expect_live_stat),
    (r"--data-binary @speech\.wav '\S+/v1/playback'$", expect_queued("default", 1500)),
    (r"--data-binary @speech\.wav '\S+/v1/playback\?wait=true'$", expect_waited),
    (r"--data-binary @speech\.raw ", expect_queued("default", 1500)),
    (r"^sox speech\.wav .* -T - .*stream=tts'$", expect_queued("tts", 1500)),
    # The tts stream was queued just before: most of its 1.5 s is still to come.
    (r"-X DELETE '\S+/v1/playback\?stream=tts'$", expect_flushed(500)),
    (r"-X DELETE '\S+/v1/playback'$", expect_flushed(0)),
    (r"-X PUT .* -d '\{\"playback\":0\.5\}' '\S+/v1/volume'$", expect_volume("playback", 0.5)),
    (r"-X PUT .* -d '\{\"muted\":true\}' '\S+/v1/volume'$", expect_volume("muted", True)),
    (r"^curl -s '\S+/v1/volume'$", expect_keys("playback", "muted")),
    (r"^curl -s '\S+/v1/status'$", expect_status),
    (r"^curl -s '\S+/v1/info'$", expect_keys("version", "capture", "playback", "client", "limits")),
    (r"^curl -s '\S+/metrics' \| grep audiogate_$", expect_metrics),
    (r"-o notes-0\.wav \S+/segments/0\.wav\"$", expect_segment),
    (r"-r 0-43 \S+ \| wc -c$", expect_output("44")),
    (r"-o meeting\.ogg '\S+/v1/capture\?container=ogg&bitrate=24k&seconds=5'$", expect_encoded("meeting.ogg", "opus", 5, 0.02)),
    (r"-o meeting-server\.ogg \S+/audio\.ogg\"$", expect_encoded("meeting-server.ogg", "opus", 3, 0.02)),
    (r"-o meeting\.m4a \S+/audio\.m4a\"$", expect_encoded("meeting.m4a", "aac", 3, 0.07)),
    (r"SPEECH_API.* -F file=@meeting\.m4a$", expect_uploaded),
]


def write_fixtures(work):
    """The inputs curl.md names, written afresh before each command so every recipe stands alone."""
    write_wav(work / "speech.wav", tone(660, 1.5, 16000), 16000)
    (work / "speech.raw").write_bytes(tone(660, 1.5, 24000).tobytes())


def check_curl(server, work):
    global SPEECH_API
    # The speech-API recipe posts to $SPEECH_API: a local stand-in here, so the check runs offline.
    SPEECH_API = SpeechStandIn()
    os.environ["SPEECH_API"] = SPEECH_API.url
    os.environ.setdefault("OPENAI_API_KEY", "stand-in")
    try:
        check_curl_commands(server, work)
    finally:
        SPEECH_API.close()


def check_curl_commands(server, work):
    markdown = (EXAMPLES / "curl.md").read_text()
    commands = list(shell_commands(markdown))
    check(len(commands) >= 10, f"curl.md: {len(commands)} commands found in its ```sh blocks")
    docs = work / "curl"
    docs.mkdir()
    state = work / "curl-state.sh"
    room_file = work / "room-curl.wav"
    write_wav(room_file, tone(440, 60, 48000), 48000)
    player = room(room_file)
    used = set()
    # The doc's volume recipes change the server's volume: start from full and unmuted.
    request = urllib.request.Request(server.base + "/v1/volume", method="PUT", data=b'{"playback":1,"muted":false}',
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=5).close()
    try:
        wait_for(lambda: server.get("/v1/status")["level"]["rms_dbfs"] > -30, 3)
        for section, comment, command in commands:
            write_fixtures(docs)
            before = {p.name: p.stat().st_mtime_ns for p in docs.iterdir()}
            local = re.sub(r"(127\.0\.0\.1|localhost):8750", f"127.0.0.1:{server.port}", command)
            result = run_shell(local, docs, state, interrupt_after=2 if "Ctrl-C" in comment else None)
            line = re.sub(r"\s+#[^'\"]*$", "", " ".join(command.replace("\\\n", " ").split()))
            ended_ok = result["ended"] == "interrupted" or (result["ended"] == "exited" and result["code"] == 0)
            problems = []
            if not ended_ok:
                problems.append(f"{result['ended']}, exit {result['code']}: {(result['err'] or result['out']).strip()[:300]}")
            if result["out"].lstrip().startswith("{"):
                answer = json_answer(result)
                if not isinstance(answer, dict) or "error" in answer:
                    problems.append(f"answer {result['out'].strip()[:300]}")
            written = {p.name for p in docs.iterdir() if before.get(p.name) != p.stat().st_mtime_ns}
            for name in re.findall(r"-o\s+'?([^\s'\"$]+)'?(?:\s|$)", line):
                if name not in written or (docs / name).stat().st_size == 0:
                    problems.append(f"{name} not written")
            for name in sorted(written):
                if name.endswith(".wav"):
                    try:
                        wav_info(docs / name)
                    except (wave.Error, EOFError, ValueError) as error:
                        problems.append(f"{name} is no valid WAV: {error}")
            detail = ""
            known = [(p, e) for p, e in EXPECTATIONS if re.search(p, line)][:1]
            for pattern, expectation in known:
                used.add(pattern)
                if not problems:
                    ok, detail = expectation(result, docs, server)
                    if not ok:
                        problems.append(detail)
            check(not problems, f"curl.md [{section}] {line[:110]}: "
                                f"{'; '.join(problems) if problems else result['ended']} "
                                f"in {result['seconds']:.2f} s{'; ' + detail if detail and not problems else ''}")
    finally:
        stop_room(player)
    unused = [pattern for pattern, _ in EXPECTATIONS if pattern not in used]
    check(not unused, f"curl.md: every known recipe was found and checked{': missing ' + repr(unused) if unused else ''}")


def check_errors(server, work):
    """Wrong addresses and refused requests end each example with one line and a non-zero status."""
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    closed_port = free.getsockname()[1]
    free.close()
    wav = work / "short.wav"
    write_wav(wav, tone(440, 0.2, 24000), 24000)
    cases = [
        ("record.py unreachable", ["record.py", str(work / "x.wav"), "--seconds", "1",
                                   "--url", f"http://127.0.0.1:{closed_port}"], "cannot reach audiogate"),
        ("record.py bad scheme", ["record.py", str(work / "x.wav"), "--url", "ftp://127.0.0.1:1"], "--url must be"),
        ("record.py refused rate", ["record.py", str(work / "x.wav"), "--rate", "12345", "--url", server.base],
         "HTTP 400: invalid 'rate'"),
        ("play.py unreachable", ["play.py", str(wav), "--url", f"ws://127.0.0.1:{closed_port}"], "cannot reach audiogate"),
        ("echo_agent.py unreachable", ["echo_agent.py", "--url", f"https://127.0.0.1:{closed_port}"],
         "cannot reach audiogate"),
    ]
    for what, argv, expected in cases:
        child = Child(example(*argv))
        code, _ = child.finish(10)
        lines = [line for line in child.text().splitlines() if line.strip()]
        check(code == 1 and len(lines) == 1 and expected in lines[0],
              f"{what}: exit {code}, one line containing {expected!r}: {lines}")


CHECKS = [("record", check_record), ("play", check_play), ("echo-agent", check_echo_agent), ("curl", check_curl),
          ("errors", check_errors)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    e2e.add_binary_argument(parser)
    parser.add_argument("--device", default=os.environ.get("AUDIOGATE_TEST_DEVICE", "pulse"))
    parser.add_argument("--only", action="append", help="run only this check (record, play, echo-agent, curl, errors)")
    args = parser.parse_args()
    # These checks press Ctrl-C. Started in the background, the harness inherits SIGINT ignored
    # and would pass that on to every example; a handler of its own gives them the default again.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for tool in ("paplay", "sox", "curl"):
        if not shutil.which(tool):
            sys.exit(f"check-examples: {tool} is missing (scripts/install-deps.sh test)")
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"check-examples: no server binary at {args.binary} (swift build)")
    started = time.monotonic()
    work = pathlib.Path(tempfile.mkdtemp(prefix="audiogate-examples-"))
    # Server-side recordings the recipes make stay in the temporary directory.
    server = e2e.Server(args.binary, args.device, data_dir=work / "data")
    failed = []
    try:
        if not check(server.start(capture=True), "the server starts and its capture runs"):
            failed.append("server")
        for name, function in CHECKS if not failed else []:
            if args.only and name not in args.only:
                continue
            for attempt in e2e.attempts(busy_limit=90):
                print(f"-- {name}", flush=True)
                mark = e2e.mark()
                attempt_dir = work / f"{name}-{attempt.number}"
                attempt_dir.mkdir()
                try:
                    function(server, attempt_dir)
                except Exception as error:  # a check that crashed failed; the others still run
                    check(False, f"{name}: {type(error).__name__}: {error}")
                if not e2e.failures_since(mark):
                    break
                if not attempt.retry():
                    failed.append(name)
                    break
                # A real-time check that failed while the CPU was taken away (hypervisor steal) or
                # saturated by other work earns a second try.
                print(f"-- {name} failed while the CPUs were {attempt.steal:.0f}% stolen, {attempt.busy:.0f}% busy: "
                      "once more")
                e2e.rewind(mark)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"example checks: {'failed: ' + ', '.join(failed) if failed else 'passed'} "
          f"in {time.monotonic() - started:.0f} s")
    e2e.finish()


if __name__ == "__main__":
    main()
