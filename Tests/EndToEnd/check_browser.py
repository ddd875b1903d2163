#!/usr/bin/env python3
"""Real-browser check of the demo page at GET / (run by `make test`).

Starts the server on the test sound card, plays a tone into the card so the microphone is not
silent, opens the page in headless Chromium and checks that:
  - capture chunks arrive and the level meter moves with the tone (the page's data-* counters);
  - "Listen in browser" loads its AudioWorklet (from a blob: URL, under the page's CSP);
  - "Record 5 s and play back" records and plays back (its mark comes back);
  - "Speak" reaches the server: its mark comes back and the server's own capture hears its 1 s of
    440 Hz whole;
  - "Stop" cuts playback off (a `cleared` event);
  - the browser logged no errors (CSP violations included);
  - no Chromium process is left behind.
A run that fails while the hypervisor was stealing CPU (/proc/stat) runs once more.

    .venv/bin/python Tests/EndToEnd/check_browser.py [--binary .build/debug/audiogate] [--screenshot docs/browser-demo.png]

Needs: Debian packages chromium, chromium-driver, pulseaudio-utils (paplay); selenium and numpy in
.venv (scripts/install-deps.sh test). Environment: AUDIOGATE_BINARY (default .build/debug/audiogate,
which is built with `swift build` first unless AUDIOGATE_NO_BUILD=1), AUDIOGATE_BROWSER_PORT (default:
a free port), AUDIOGATE_BROWSER_SCREENSHOT (a path: save a screenshot of the page there; none by
default), AUDIOGATE_BROWSER_SCHEME (light or dark, default light).
"""

import argparse
import ctypes
import functools
import math
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

import e2e
from e2e import DEFAULT_BINARY, ROOT, check

SCHEME = os.environ.get("AUDIOGATE_BROWSER_SCHEME", "light")
BROWSER_NAMES = ("chromium", "chromedriver", "chrome_crashpad")
# The page is polled every 0.1 s.
wait_for = functools.partial(e2e.wait_for, interval=0.1)


def write_tone(path, seconds, frequency, rate=48000):
    """A tone at -10 dBFS, amplitude-modulated at 1.5 Hz so the meter and waveform visibly move."""
    t = np.arange(int(seconds * rate)) / rate
    envelope = 0.55 + 0.45 * np.sin(2 * np.pi * 1.5 * t)
    fade = np.minimum(1.0, np.minimum(t, seconds - t) / 0.02)
    e2e.write_wav(path, np.trunc(32767 * 0.32 * envelope * fade * np.sin(2 * np.pi * frequency * t)), rate)


def page_value(driver, attribute):
    return driver.find_element(By.ID, "meter").get_attribute("data-" + attribute)


def log_text(driver):
    return driver.find_element(By.ID, "log").text


# ---- Chromium's processes: every one is found and ended, even when the run fails.

def become_subreaper():
    """Descendants whose parent dies (Chromium's crash handler and helpers) are re-parented to
    this process instead of init, so they can be found, ended and reaped here."""
    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def processes():
    """{pid: (name, state, parent, process group)} of every process."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        found[int(entry)] = (stat[stat.index("(") + 1:stat.rindex(")")], fields[0], int(fields[1]), int(fields[2]))
    return found


def browser_processes(group):
    """Chromium processes of ours: in chromedriver's process group, or re-parented to us."""
    me = os.getpid()
    return {pid: info for pid, info in processes().items()
            if (info[3] == group or info[2] == me) and info[0].startswith(BROWSER_NAMES)}


def end_browser(driver, service):
    """Quits the browser, then kills and reaps whatever of it is left. Returns the processes left."""
    if driver:
        try:
            driver.quit()
        except Exception as error:  # the browser may have died already
            print(f"     driver.quit: {type(error).__name__}")
    group = service.process.pid if service and service.process else None
    if group:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass
        service.process.wait()
    left = {}
    for _ in range(30):
        left = browser_processes(group)
        for pid, (_, state, parent, _) in left.items():
            if state != "Z":
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if parent == os.getpid():
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        if not left:
            break
        time.sleep(0.1)
    return left


# ---- one run

def attempt(binary, port, screenshot):
    work = pathlib.Path(tempfile.mkdtemp(prefix="audiogate-browser-"))
    tone = work / "tone.wav"
    write_tone(tone, 7.0, 330.0)
    server = e2e.Server(binary, "pulse", port=port, log_level=None, log=work / "server.log")
    player = None
    driver = None
    service = None
    try:
        if not server.start():
            check(False, "the server comes up: " + server.log_text()[-500:])
            return

        options = Options()
        options.binary_location = shutil.which("chromium")
        for flag in ["--headless=new", "--no-sandbox", "--autoplay-policy=no-user-gesture-required",
                     "--use-fake-ui-for-media-stream", "--window-size=1000,1000", "--disable-dev-shm-usage",
                     f"--user-data-dir={work / 'profile'}"]:
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        # Its own process group, so the browser can be ended as a whole.
        # A home of its own: Chromium keeps crash reports and dconf state there, never in the user's.
        home = work / "home"
        home.mkdir(exist_ok=True)
        service = Service(shutil.which("chromedriver"), popen_kw={"start_new_session": True},
                          env=dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                                   XDG_CACHE_HOME=str(home / ".cache")))
        driver = webdriver.Chrome(service=service, options=options)
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-color-scheme", "value": SCHEME}]})

        # 1. The microphone: the tone plays into the card while the page shows it.
        player = e2e.room(tone)
        driver.get(server.base + "/")
        check(driver.title == "audiogate demo", f"page loads (title {driver.title!r})")
        frames = wait_for(lambda: int(page_value(driver, "frames")) >= 50 or None, 8)
        check(frames is not None, f"capture chunks arrive ({page_value(driver, 'frames')} after load)")
        time.sleep(0.6)
        driver.find_element(By.ID, "record").click()
        rms_values, peak_values = [], []
        for _ in range(30):
            rms_values.append(float(page_value(driver, "rms")))
            peak_values.append(float(page_value(driver, "peak")))
            time.sleep(0.1)
        levels = int(page_value(driver, "levels"))
        frames = int(page_value(driver, "frames"))
        print(f"     chunks {frames}, level events {levels}, rms {min(rms_values):.1f}..{max(rms_values):.1f} dBFS, "
              f"peak max {max(peak_values):.1f} dBFS")
        # 3 s at one level event per 50 ms is 60; 20 leaves room for a slow machine.
        check(levels >= 20, f"level events arrive ({levels})")
        check(max(rms_values) > -30, f"the meter shows the tone (rms max {max(rms_values):.1f} dBFS)")
        check(max(rms_values) - min(rms_values) > 2, "the meter moves (rms range "
              f"{max(rms_values) - min(rms_values):.1f} dB)")
        check(driver.find_element(By.ID, "meter").get_attribute("aria-valuenow") not in (None, "-60"),
              "the meter's aria-valuenow follows the level")

        # The browser monitor: an AudioWorklet from a blob: URL (allowed by the page's CSP) at 16 kHz.
        driver.find_element(By.ID, "listen").click()
        check(wait_for(lambda: "listening in the browser at 16000 Hz" in log_text(driver), 5) is not None
              and driver.find_element(By.ID, "listen").get_attribute("aria-pressed") == "true",
              "listening in the browser starts an AudioWorklet at 16000 Hz")
        # Chromium's output is the same test card, so listening would feed the microphone back: stop it.
        driver.find_element(By.ID, "listen").click()
        check(wait_for(lambda: driver.find_element(By.ID, "listen").get_attribute("aria-pressed") == "false", 3)
              is not None, "listening stops again")

        # 2. Record 5 s and play back: the recording's mark comes back once it was heard.
        check(wait_for(lambda: "sent 5000 ms, mark 'recording'" in log_text(driver), 8) is not None,
              "record sends 5 s to the playback socket")
        queued = wait_for(lambda: server.get("/v1/status")["playback"]["queued_ms"] or None, 3)
        check(queued is not None, f"status shows the recording queued ({queued} ms)")
        check(wait_for(lambda: "mark 'recording' heard" in log_text(driver), 10) is not None,
              "the recording was played back (mark heard)")
        player.wait(timeout=10)
        wait_for(lambda: "drained" in log_text(driver), 3)

        # 3. Speak: the 1 s tone reaches the server and comes back whole through the card's capture.
        before = server.get("/v1/status")["playback"]["played_frames"]
        listener = e2e.Listener(server, seconds=3)
        time.sleep(0.3)
        driver.find_element(By.ID, "speak").click()
        check(wait_for(lambda: "mark 'tone' heard" in log_text(driver), 5) is not None, "the tone's mark is heard")
        listener.wait(15)
        after = server.get("/v1/status")["playback"]["played_frames"]
        samples = listener.stop()
        seconds_440 = e2e.tone_seconds(samples, 440)
        seconds_1000 = e2e.tone_seconds(samples, 1000)
        rms = math.sqrt(float(np.mean(samples * samples))) if len(samples) else 0
        print(f"     played frames {before} -> {after} (+{after - before}); server capture {len(samples)} samples, "
              f"rms {20 * math.log10(rms) if rms > 0 else -120:.1f} dBFS, 440 Hz for {seconds_440:.2f} s, "
              f"1 kHz for {seconds_1000:.2f} s")
        check(after > before, "playback played frames increase")
        check(abs(seconds_440 - 1.0) <= 0.1 and seconds_1000 == 0,
              f"the server's capture hears the whole 1 s of 440 Hz ({seconds_440:.2f} s)")

        # 4. Stop (barge-in): two tones queued, then stop; the socket reports `cleared`.
        driver.find_element(By.ID, "speak").click()
        driver.find_element(By.ID, "speak").click()
        time.sleep(0.4)
        driver.find_element(By.ID, "stop").click()
        check(wait_for(lambda: "cleared: played" in log_text(driver), 3) is not None, "stop clears the stream")
        check(wait_for(lambda: "stop: DELETE /v1/playback flushed" in log_text(driver), 3) is not None, "stop's DELETE answers")

        # 5. Status panel and browser errors.
        status = wait_for(lambda: driver.find_element(By.ID, "st-capture").text.startswith("running")
                          and driver.find_element(By.ID, "st-capture").text, 3)
        check(status is not None, f"status shows capture running ({driver.find_element(By.ID, 'st-capture').text})")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" or "Content Security Policy" in e["message"]]
        for e in errors:
            print("     browser:", e["message"])
        check(not errors, "no browser errors or CSP violations")

        # 6. A screenshot while the microphone hears something, when asked for.
        if screenshot:
            player = e2e.room(tone)
            time.sleep(2.5)
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            height = driver.execute_script("return document.documentElement.scrollHeight")
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": 1000, "height": height, "deviceScaleFactor": 1, "mobile": False})
            time.sleep(0.3)
            driver.save_screenshot(str(screenshot))
            print(f"     screenshot: {screenshot}")
    except Exception as error:  # a browser or page that misbehaves fails the run; cleanup still happens
        check(False, f"the run ended early: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
    finally:
        left = end_browser(driver, service)
        if service:
            check(not left, "no Chromium process left behind" + (f": {left}" if left else ""))
        if player:
            e2e.stop_room(player)
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    e2e.add_binary_argument(parser)
    parser.add_argument("--screenshot", type=pathlib.Path, default=os.environ.get("AUDIOGATE_BROWSER_SCREENSHOT"),
                        help="save a screenshot of the page here (e.g. docs/browser-demo.png)")
    args = parser.parse_args()
    for tool in ["chromium", "chromedriver", "paplay", "pactl"]:
        if not shutil.which(tool):
            sys.exit(f"check-browser: {tool} is missing (apt-get install -y chromium chromium-driver pulseaudio-utils)")
    if subprocess.run(["pactl", "info"], capture_output=True).returncode != 0:
        subprocess.run([str(ROOT / "scripts/test-card.sh"), "start"], check=True)
    if args.binary == DEFAULT_BINARY and os.environ.get("AUDIOGATE_NO_BUILD") != "1":
        subprocess.run(["swift", "build", "--product", "audiogate"], cwd=ROOT, check=True)
    become_subreaper()

    started = time.monotonic()
    for run in e2e.attempts():
        port = int(os.environ.get("AUDIOGATE_BROWSER_PORT") or e2e.free_port())
        attempt(args.binary, port, args.screenshot)
        if not e2e.failures() or not run.retry():
            break
        # The waits above allow a slow machine; a run that failed while the hypervisor was taking
        # the CPU away earns a second try.
        print(f"-- failed while the machine was stealing {run.steal:.0f}% of the CPU: once more", flush=True)
        e2e.rewind(0)

    failures = e2e.failures()
    print(f"browser check: {'failed: ' + ', '.join(failures) if failures else 'passed'} "
          f"in {time.monotonic() - started:.0f} s (steal {run.steal:.1f}%)")
    e2e.finish()


if __name__ == "__main__":
    main()
