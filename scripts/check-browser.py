#!/usr/bin/env python3
"""Real-browser check of the demo page at GET / (not part of `make test`: it needs a browser).

Starts the debug server on the test sound card, plays a tone into the card so the microphone is not
silent, opens the page in headless Chromium and checks that:
  - capture chunks arrive and the level meter moves with the tone (the page's data-* counters);
  - "Listen in browser" loads its AudioWorklet (from a blob: URL, under the page's CSP);
  - "Record 5 s and play back" records and plays back (its mark comes back);
  - "Speak" reaches the server: its mark comes back and the server's own capture hears 440 Hz;
  - "Stop" cuts playback off (a `cleared` event);
  - the browser logged no errors (CSP violations included);
and saves a screenshot to docs/browser-demo.png.

Needs: Debian packages chromium, chromium-driver, pulseaudio-utils (paplay); selenium in .venv
(`.venv/bin/pip install selenium`). Run from anywhere: `.venv/bin/python scripts/check-browser.py`.
Environment: AUDIOGATE_BROWSER_PORT (default 8779), AUDIOGATE_BINARY (default .build/debug/audiogate,
built with `swift build` first unless AUDIOGATE_NO_BUILD=1), AUDIOGATE_BROWSER_SCHEME (light or dark,
default light), AUDIOGATE_BROWSER_SCREENSHOT (default docs/browser-demo.png).
"""

import json
import math
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import wave

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ROOT = pathlib.Path(__file__).resolve().parent.parent
PORT = int(os.environ.get("AUDIOGATE_BROWSER_PORT", "8779"))
BASE = f"http://127.0.0.1:{PORT}"
BINARY = pathlib.Path(os.environ.get("AUDIOGATE_BINARY", ROOT / ".build/debug/audiogate"))
SCREENSHOT = pathlib.Path(os.environ.get("AUDIOGATE_BROWSER_SCREENSHOT", ROOT / "docs/browser-demo.png"))
SCHEME = os.environ.get("AUDIOGATE_BROWSER_SCHEME", "light")

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def get_json(path):
    with urllib.request.urlopen(BASE + path, timeout=5) as response:
        return json.load(response)


def write_tone(path, seconds, frequency, rate=48000):
    """A tone at -10 dBFS, amplitude-modulated at 1.5 Hz so the meter and waveform visibly move."""
    frames = bytearray()
    for i in range(int(seconds * rate)):
        t = i / rate
        envelope = 0.55 + 0.45 * math.sin(2 * math.pi * 1.5 * t)
        fade = min(1.0, t / 0.02, (seconds - t) / 0.02)
        frames += struct.pack("<h", int(32767 * 0.32 * envelope * fade * math.sin(2 * math.pi * frequency * t)))
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(frames))


def tone_share(samples, rate, frequency):
    """The share of the signal's power in the DFT bin at `frequency` (1.0 for a pure tone filling the window)."""
    n = len(samples)
    power = sum(s * s for s in samples) / n if n else 0.0
    if power == 0:
        return 0.0
    k = round(frequency * n / rate)
    re = sum(s * math.cos(2 * math.pi * k * i / n) for i, s in enumerate(samples))
    im = sum(s * math.sin(2 * math.pi * k * i / n) for i, s in enumerate(samples))
    amplitude = 2 * math.hypot(re, im) / n
    return amplitude * amplitude / 2 / power


def capture_http(seconds, out):
    """GET /v1/capture for `seconds` as 16 kHz mono s16le; stores the samples in out["samples"]."""
    url = f"{BASE}/v1/capture?rate=16000&channels=1&format=s16le&seconds={seconds}"
    with urllib.request.urlopen(url, timeout=seconds + 10) as response:
        data = response.read()
    out["samples"] = [v / 32768 for v in struct.unpack(f"<{len(data) // 2}h", data[: len(data) // 2 * 2])]


def page_value(driver, attribute):
    return driver.find_element(By.ID, "meter").get_attribute("data-" + attribute)


def log_text(driver):
    return driver.find_element(By.ID, "log").text


def wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return None


def main():
    for tool in ["chromium", "chromedriver", "paplay", "pactl"]:
        if not shutil.which(tool):
            sys.exit(f"check-browser: {tool} is missing (apt-get install -y chromium chromium-driver pulseaudio-utils)")
    if subprocess.run(["pactl", "info"], capture_output=True).returncode != 0:
        subprocess.run([str(ROOT / "scripts/test-card.sh"), "start"], check=True)
    if os.environ.get("AUDIOGATE_NO_BUILD") != "1":
        subprocess.run(["swift", "build", "--product", "audiogate"], cwd=ROOT, check=True)

    work = pathlib.Path(tempfile.mkdtemp())
    tone = work / "tone.wav"
    write_tone(tone, 7.0, 330.0)
    server_log = open(work / "server.log", "w")
    server = subprocess.Popen([str(BINARY), "serve", "--device", "pulse", "--port", str(PORT)],
                              stdout=server_log, stderr=subprocess.STDOUT)
    player = None
    driver = None
    try:
        if not wait_for(lambda: _healthy(), 10):
            sys.exit("check-browser: the server did not come up; see " + str(work / "server.log"))

        options = Options()
        options.binary_location = shutil.which("chromium")
        for flag in ["--headless=new", "--no-sandbox", "--autoplay-policy=no-user-gesture-required",
                     "--use-fake-ui-for-media-stream", "--window-size=1000,1000", "--disable-dev-shm-usage"]:
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-color-scheme", "value": SCHEME}]})

        # 1. The microphone: the tone plays into the card while the page shows it.
        player = subprocess.Popen(["paplay", str(tone)])
        driver.get(BASE + "/")
        check(driver.title == "audiogate demo", f"page loads (title {driver.title!r})")
        frames = wait_for(lambda: int(page_value(driver, "frames")) >= 50 or None, 5)
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
        check(levels >= 20, f"level events arrive ({levels})")
        check(max(rms_values) > -30, f"the meter shows the tone (rms max {max(rms_values):.1f} dBFS)")
        check(max(rms_values) - min(rms_values) > 2, "the meter moves (rms range "
              f"{max(rms_values) - min(rms_values):.1f} dB)")
        check(driver.find_element(By.ID, "meter").get_attribute("aria-valuenow") not in (None, "-60"),
              "the meter's aria-valuenow follows the level")

        # The browser monitor: an AudioWorklet from a blob: URL (allowed by the page's CSP) at 16 kHz.
        driver.find_element(By.ID, "listen").click()
        check(wait_for(lambda: "listening in the browser at 16000 Hz" in log_text(driver), 3) is not None
              and driver.find_element(By.ID, "listen").get_attribute("aria-pressed") == "true",
              "listening in the browser starts an AudioWorklet at 16000 Hz")
        # Chromium's output is the same test card, so listening would feed the microphone back: stop it.
        driver.find_element(By.ID, "listen").click()
        check(wait_for(lambda: driver.find_element(By.ID, "listen").get_attribute("aria-pressed") == "false", 2)
              is not None, "listening stops again")

        # 2. Record 5 s and play back: the recording's mark comes back once it was heard.
        check(wait_for(lambda: "sent 5000 ms, mark 'recording'" in log_text(driver), 8) is not None,
              "record sends 5 s to the playback socket")
        queued = wait_for(lambda: _queued_ms(), 2)
        check(queued is not None, f"status shows the recording queued ({queued} ms)")
        check(wait_for(lambda: "mark 'recording' heard" in log_text(driver), 9) is not None,
              "the recording was played back (mark heard)")
        player.wait(timeout=5)
        wait_for(lambda: "drained" in log_text(driver), 3)

        # 3. Speak: the tone reaches the server and comes back through the card's capture.
        before = get_json("/v1/status")["playback"]["played_frames"]
        heard = {}
        listener = threading.Thread(target=capture_http, args=(2, heard))
        listener.start()
        time.sleep(0.2)
        driver.find_element(By.ID, "speak").click()
        check(wait_for(lambda: "mark 'tone' heard" in log_text(driver), 4) is not None, "the tone's mark is heard")
        listener.join(timeout=10)
        after = get_json("/v1/status")["playback"]["played_frames"]
        samples = heard.get("samples", [])
        ratio_440 = tone_share(samples, 16000, 440)
        ratio_1000 = tone_share(samples, 16000, 1000)
        rms = math.sqrt(sum(s * s for s in samples) / len(samples)) if samples else 0
        print(f"     played frames {before} -> {after} (+{after - before}); server capture {len(samples)} samples, "
              f"rms {20 * math.log10(rms) if rms > 0 else -120:.1f} dBFS, 440 Hz share {ratio_440:.2f}, 1 kHz {ratio_1000:.4f}")
        check(after > before, "playback played frames increase")
        check(ratio_440 > 0.2 and ratio_1000 < 0.01, "the server's capture hears 440 Hz")

        # 4. Stop (barge-in): two tones queued, then stop; the socket reports `cleared`.
        driver.find_element(By.ID, "speak").click()
        driver.find_element(By.ID, "speak").click()
        time.sleep(0.4)
        driver.find_element(By.ID, "stop").click()
        check(wait_for(lambda: "cleared: played" in log_text(driver), 3) is not None, "stop clears the stream")
        check(wait_for(lambda: "stop: DELETE /v1/playback flushed" in log_text(driver), 3) is not None, "stop's DELETE answers")

        # 5. Status panel and browser errors.
        time.sleep(1.2)
        check(driver.find_element(By.ID, "st-capture").text.startswith("running"),
              f"status shows capture running ({driver.find_element(By.ID, 'st-capture').text})")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" or "Content Security Policy" in e["message"]]
        for e in errors:
            print("     browser:", e["message"])
        check(not errors, "no browser errors or CSP violations")

        # 6. A screenshot while the microphone hears something.
        player = subprocess.Popen(["paplay", str(tone)])
        time.sleep(2.5)
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 1000, "height": height, "deviceScaleFactor": 1, "mobile": False})
        time.sleep(0.3)
        driver.save_screenshot(str(SCREENSHOT))
        print(f"     screenshot: {SCREENSHOT}")
    finally:
        if driver:
            driver.quit()
        if player and player.poll() is None:
            player.terminate()
        server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
        server_log.close()
        shutil.rmtree(work, ignore_errors=True)

    print(f"browser check: {'failed: ' + ', '.join(failures) if failures else 'passed'}")
    sys.exit(1 if failures else 0)


def _healthy():
    try:
        return get_json("/healthz").get("status") == "ok"
    except OSError:
        return False


def _queued_ms():
    queued = get_json("/v1/status")["playback"]["queued_ms"]
    return queued if queued > 0 else None


if __name__ == "__main__":
    main()
