#!/usr/bin/env python3
"""Real-browser check of the browser module /v1/audiogate.js and the demo page at GET / (run by `make test`).

Starts the server on the test sound card with `--allow-origin` for a page served from another
port, and checks in headless Chromium that this page:
  - imports /v1/audiogate.js cross-origin (and that an origin not allowed gets a 403 for it);
  - hears the tone played into the card through capture(), at its pitch, and starts listen()'s
    AudioWorklet;
  - plays through playback(): an array's tone with send() and an OscillatorNode's through
    connect() (an AudioWorklet), each heard whole on the card and its mark answered.
With the checkout's clients/browser/audiogate.js (served by the page's origin: the server embeds the
copy it was built with), it checks that:
  - `await speaker.mark()` settles (not heard) within 100 ms of a clear, for a mark still queued in
    the page and for one the server had;
  - 10 s sent at once is paced: the socket's bufferedAmount and the server's queue stay bounded, and
    it is all heard;
  - two sockets on one stream clearing in the same instant each get their own `cleared`;
  - listen() plays a 16 kHz capture in a 48 kHz AudioContext at its pitch, and connect() from a
    48 kHz AudioContext plays on a 24 kHz stream at the right pitch and length;
  - a capture and a playback on a second server that restarts come back by themselves within 5 s
    of it, report the gap (and the audio lost or not heard), and a mark the restart dropped
    settles as not heard.
Then it plays a tone into the card so the microphone is not silent, opens the demo page and checks that:
  - capture chunks arrive and the level meter moves with the tone (the page's data-* counters);
  - "Listen in browser" loads its AudioWorklet (from a blob: URL, under the page's CSP);
  - "Record 5 s and play back" records and plays back (its mark comes back);
  - "Speak" reaches the server: its mark comes back and the server's own capture hears its 1 s of
    440 Hz whole;
  - "Stop" cuts playback off (a `cleared` event);
  - the control panel: "Say" queues speech, the volume slider and mute set /v1/volume and follow
    another client's change, a server recording started and stopped from the page is listed with a
    download link that serves its WAV, the playback streams show while the page plays;
  - a live `/v1/capture?container=ogg` stream plays in an <audio> element, its currentTime advancing;
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
import http.server
import json
import math
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import numpy as np
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

import e2e
from e2e import DEFAULT_BINARY, ROOT, check

SCHEME = os.environ.get("AUDIOGATE_BROWSER_SCHEME", "light")
ROOM_DBFS = -13.5  # RMS of e2e.tone (a sine at amplitude 0.3) as the card's microphone hears it
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


def open_browser(work):
    """Headless Chromium under chromedriver, its profile and home in `work` (never the user's),
    in its own process group so end_browser can end it whole. Returns (driver, service)."""
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
    return driver, service


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


# ---- the browser module on a page of another, allowed, origin

MODULE_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>module page</title>
<link rel="icon" href="data:,">
<script type="module">
import * as audiogate from "SERVER/v1/audiogate.js";
window.audiogate = audiogate;
document.title = "module loaded";
</script>
"""

# capture(): 1.5 s of the server's microphone (the card may take a moment to open, so this waits
# for the audio, up to 8 s), then listen()'s AudioWorklet briefly.
CAPTURE_SCRIPT = """
const done = arguments[arguments.length - 1];
(async () => {
  const mic = await window.audiogate.capture({ rate: 16000 });
  const chunks = [];
  await new Promise((resolve) => {
    let samples = 0;
    mic.addEventListener("audio", (event) => {
      chunks.push(event.detail);
      samples += event.detail.length;
      if (samples >= 24000) resolve();
    });
    setTimeout(resolve, 8000);
  });
  const listening = await mic.listen();
  const listenRate = listening.context.sampleRate;
  await listening.stop();
  mic.close();
  const samples = [];
  for (const chunk of chunks) for (const value of chunk) samples.push(value);
  return { rate: mic.rate, channels: mic.channels, chunkMs: mic.chunkMs, chunks: chunks.length, samples, listenRate };
})().then(done, (error) => done({ error: String(error) }));
"""

# 1 s of `frequency` from an OscillatorNode in `context`, through `speaker.connect()`'s AudioWorklet.
OSCILLATE = """
async function oscillate(speaker, context, frequency) {
  const oscillator = new OscillatorNode(context, { frequency });
  const gain = new GainNode(context, { gain: 0 });
  oscillator.connect(gain);
  const tap = await speaker.connect(gain);
  await context.resume();
  const start = context.currentTime + 0.1;
  gain.gain.setValueAtTime(0, start);
  gain.gain.linearRampToValueAtTime(0.5, start + 0.01);
  gain.gain.setValueAtTime(0.5, start + 0.99);
  gain.gain.linearRampToValueAtTime(0, start + 1);
  oscillator.start(start);
  oscillator.stop(start + 1);
  await new Promise((resolve) => { oscillator.onended = resolve; });
  await new Promise((resolve) => setTimeout(resolve, 100));
  tap.stop();
}
"""

# playback(): 1 s of 800 Hz sent as an array, then 1 s of 1200 Hz from an OscillatorNode through
# connect()'s AudioWorklet, each followed by a mark.
PLAYBACK_SCRIPT = OSCILLATE + """
const done = arguments[arguments.length - 1];
(async () => {
  const rate = 24000;
  const speaker = await window.audiogate.playback({ rate, stream: "module" });
  const tone = new Float32Array(rate);
  for (let i = 0; i < rate; i++) {
    const fade = Math.min(1, i / 240, (rate - 1 - i) / 240);
    tone[i] = 0.5 * fade * Math.sin(2 * Math.PI * 800 * i / rate);
  }
  speaker.send(tone);
  const first = await speaker.mark("array");
  const context = new AudioContext({ sampleRate: rate });
  await oscillate(speaker, context, 1200);
  const second = await speaker.mark("node");
  await context.close();
  speaker.close();
  return { marks: [first.name, second.name], contextRate: context.sampleRate };
})().then(done, (error) => done({ error: String(error) }));
"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve_folder(folder, port):
    """A static web server for `folder` on 127.0.0.1:`port`, in a thread; shutdown() ends it."""
    handler = functools.partial(QuietHandler, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def pitch(samples, rate):
    """The frequency of the strongest FFT bin (1 Hz bins over 1 s)."""
    x = np.asarray(samples[-rate:], dtype=np.float64)
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.argmax(spectrum[20:]) + 20) * rate / len(x)


def browser_errors(driver):
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" or "Content Security Policy" in e["message"]]
    for e in errors:
        print("     browser:", e["message"])
    return errors


def module_checks(driver, server, page_base, work):
    """The module on a page of an allowed origin: import, capture() with pitch, playback() heard."""
    request = urllib.request.Request(server.base + "/v1/audiogate.js", headers={"Origin": "http://127.0.0.1:9"})
    try:
        urllib.request.urlopen(request, timeout=5)
        status = 200
    except urllib.error.HTTPError as error:
        status = error.code
    check(status == 403, f"an origin not allowed gets 403 for /v1/audiogate.js ({status})")

    driver.get(page_base + "/module.html")
    loaded = wait_for(lambda: driver.title == "module loaded" or None, 5)
    check(loaded is not None, f"a page on {page_base} imports {server.base}/v1/audiogate.js (title {driver.title!r})")
    if loaded is None:
        return

    # capture(): the room's 660 Hz, at its pitch.
    tone = work / "tone-660.wav"
    e2e.write_wav(tone, e2e.tone(660, 10.0, 48000), 48000)
    player = e2e.room(tone)
    try:
        time.sleep(0.5)
        driver.set_script_timeout(20)
        result = driver.execute_async_script(CAPTURE_SCRIPT)
    finally:
        e2e.stop_room(player)
    if result.get("error"):
        check(False, f"capture() in the page: {result['error']}")
        return
    samples = np.array(result["samples"])
    heard = pitch(samples, result["rate"]) if len(samples) >= result["rate"] else 0
    print(f"     capture(): {result['chunks']} chunks, {len(samples)} samples at {result['rate']} Hz, "
          f"{e2e.dbfs(samples):.1f} dBFS, pitch {heard:.0f} Hz; listen() at {result['listenRate']} Hz")
    check(result["rate"] == 16000 and result["channels"] == 1 and result["chunkMs"] == 20,
          "capture() reports the stream's rate, channels and chunk length")
    check(len(samples) >= 24000, f"capture() delivers 1.5 s of audio ({len(samples)} samples)")
    check(abs(heard - 660) <= 3 and e2e.dbfs(samples) > -30,
          f"capture() hears the room's tone at its pitch ({heard:.0f} Hz, {e2e.dbfs(samples):.1f} dBFS)")
    check(result["listenRate"] == 16000, "listen() plays the capture through an AudioWorklet at the stream's rate")

    # playback(): both tones heard whole on the card, the marks answered.
    server.quiet(3)
    listener = e2e.Listener(server)
    try:
        driver.set_script_timeout(20)
        result = driver.execute_async_script(PLAYBACK_SCRIPT)
        time.sleep(0.3)
    finally:
        heard = listener.stop()
    if result.get("error"):
        check(False, f"playback() in the page: {result['error']}")
        return
    array_seconds = e2e.tone_seconds(heard, 800)
    node_seconds = e2e.tone_seconds(heard, 1200)
    print(f"     playback(): marks {result['marks']}; the card heard 800 Hz for {array_seconds:.2f} s, "
          f"1200 Hz for {node_seconds:.2f} s")
    check(result["marks"] == ["array", "node"], f"playback()'s marks resolve once heard ({result['marks']})")
    check(abs(array_seconds - 1.0) <= 0.1, f"send(): the card plays the array's 1 s of 800 Hz ({array_seconds:.2f} s)")
    check(abs(node_seconds - 1.0) <= 0.1,
          f"connect(): the card plays the OscillatorNode's 1 s of 1200 Hz through the AudioWorklet ({node_seconds:.2f} s)")
    check(not browser_errors(driver), "the module page logged no browser errors")


# ---- the checkout's module (the server serves the copy it was built with): barge-in, pacing, clears

CHECKOUT_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>checkout module page</title>
<link rel="icon" href="data:,">
<script type="module">
import * as audiogate from "./audiogate.js";
window.audiogate = audiogate;
window.SERVER = "@SERVER@";
window.sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
window.tone = (seconds, frequency, rate, amplitude = 0.3) => {
  const samples = new Float32Array(Math.round(seconds * rate));
  for (let i = 0; i < samples.length; i++) samples[i] = amplitude * Math.sin(2 * Math.PI * frequency * i / rate);
  return samples;
};
document.title = "module loaded";
</script>
"""

# A mark still queued in the page and one already sent, then a clear: when each mark settled.
BARGE_IN_SCRIPT = """
const done = arguments[arguments.length - 1];
(async () => {
  const ag = window.audiogate, rate = 24000;
  const speaker = await ag.playback({ server: window.SERVER, rate, stream: "barge" });
  const result = {};
  for (const [kind, seconds] of [["queued in the page", 4], ["sent to the server", 1]]) {
    speaker.send(window.tone(seconds, 500, rate));
    const settled = speaker.mark(kind).then((mark) => ({ mark, at: performance.now() }));
    await window.sleep(400);
    const clearing = performance.now();
    const cleared = await speaker.clear();
    const answered = performance.now();
    const { mark, at } = await settled;
    result[kind] = { heard: mark.heard, settleMs: at - clearing, clearMs: answered - clearing, cleared };
    await window.sleep(200);
  }
  speaker.close();
  return result;
})().then(done, (error) => done({ error: String(error) }));
"""

# 10 s sent at once: the socket's buffered amount while it goes out, and when its end was heard.
PACED_SCRIPT = """
const done = arguments[arguments.length - 1];
(async () => {
  const ag = window.audiogate, rate = 24000;
  const speaker = await ag.playback({ server: window.SERVER, rate, stream: "paced" });
  const start = performance.now();
  let maxBuffered = 0, sentAt = null;
  const watch = setInterval(() => { maxBuffered = Math.max(maxBuffered, speaker.socket.bufferedAmount); }, 20);
  speaker.send(window.tone(10, 300, rate, 0.1)).then(() => { sentAt = performance.now() - start; });
  maxBuffered = Math.max(maxBuffered, speaker.socket.bufferedAmount);
  const end = await speaker.mark("end");
  const heardAt = performance.now() - start;
  clearInterval(watch);
  speaker.close();
  return { maxBuffered, sentAt, heardAt, heard: end.heard };
})().then(done, (error) => done({ error: String(error) }));
"""

# Two sockets on one stream (as two pages would have) clear in the same instant.
TWO_CLEARS_SCRIPT = """
const done = arguments[arguments.length - 1];
(async () => {
  const ag = window.audiogate, rate = 24000;
  const first = await ag.playback({ server: window.SERVER, rate, stream: "shared" });
  const second = await ag.playback({ server: window.SERVER, rate, stream: "shared" });
  const seen = { first: [], second: [] };
  first.addEventListener("cleared", (event) => seen.first.push(event.detail));
  second.addEventListener("cleared", (event) => seen.second.push(event.detail));
  first.send(window.tone(3, 700, rate));
  const mark = first.mark("after-tone");
  await window.sleep(500);
  const answers = await Promise.all([second.clear(), first.clear()]);
  const markResult = await mark;
  await window.sleep(300);
  first.close();
  second.close();
  return { second: answers[0], first: answers[1], seen, markHeard: markResult.heard };
})().then(done, (error) => done({ error: String(error) }));
"""


# An OscillatorNode in a 48 kHz AudioContext streamed by connect() to a 24 kHz stream: resampled.
RESAMPLED_SCRIPT = OSCILLATE + """
const done = arguments[arguments.length - 1];
(async () => {
  const speaker = await window.audiogate.playback({ server: window.SERVER, rate: 24000, stream: "resampled" });
  const context = new AudioContext({ sampleRate: 48000 });
  await oscillate(speaker, context, 900);
  const mark = await speaker.mark("resampled");
  await context.close();
  speaker.close();
  return { heard: mark.heard, contextRate: context.sampleRate };
})().then(done, (error) => done({ error: String(error) }));
"""

# listen() of a 16 kHz capture in a 48 kHz AudioContext, into an analyser: the strongest bin after 1 s.
LISTEN_SCRIPT = """
const done = arguments[arguments.length - 1];
(async () => {
  const mic = await window.audiogate.capture({ server: window.SERVER, rate: 16000 });
  const context = new AudioContext({ sampleRate: 48000 });
  const analyser = new AnalyserNode(context, { fftSize: 8192 });
  const listening = await mic.listen({ context, destination: analyser });
  await window.sleep(1500);
  const bins = new Float32Array(analyser.frequencyBinCount);
  analyser.getFloatFrequencyData(bins);
  let best = 1;
  for (let i = 2; i < bins.length; i++) if (bins[i] > bins[best]) best = i;
  const samples = new Float32Array(analyser.fftSize);
  analyser.getFloatTimeDomainData(samples);
  let sum = 0, quiet = 0, longestQuiet = 0;
  for (const x of samples) {
    sum += x * x;
    quiet = Math.abs(x) < 0.01 ? quiet + 1 : 0;
    longestQuiet = Math.max(longestQuiet, quiet);
  }
  await listening.stop();
  await context.close();
  mic.close();
  return { peakHz: best * context.sampleRate / analyser.fftSize, rmsDb: 10 * Math.log10(sum / samples.length),
           longestQuietMs: longestQuiet * 1000 / context.sampleRate, contextRate: context.sampleRate };
})().then(done, (error) => done({ error: String(error) }));
"""

# A capture and a playback on a server that is about to restart; their events go to window.rc.
RECONNECT_START = """
const done = arguments[arguments.length - 1];
(async () => {
  const ag = window.audiogate, server = arguments[0];
  const rc = window.rc = { capture: [], playback: [], chunks: 0, closed: [] };
  const mic = await ag.capture({ server, rate: 16000 });
  mic.addEventListener("audio", () => { rc.chunks += 1; });
  mic.addEventListener("reconnect", (event) => rc.capture.push({ ...event.detail, at: performance.now() }));
  mic.addEventListener("close", () => rc.closed.push("capture"));
  const speaker = await ag.playback({ server, rate: 24000, stream: "restart" });
  speaker.addEventListener("reconnect", (event) => rc.playback.push({ ...event.detail, at: performance.now() }));
  speaker.addEventListener("close", () => rc.closed.push("playback"));
  speaker.send(window.tone(3, 400, 24000, 0.1));
  speaker.mark("before").then((mark) => { rc.before = mark.heard; });
  window.rcStreams = { mic, speaker };
  return "open";
})().then(done, (error) => done({ error: String(error) }));
"""

RECONNECT_AFTER = """
const done = arguments[arguments.length - 1];
(async () => {
  const { mic, speaker } = window.rcStreams;
  const chunks = window.rc.chunks;
  speaker.send(window.tone(0.5, 400, 24000, 0.1));
  const mark = await speaker.mark("after");
  const flowing = window.rc.chunks > chunks;
  mic.close();
  speaker.close();
  await window.sleep(100);
  return { after: mark.heard, flowing, closed: window.rc.closed };
})().then(done, (error) => done({ error: String(error) }));
"""


def reconnect_check(driver, binary, page_base, work):
    """A server restarted under a page: its capture and playback come back by themselves and say
    what the gap cost."""
    extra = ["--allow-origin", page_base]
    server = e2e.Server(binary, "pulse", log_level=None, log=work / "restart-1.log", extra=extra)
    if not check(server.start(capture=True), "reconnect: a second server comes up"):
        return
    try:
        result = driver.execute_async_script(RECONNECT_START, server.base)
        if not check(result == "open", f"reconnect: the page opens a capture and a playback ({result})"):
            return
        time.sleep(1.0)
        server.stop()
        time.sleep(1.0)
        server = e2e.Server(binary, "pulse", port=server.port, log_level=None, log=work / "restart-2.log", extra=extra)
        if not check(server.start(capture=True), "reconnect: the server comes back on its port"):
            return
        back = time.monotonic()
        both = wait_for(lambda: (lambda rc: rc["capture"] and rc["playback"] and rc["chunks"] and rc)(
            driver.execute_script("return window.rc;")) or None, 10)
        waited = time.monotonic() - back
        rc = driver.execute_script("return window.rc;")
        print(f"     restart: capture reconnect {rc['capture']}, playback reconnect {rc['playback']}, "
              f"seen {waited:.2f} s after the server was back; mark sent before it: heard {rc.get('before')}")
        check(both is not None and waited <= 5,
              f"reconnect: capture and playback are back {waited:.2f} s after the server (within 5 s)")
        if both is None:
            return
        capture_gap, playback_gap = rc["capture"][0], rc["playback"][0]
        check(capture_gap["gapMs"] >= 1000 and capture_gap["lostMs"] >= 1000 and playback_gap["gapMs"] >= 1000
              and playback_gap["unheardMs"] > 0,
              f"reconnect: each reports the gap (capture {capture_gap['gapMs']:.0f} ms, {capture_gap['lostMs']:.0f} ms "
              f"of audio lost; playback {playback_gap['gapMs']:.0f} ms, {playback_gap['unheardMs']:.0f} ms not heard)")
        check(rc.get("before") is False, "reconnect: the mark the restart dropped settles as not heard")
        result = driver.execute_async_script(RECONNECT_AFTER)
        check(result.get("after") is True and result.get("flowing") and sorted(result.get("closed") or []) == ["capture", "playback"],
              f"reconnect: afterwards audio flows both ways and close() ends the streams ({result})")
    finally:
        server.stop()
        # Chromium logs each refused connection while the server was away; anything else is an error.
        refused = f"ws://127.0.0.1:{server.port}/v1/"
        others = [e for e in driver.get_log("browser") if refused not in e["message"]]
        for e in others:
            print("     browser:", e["message"])
        check(not [e for e in others if e["level"] == "SEVERE"], "reconnect: no browser errors but the refused connections")


def checkout_module_checks(driver, server, page_base, site):
    """clients/browser/audiogate.js as this checkout has it, on a page of an allowed origin."""
    shutil.copy(ROOT / "clients/browser/audiogate.js", site / "audiogate.js")
    (site / "checkout.html").write_text(CHECKOUT_PAGE.replace("@SERVER@", server.base))
    driver.get(page_base + "/checkout.html")
    if not check(wait_for(lambda: driver.title == "module loaded" or None, 5) is not None,
                 f"the checkout's audiogate.js loads ({driver.title!r})"):
        return
    driver.set_script_timeout(30)

    server.quiet(3)
    result = driver.execute_async_script(BARGE_IN_SCRIPT)
    if not check(not result.get("error"), f"barge-in script: {result.get('error')}"):
        return
    for kind, r in result.items():
        print(f"     mark {kind}: settled {r['settleMs']:.0f} ms after clear() (heard {r['heard']}), "
              f"own cleared after {r['clearMs']:.0f} ms: {r['cleared']}")
        check(r["heard"] is False and r["settleMs"] <= 100,
              f"await speaker.mark() ({kind}) settles as not heard {r['settleMs']:.0f} ms after a clear")

    server.quiet(3)
    queued = []
    polling = threading.Event()

    def poll():
        while not polling.is_set():
            queued.append(server.get("/v1/status")["playback"]["queued_ms"])
            time.sleep(0.1)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        result = driver.execute_async_script(PACED_SCRIPT)
    finally:
        polling.set()
        poller.join()
    if not check(not result.get("error"), f"paced script: {result.get('error')}"):
        return
    print(f"     10 s sent at once: socket buffered at most {result['maxBuffered'] / 1024:.0f} KiB, "
          f"the server queued at most {max(queued)} ms, the last piece went out at {result['sentAt'] / 1000:.2f} s, "
          f"its end heard at {result['heardAt'] / 1000:.2f} s")
    # Unpaced, 10 s of 24 kHz float is 940 KiB in the socket at once and 10 s queued on the server.
    check(result["maxBuffered"] <= 256 * 1024 and max(queued) <= 2300,
          f"send(): 10 s sent at once is paced (at most {result['maxBuffered'] / 1024:.0f} KiB buffered in the page, "
          f"{max(queued)} ms queued on the server)")
    check(result["heard"] and 7.5 <= result["sentAt"] / 1000 <= 9.5 and abs(result["heardAt"] / 1000 - 10) <= 0.4,
          f"send(): it all went out as it played and was heard whole (out by {result['sentAt'] / 1000:.2f} s, "
          f"end heard at {result['heardAt'] / 1000:.2f} s)")

    server.quiet(3)
    result = driver.execute_async_script(TWO_CLEARS_SCRIPT)
    if not check(not result.get("error"), f"two-clears script: {result.get('error')}"):
        return
    first, second, seen = result["first"], result["second"], result["seen"]
    print(f"     two sockets clear together: first got {first}, second got {second}; "
          f"each saw {seen['first']} / {seen['second']}")
    order = seen["first"]
    flushed = sorted([first["flushed_ms"], second["flushed_ms"]])
    # Whichever clear the server took first flushed the tone; the other found the stream empty.
    check(len(order) == 2 and seen["second"] == order and first in order and second in order and first != second
          and flushed[0] == 0 and flushed[1] >= 1000,
          "two sockets on one stream each get their own cleared (one flushed the tone, the other an empty stream)")
    check(result["markHeard"] is False, "the mark behind the flushed tone settles as not heard")

    tone = site.parent / "tone-listen.wav"
    e2e.write_wav(tone, e2e.tone(660, 5.0, 48000), 48000)
    player = e2e.room(tone)
    try:
        time.sleep(0.3)
        result = driver.execute_async_script(LISTEN_SCRIPT)
    finally:
        e2e.stop_room(player)
    if not check(not result.get("error"), f"listen script: {result.get('error')}"):
        return
    # The analyser's bins are 48000 / 8192 = 5.9 Hz wide.
    check(abs(result["peakHz"] - 660) <= 6 and abs(result["rmsDb"] - ROOM_DBFS) <= 3 and result["longestQuietMs"] < 1,
          f"listen(): a 16 kHz capture plays resampled in a 48 kHz AudioContext (the room's 660 Hz comes out at "
          f"{result['peakHz']:.0f} Hz, {result['rmsDb']:.1f} dBFS, longest near-zero run {result['longestQuietMs']:.2f} ms)")

    server.quiet(3)
    listener = e2e.Listener(server)
    try:
        result = driver.execute_async_script(RESAMPLED_SCRIPT)
        time.sleep(0.3)
    finally:
        heard = listener.stop()
    if not check(not result.get("error"), f"resampled script: {result.get('error')}"):
        return
    seconds = e2e.tone_seconds(heard, 900)
    played = e2e.dominant(heard, 16000) if len(heard) else 0
    print(f"     connect() from a {result['contextRate']} Hz AudioContext to a 24000 Hz stream: 900 Hz heard "
          f"for {seconds:.2f} s, strongest {played:.0f} Hz")
    check(result["heard"] and abs(seconds - 1.0) <= 0.1 and abs(played - 900) <= 3,
          f"connect(): a 48 kHz AudioContext is resampled to the 24 kHz stream (1 s of 900 Hz heard as "
          f"{seconds:.2f} s at {played:.0f} Hz)")


# ---- the demo page's control panel

OGG_AUDIO_START = """
// Muted: the browser's output is the test card, whose monitor is the microphone.
window.liveAudio = new Audio(arguments[0]);
window.liveAudio.muted = true;
window.liveAudioError = null;
window.liveAudio.play().catch(error => { window.liveAudioError = String(error); });
"""

OGG_AUDIO_STATE = """
const audio = window.liveAudio;
return {time: audio.currentTime, readyState: audio.readyState,
        error: window.liveAudioError || (audio.error ? audio.error.message || String(audio.error.code) : null)};
"""


def ogg_audio_check(driver, server, page_base, work):
    """A live container=ogg stream (Opus, 24 kb/s) of the room's tone plays in an <audio> element:
    once Chromium has buffered enough to start (it waits for about 16 KB, some 5 s at this
    bitrate), currentTime advances with the wall clock."""
    tone = work / "tone-ogg.wav"
    e2e.write_wav(tone, e2e.tone(520, 30.0, 48000), 48000)
    player = e2e.room(tone)
    try:
        driver.get(page_base + "/module.html")
        time.sleep(0.5)
        driver.execute_script(OGG_AUDIO_START, server.base + "/v1/capture?container=ogg")
        started = time.monotonic()
        playing = wait_for(lambda: driver.execute_script(OGG_AUDIO_STATE)["readyState"] >= 3 or None, 15)
        waited = time.monotonic() - started
        first = driver.execute_script(OGG_AUDIO_STATE)
        time.sleep(3)
        last = driver.execute_script(OGG_AUDIO_STATE)
        driver.execute_script("window.liveAudio.pause(); window.liveAudio.removeAttribute('src'); window.liveAudio.load();")
    finally:
        e2e.stop_room(player)
    advanced = last["time"] - first["time"]
    print(f"     <audio> of /v1/capture?container=ogg: playing after {waited:.1f} s, currentTime "
          f"{first['time']:.2f} -> {last['time']:.2f} s in 3 s, error {last['error']}")
    check(playing is not None and not last["error"], f"the live Ogg/Opus stream plays in <audio> "
          f"(readyState {last['readyState']}, error {last['error']})")
    # The stream is live, so it plays at about 1x: 3 s of wall time is about 3 s of audio.
    check(2.5 <= advanced <= 3.5, f"<audio> currentTime advances with the stream (+{advanced:.2f} s in 3 s)")

def streams_shown(driver):
    """The streams line names the demo page's stream, or counts at least one."""
    text = driver.find_element(By.ID, "st-streams").text
    return text if "demo" in text or (text.isdigit() and int(text) >= 1) else None


def put_json(server, path, body):
    request = urllib.request.Request(server.base + path, data=json.dumps(body).encode(), method="PUT")
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


def set_slider(driver, value):
    driver.execute_script("const s = document.getElementById('volume'); s.value = arguments[0];"
                          "s.dispatchEvent(new Event('input'));", value)


def control_panel_checks(driver, server):
    """Say, the volume slider and mute, and the recordings list with its download links."""
    driver.find_element(By.ID, "say-text").send_keys("The control panel speaks.")
    driver.find_element(By.ID, "say").click()
    said = wait_for(lambda: "ms of speech queued on 'demo'" in log_text(driver), 5)
    check(said is not None, "Say posts the text to /v1/say on the page's stream")
    played = wait_for(lambda: server.get("/v1/status")["playback"]["queued_ms"] > 0 or None, 3)
    check(played is not None, "the speech is queued on the server")
    driver.find_element(By.ID, "stop").click()

    # The slider sets the volume; mute is kept apart from the gain.
    set_slider(driver, 40)
    # The server keeps the gain as a float32.
    volume = wait_for(lambda: abs(server.get("/v1/volume")["playback"] - 0.4) < 1e-6 or None, 3)
    check(volume is not None, f"the slider sets /v1/volume ({server.get('/v1/volume')})")
    driver.find_element(By.ID, "muted").click()
    muted = wait_for(lambda: server.get("/v1/volume")["muted"] or None, 3)
    check(muted is not None and abs(server.get("/v1/volume")["playback"] - 0.4) < 1e-6, "mute sets muted and keeps the gain")
    driver.find_element(By.ID, "muted").click()
    wait_for(lambda: not server.get("/v1/volume")["muted"] or None, 3)
    # Another client's change reaches the slider through the status poll.
    put_json(server, "/v1/volume", {"playback": 1.0, "muted": False})
    follows = wait_for(lambda: driver.find_element(By.ID, "volume").get_attribute("value") == "100"
                       and not driver.find_element(By.ID, "muted").is_selected() or None, 5)
    check(follows is not None, "the slider follows another client's PUT /v1/volume "
          f"({driver.find_element(By.ID, 'volume').get_attribute('value')})")

    # A server recording from the page, listed with a link that downloads its WAV.
    driver.find_element(By.ID, "rec-start").click()
    started = wait_for(lambda: "recording on the server: " in log_text(driver), 3)
    check(started is not None, "Record on the server starts a recording")
    time.sleep(1.5)
    driver.find_element(By.ID, "rec-stop").click()
    check(wait_for(lambda: " stopped: " in log_text(driver), 3) is not None, "Stop recording stops it")
    link = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#recordings li[data-state=stopped] a[download]"), 5)
    check(bool(link), "the recordings list shows the stopped recording with a download link")
    if link:
        href = link[0].get_attribute("href")
        with urllib.request.urlopen(href, timeout=5) as response:
            body = response.read()
            kind = response.headers.get("Content-Type", "")
        check(body[:4] == b"RIFF" and body[8:12] == b"WAVE" and len(body) > 16000,
              f"the link downloads the segment as WAV ({kind}, {len(body)} bytes)")


# ---- one run

def attempt(binary, port, screenshot):
    work = pathlib.Path(tempfile.mkdtemp(prefix="audiogate-browser-"))
    tone = work / "tone.wav"
    write_tone(tone, 7.0, 330.0)
    page_port = e2e.free_port()
    page_base = f"http://127.0.0.1:{page_port}"
    site = work / "site"
    site.mkdir()
    server = e2e.Server(binary, "pulse", port=port, log_level=None, log=work / "server.log",
                        extra=["--allow-origin", page_base])
    (site / "module.html").write_text(MODULE_PAGE.replace("SERVER", server.base))
    pages = serve_folder(site, page_port)
    player = None
    driver = None
    service = None
    try:
        if not server.start():
            check(False, "the server comes up: " + server.log_text()[-500:])
            return

        driver, service = open_browser(work)
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-color-scheme", "value": SCHEME}]})

        # 0. The browser module on a page of another origin.
        module_checks(driver, server, page_base, work)
        checkout_module_checks(driver, server, page_base, site)
        reconnect_check(driver, binary, page_base, work)
        server.quiet(3)
        ogg_audio_check(driver, server, page_base, work)

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
        # The streams line: a count, or each stream's name (and role, where the server has roles).
        streams = wait_for(lambda: streams_shown(driver), 3)
        check(streams is not None, f"the panel shows the playing stream ({driver.find_element(By.ID, 'st-streams').text!r})")
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

        # 5. The control panel: say, volume, recordings.
        control_panel_checks(driver, server)

        # 6. Status panel and browser errors.
        status = wait_for(lambda: driver.find_element(By.ID, "st-capture").text.startswith("running")
                          and driver.find_element(By.ID, "st-capture").text, 3)
        check(status is not None, f"status shows capture running ({driver.find_element(By.ID, 'st-capture').text})")
        music = driver.find_element(By.ID, "st-music").text
        check(music == "off" and not driver.find_element(By.ID, "music-controls").is_displayed(),
              f"without a Sendspin player the music row says off and its controls are hidden ({music!r})")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" or "Content Security Policy" in e["message"]]
        for e in errors:
            print("     browser:", e["message"])
        check(not errors, "no browser errors or CSP violations")

        # 7. A screenshot while the microphone hears something, when asked for.
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
        pages.shutdown()
        pages.server_close()
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
