#!/usr/bin/env python3
"""Hostile servers against audiogate's network players while a capture and a playback client are
served: a hostile snapserver, then a hostile Sendspin server, each playing one round per connection.

Snapcast (`--only snapcast`): a small server speaking the Snapcast binary protocol to audiogate's
Snapcast client, each round answering Time requests and sending PCM chunks around its attack:

- ServerSettings with `bufferMs` near Int64.max and negative, `latency` huge either way, a
  `bufferMs` past Int64 (each refused: out_of_range or malformed_message);
- Time answers and chunk stamps at the ends of their 32-bit fields (played or dropped, never a trap;
  the round ends when the script closes);
- a codec header whose name length is 4 GB, a pcm header at 4 GHz (bad_codec_header); a message
  whose size field is 4 GB (message_too_large); a chunk whose payload length runs past its end
  (malformed_message);
- truncated messages: held open after the settings (the Time timeout closes it), held open before
  any settings (the settings timeout closes it), and cut by a close.

Each hostile connection logs one line saying why it closed (at most two Snapcast lines per
connection: the codec line of a connection that got that far).

Sendspin (`--only sendspin`): sendspin_hostile_server.py under .venv-sendspin's Python, on
aiosendspin's own handshake and transport (Noise KKpsk2 on the Sentinel PSK), dialed by `audiogate
serve --sendspin-server`. After a warm-up that plays, its rounds bring the player to playing and then
send a message that does not decrypt (garbage, a tampered tag, a replay: decrypt), an audio chunk
shorter than its 13-byte header (malformed_message) or stamped at Int64.max (out_of_range), a first
fragment followed by an ordinary message (malformed_message) or by nothing while time requests go
unanswered (timeout), an 8.5 MB chunk in fragments and a 70 KB JSON message (message_too_large), a
WebSocket frame announcing 2 GB and a WebSocket message of 80 KB in continuation frames
(message_too_large), a re-handshake whose Noise message 1 is random bytes (handshake), a pairing
activation on the Sentinel PSK (refused with pair/abort, the stream plays on until this server
closes), a dynamic pairing-code attempt whose CPace share is a point of low order and a pairing
confirmation with no attempt (pairing), text frames after the handshake (malformed_message), and for 3 s small encrypted
messages as fast as they go (tens of thousands) while the chunks keep coming; last an honest server.
Each connection ends with one line saying why (the flood's: message_flood, the player's budget of
messages a second spent), audiogate closes every bad one itself
and reconnects after each round (its /v1/status connection count rising with the rounds and equal
to the connections the script accepted), the honest server after the flood is played, and VmRSS
after the flood is within 4 MB of before it. Both ends are on 127.0.0.1 and nothing is announced by
multicast DNS, so no private network namespace is needed. Where no Python >= 3.12 exists for the
sendspin package, the part says so in one line and is skipped.

While each part runs, a capture WebSocket client (JSON chunks: seq and timestamp_ms) and a playback
WebSocket streaming a 1 kHz tone keep being served: no seq jump, no step over 60 ms between chunk
timestamps or arrivals, no `drained` while the tone streams, and the tone heard in every 20 ms of
the capture with no hole over 60 ms; the server never exits. A part that fails while the hypervisor
stole more than 5 % of the CPU is run again once.

    .venv/bin/python Tests/EndToEnd/check_hostile_peers.py [--binary .build/debug/audiogate] [--only PART]
"""
import argparse
import asyncio
import base64
import itertools
import json
import pathlib
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import numpy as np
import websockets

import e2e
from e2e import check

GAP_LIMIT_MS = 60
CHUNK_MS = 20
CAPTURE_RATE = 16000
TONE_HZ = 1000
I64_MAX = 2**63 - 1
I32_MAX = 2**31 - 1
I32_MIN = -2**31
SETTINGS = {"bufferMs": 1000, "latency": 0, "volume": 100, "muted": False}
# snapserver's pcm codec header: a streaming RIFF/WAVE header for 48 kHz stereo s16le.
PCM_HEADER = e2e.wav_header(48000, 2, 16)
PCM_CHUNK = bytes(48 * CHUNK_MS * 4)  # silence: the attack is in the numbers, not the sound


def settings(text):
    return e2e.snapcast_message(3, e2e.snapcast_blob(text.encode()))


def codec_header(name, payload):
    return e2e.snapcast_message(1, e2e.snapcast_blob(name) + e2e.snapcast_blob(payload))


def chunk(seconds, microseconds, payload=PCM_CHUNK):
    return e2e.snapcast_message(2, e2e.snapcast_tv(seconds, microseconds) + e2e.snapcast_blob(payload))


def now_tv():
    micro = time.monotonic_ns() // 1000
    return micro // 1_000_000, micro % 1_000_000


class Peer:
    """One connection of the hostile server: answers Time requests on its own thread (with the
    round's latency and send stamps), notices when audiogate closes."""

    def __init__(self, connection, time_answer):
        self.connection = connection
        self.time_answer = time_answer
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.hello = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        buffer = b""
        try:
            while True:
                data = self.connection.recv(65536)
                if not data:
                    break
                buffer += data
                while len(buffer) >= 26:
                    kind, ident, _, _, _, _, _, size = e2e.SNAPCAST_HEADER.unpack_from(buffer)
                    if len(buffer) < 26 + size:
                        break
                    buffer = buffer[26 + size:]
                    if kind == 5:
                        self.hello.set()
                    elif kind == 4 and self.time_answer:
                        latency, sent = self.time_answer()
                        self.send(e2e.snapcast_message(4, e2e.snapcast_tv(*latency), refers_to=ident, sent=sent))
        except OSError:
            pass
        self.closed.set()

    def send(self, data):
        """Sends unless audiogate already closed; False once it has."""
        if self.closed.is_set():
            return False
        with self.lock:
            try:
                self.connection.sendall(data)
                return True
            except OSError:
                # A reset or a broken pipe: audiogate closed its end.
                self.closed.set()
                return False

    def chunks(self, seconds, stamp=None):
        """Sends a 20 ms PCM chunk every 20 ms for `seconds`, stamped now (or by `stamp(index)`)."""
        deadline = time.monotonic() + seconds
        index = 0
        while time.monotonic() < deadline and not self.closed.is_set():
            if not self.send(chunk(*(stamp(index) if stamp else now_tv()))):
                break
            index += 1
            self.closed.wait(CHUNK_MS / 1000)

    def wait_closed(self, seconds):
        return self.closed.wait(seconds)

    def close(self):
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.connection.close()
        self.reader.join(2)


def honest_time():
    return (0, 100), now_tv()


def extreme_time():
    return (I32_MAX, I32_MAX), (I32_MIN, I32_MIN)


def settings_attack(text):
    """ServerSettings carrying `text`, then what snapserver sends next: the codec header and
    chunks, while Time requests are answered, as in the crash this check was written for."""
    def run(peer):
        peer.send(settings(text))
        peer.send(codec_header(b"pcm", PCM_HEADER))
        peer.chunks(3)
    return run


def extreme_stamps(peer):
    peer.send(settings(json.dumps(SETTINGS)))
    peer.send(codec_header(b"pcm", PCM_HEADER))
    stamps = [(I32_MAX, I32_MAX), (I32_MIN, I32_MIN), (I32_MAX, I32_MIN), (0, -1), (-1, 999_999), (I32_MIN, 0)]
    peer.chunks(3, stamp=lambda index: stamps[index % len(stamps)])


def huge_codec_name(peer):
    peer.send(settings(json.dumps(SETTINGS)))
    peer.send(e2e.snapcast_message(1, b"\xff\xff\xff\xffpcm"))
    peer.chunks(3)


def pcm_at_4ghz(peer):
    peer.send(settings(json.dumps(SETTINGS)))
    peer.send(codec_header(b"pcm", e2e.wav_header(2**32 - 1, 2, 16)))
    peer.chunks(3)


def four_gigabytes(peer):
    peer.send(settings(json.dumps(SETTINGS)))
    peer.send(e2e.SNAPCAST_HEADER.pack(2, 0, 0, 0, 0, 0, 0, 2**32 - 1) + bytes(1000))
    peer.chunks(3)


def chunk_past_its_end(peer):
    peer.send(settings(json.dumps(SETTINGS)))
    peer.send(codec_header(b"pcm", PCM_HEADER))
    peer.send(e2e.snapcast_message(2, e2e.snapcast_tv(*now_tv()) + b"\xfe\xff\xff\x7f" + bytes(16)))
    peer.chunks(3)


def truncated_held(peer):
    peer.send(settings(json.dumps(SETTINGS)))
    peer.send(e2e.SNAPCAST_HEADER.pack(2, 0, 0, 0, 0, 0, 0, 1000) + bytes(10))
    peer.wait_closed(8)


def truncated_before_settings(peer):
    peer.send(e2e.SNAPCAST_HEADER.pack(3, 0, 0, 0, 0, 0, 0, 1000) + bytes(10))
    peer.wait_closed(10)


def truncated_then_closed(peer):
    peer.send(settings(json.dumps(SETTINGS)))
    peer.send(codec_header(b"pcm", PCM_HEADER))
    peer.chunks(0.5)
    peer.send(e2e.SNAPCAST_HEADER.pack(2, 0, 0, 0, 0, 0, 0, 5000) + bytes(100))


def honest(peer):
    peer.send(settings(json.dumps(SETTINGS)))
    peer.send(codec_header(b"pcm", PCM_HEADER))
    peer.chunks(2)


def settings_json(**fields):
    return json.dumps(dict(SETTINGS, **fields))


# (name, what the connection does, Time answers, the words of the one line that says why it closed)
ROUNDS = [
    ("bufferMs near Int64.max", settings_attack(settings_json(bufferMs=I64_MAX - 807)), honest_time, "out_of_range"),
    ("bufferMs at Int64.max with latency at Int64.min",
     settings_attack(settings_json(bufferMs=I64_MAX, latency=-I64_MAX - 1)), honest_time, "out_of_range"),
    ("bufferMs negative", settings_attack(settings_json(bufferMs=-I64_MAX + 807)), honest_time, "out_of_range"),
    ("latency huge", settings_attack(settings_json(latency=I64_MAX)), honest_time, "out_of_range"),
    ("latency huge negative", settings_attack(settings_json(latency=-10**15)), honest_time, "out_of_range"),
    ("bufferMs past Int64", settings_attack('{"bufferMs":1e30,"latency":0,"volume":100,"muted":false}'), honest_time,
     "malformed_message"),
    ("volume huge", settings_attack(settings_json(volume=I64_MAX)), honest_time, "out_of_range"),
    ("Time answers and chunk stamps at the ends of 32 bits", extreme_stamps, extreme_time, "closed the connection"),
    ("codec name length 4 GB", huge_codec_name, honest_time, "bad_codec_header"),
    ("pcm header at 4 GHz", pcm_at_4ghz, honest_time, "bad_codec_header"),
    ("message size 4 GB", four_gigabytes, honest_time, "message_too_large"),
    ("chunk length past its end", chunk_past_its_end, honest_time, "malformed_message"),
    ("truncated message held open", truncated_held, honest_time, "timeout"),
    ("truncated message before any settings", truncated_before_settings, honest_time, "timeout"),
    ("truncated message, then closed", truncated_then_closed, honest_time, "closed the connection"),
    ("an honest server after all that", honest, honest_time, "closed the connection"),
]


class HostileServer:
    """Accepts audiogate's connections one at a time and plays one round on each; after each it
    counts the Snapcast lines audiogate logged for that connection."""

    def __init__(self, log_lines):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.listener.settimeout(15)
        self.port = self.listener.getsockname()[1]
        self.log_lines = log_lines
        self.go = threading.Event()
        self.done = threading.Event()
        self.results = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()

    def _snapcast_lines(self):
        return [line for line in self.log_lines() if "snapcast" in line and "joining" not in line]

    def _round(self, name, body, time_answer):
        try:
            connection, _ = self.listener.accept()
        except OSError:  # no connection within 15 s, or the check is over
            return dict(name=name, accepted=False)
        before = len(self._snapcast_lines())
        peer = Peer(connection, time_answer)
        hello = peer.hello.wait(5)
        body(peer)
        # Its close may still be on its way after the last send.
        closed_by_audiogate = peer.closed.wait(0.5)
        peer.close()
        # Its line is written as the client's task sees the end: give it a moment.
        lines = e2e.wait_for(lambda: self._snapcast_lines()[before:] or None, 3) or []
        time.sleep(0.3)
        return dict(name=name, accepted=True, hello=hello, closed_by_audiogate=closed_by_audiogate,
                    lines=self._snapcast_lines()[before:])

    def _run(self):
        try:
            # Until the other clients are up: an honest server, so the first connection plays.
            warmup = self._round("warm-up", lambda peer: [peer.send(settings(json.dumps(SETTINGS))),
                                                          peer.send(codec_header(b"pcm", PCM_HEADER)),
                                                          self.go.wait(30), peer.chunks(0.2)], honest_time)
            self.results.append(warmup)
            for name, body, time_answer, _ in ROUNDS:
                self.results.append(self._round(name, body, time_answer))
        finally:
            self.done.set()

    def stop(self):
        self.go.set()
        self.listener.close()
        self.thread.join(5)


async def capture(port, record, stop):
    """JSON capture chunks: (arrival, seq, timestamp_ms, samples); other messages by type."""
    url = f"ws://127.0.0.1:{port}/v1/capture?rate={CAPTURE_RATE}&chunk_ms={CHUNK_MS}&encoding=json"
    async with websockets.connect(url, max_size=None) as ws:
        start = json.loads(await ws.recv())
        assert start["type"] == "start", start
        while not stop.is_set():
            message = json.loads(await ws.recv())
            if message["type"] == "audio":
                samples = np.frombuffer(base64.b64decode(message["data"]), dtype="<i2") / 32768.0
                record["chunks"].append((time.monotonic(), message["seq"], message["timestamp_ms"], samples))
            else:
                record["other"].append(message)


async def playback(port, record, stop):
    """A 1 kHz tone on its own stream in 20 ms frames, paced by the clock 300 ms ahead; notes
    every server message (a `drained` while it streams is an underrun)."""
    url = f"ws://127.0.0.1:{port}/v1/playback?rate={CAPTURE_RATE}&channels=1&format=s16le&stream=hostile-check-tone"
    frame = CAPTURE_RATE * CHUNK_MS // 1000
    t = np.arange(frame) / CAPTURE_RATE
    pcm = np.round(0.3 * 32767 * np.sin(2 * np.pi * TONE_HZ * t)).astype("<i2").tobytes()  # 20 ms = 20 periods
    async with websockets.connect(url) as ws:
        async def read():
            async for message in ws:
                if isinstance(message, str):
                    record["messages"].append((time.monotonic(), json.loads(message)))
        reader = asyncio.create_task(read())
        started = time.monotonic()
        record["started"] = started
        sent = 0
        try:
            while not stop.is_set():
                while sent * CHUNK_MS / 1000 < time.monotonic() - started + 0.3:
                    await ws.send(pcm)
                    sent += 1
                await asyncio.sleep(CHUNK_MS / 2000)
        finally:
            record["stopped"] = time.monotonic()
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)


def capture_figures(chunks, start, end):
    """The capture's figures over [start, end]; `*_at` say when (monotonic s) the worst wait ended
    and the longest hole in the tone began."""
    inside = [c for c in chunks if start <= c[2] / 1000 <= end]
    seq_jumps = sum(1 for a, b in zip(inside, inside[1:]) if b[1] != a[1] + 1)
    stamp_step = max((b[2] - a[2] for a, b in zip(inside, inside[1:])), default=float("inf"))
    arrival_gap, arrival_at = max((((b[0] - a[0]) * 1000, b[0]) for a, b in zip(inside, inside[1:])),
                                  default=(float("inf"), None))
    audio = np.concatenate([c[3] for c in inside]) if inside else np.zeros(0)
    present = e2e.tone_track(audio, TONE_HZ, CAPTURE_RATE) > -30
    longest_hole = 0
    hole_at = None
    run = 0
    for index, on in enumerate(present):
        run = 0 if on else run + 1
        if run > longest_hole:
            longest_hole = run
            hole_at = inside[0][2] / 1000 + (index - run + 1) * CHUNK_MS / 1000
    return dict(chunks=len(inside), seq_jumps=seq_jumps, largest_stamp_step_ms=round(stamp_step, 1),
                largest_arrival_gap_ms=round(arrival_gap, 1), largest_arrival_gap_at=arrival_at,
                tone_hole_ms=longest_hole * CHUNK_MS, tone_hole_at=hole_at,
                tone_windows=int(present.sum()), windows=len(present))


class Served:
    """The capture and playback clients' records over one part, its window (monotonic s), and the
    longest the clients' own loop was late waking (this process starved, not the server)."""

    def __init__(self):
        self.captured = dict(chunks=[], other=[])
        self.played = dict(messages=[])
        self.window = (0.0, 0.0)
        self.loop_late = (0.0, None)  # (ms, monotonic s when it woke)


async def watch_loop(served, stop):
    """Notes how late a 10 ms sleep wakes on the clients' loop."""
    while not stop.is_set():
        before = time.monotonic()
        await asyncio.sleep(0.01)
        woke = time.monotonic()
        late = (woke - before - 0.01) * 1000
        if late > served.loop_late[0]:
            served.loop_late = (late, woke)


async def while_served(gate, served, go, done, seconds):
    """Runs the capture and playback clients against `gate`; 1.5 s in, calls `go()` and waits until
    `done()`, `seconds` pass or the server exits. Nothing here blocks the loop the clients'
    arrival times are taken on."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(capture(gate.port, served.captured, stop)),
             asyncio.create_task(playback(gate.port, served.played, stop)),
             asyncio.create_task(watch_loop(served, stop))]
    try:
        await asyncio.sleep(1.5)
        start = time.monotonic()
        go()
        deadline = start + seconds
        while not done() and time.monotonic() < deadline and gate.running():
            await asyncio.sleep(0.2)
        served.window = (start, time.monotonic())
        stop.set()
        await asyncio.wait(tasks, timeout=3)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def server_state(gate, player):
    """(running, answering /healthz, the player's /v1/status object)."""
    running = gate.running()
    healthy = running and gate.get("/healthz").get("status") == "ok"
    return running, healthy, gate.get("/v1/status")[player] if running else {}


def check_served(served, part, during=None):
    """No gap over GAP_LIMIT_MS in what the capture client got or the tone it heard, no underrun of
    the playback stream, over the part's window. `during(t)` names what the hostile server was doing
    at monotonic time t: the worst moments are printed with it."""
    captured, played = served.captured, served.played
    window_start, window_end = served.window
    tone_start = max(window_start, played.get("started", window_start) + 0.5)
    tone_end = min(window_end, played.get("stopped", window_end)) - 0.1
    figures = capture_figures(captured["chunks"], tone_start, tone_end)
    at = {key: figures.pop(key) for key in ("largest_arrival_gap_at", "tone_hole_at")}
    print(f"check-hostile-peers {part}: " + json.dumps(dict(figures, seconds=round(tone_end - tone_start, 1))),
          flush=True)
    late, woke = served.loop_late
    print(f"  this check's own loop woke up to {late:.1f} ms late", flush=True)
    if during:
        moments = (("the longest wait between capture chunks ended", at["largest_arrival_gap_at"]),
                   ("the longest hole in the tone began", at["tone_hole_at"]),
                   ("this check's loop woke latest", woke))
        for what, t in moments:
            if t is not None:
                print(f"  {what} {t - tone_start:.2f} s in, during {during(t)}", flush=True)
        inside = [c for c in captured["chunks"] if tone_start <= c[2] / 1000 <= tone_end]
        worst = {}
        for a, b in itertools.pairwise(inside):
            label = during(b[0]).partition("; ")[0]
            worst[label] = max(worst.get(label, 0), (b[0] - a[0]) * 1000)
        print("  the longest waits between capture chunks by what the hostile server did: "
              + "; ".join(f"{label}: {ms:.1f} ms" for label, ms in sorted(worst.items(), key=lambda i: -i[1])[:4]),
              flush=True)
    check(figures["chunks"] >= (tone_end - tone_start) * 1000 / CHUNK_MS * 0.95,
          f"{part}: the capture client got its chunks ({figures['chunks']} in {tone_end - tone_start:.1f} s)")
    check(figures["seq_jumps"] == 0 and not [m for m in captured["other"] if m.get("type") == "overrun"],
          f"{part}: the capture stream has no seq jump and no overrun ({figures['seq_jumps']} jumps)")
    check(figures["largest_stamp_step_ms"] <= GAP_LIMIT_MS,
          f"{part}: no step over {GAP_LIMIT_MS} ms between capture chunk timestamps "
          f"(largest {figures['largest_stamp_step_ms']} ms)")
    check(figures["largest_arrival_gap_ms"] <= GAP_LIMIT_MS,
          f"{part}: no wait over {GAP_LIMIT_MS} ms between capture chunks "
          f"(largest {figures['largest_arrival_gap_ms']} ms)")
    drained = [m for t, m in played["messages"] if m.get("type") in ("drained", "error") and t < played.get("stopped", 0)]
    check(not drained, f"{part}: the playback stream never ran dry or failed while the tone streamed ({drained[:2]})")
    check(figures["windows"] > 0 and figures["tone_hole_ms"] <= GAP_LIMIT_MS,
          f"{part}: the tone is heard throughout, no hole over {GAP_LIMIT_MS} ms (longest {figures['tone_hole_ms']} ms, "
          f"{figures['tone_windows']} of {figures['windows']} windows)")


async def snapcast_attempt(binary, scratch):
    log = pathlib.Path(scratch) / f"audiogate-{time.monotonic_ns()}.log"
    gate = None

    def log_lines():
        return gate.log_text().splitlines() if gate else []

    hostile = HostileServer(log_lines)
    gate = e2e.Server(binary, log=log, log_level="info", extra=["--snapcast-server", f"127.0.0.1:{hostile.port}"])
    hostile.start()
    if not check(gate.start(capture=True), "audiogate starts against the hostile snapserver"):
        hostile.stop()
        return
    served = Served()
    try:
        await while_served(gate, served, hostile.go.set, hostile.done.is_set, 150)
        running, healthy, status = server_state(gate, "snapcast")
    finally:
        hostile.stop()
        gate.stop()

    check(hostile.done.is_set(), f"snapcast: every round was played ({len(hostile.results)} of {len(ROUNDS) + 1})")
    check(running and healthy, "snapcast: the server never exited and still answers /healthz")
    for (name, _, _, words), result in zip(ROUNDS, hostile.results[1:]):
        if not check(result.get("accepted") and result.get("hello"), f"{name}: audiogate connected and said Hello"):
            continue
        lines = result["lines"]
        said = [line for line in lines if words in line]
        check(len(said) == 1 and len(lines) <= 2,
              f"{name}: one line says why it closed ({words}: {len(said)}), {len(lines)} Snapcast lines in all"
              + (f": {lines[-1][:200]}" if lines else ""))
        if words not in ("closed the connection",):
            check(result["closed_by_audiogate"], f"{name}: audiogate closed the connection")
    check(status.get("connections", 0) >= len(ROUNDS) + 1,
          f"snapcast: /v1/status counts the connections ({status.get('connections')})")
    check_served(served, "snapcast")


# ---- the hostile Sendspin server: sendspin_hostile_server.py under .venv-sendspin's Python

SENDSPIN_VENV = e2e.ROOT / ".venv-sendspin"
SENDSPIN_SERVER = pathlib.Path(__file__).with_name("sendspin_hostile_server.py")
# What closes a Sendspin connection in audiogate's log (PlayerConnectionLoop): one line each.
SENDSPIN_CLOSING = re.compile(r"sendspin (connection to \S+ closed: |server \S+ (closed the connection|unreachable)"
                              r"|stream refused)")
CLOSED_BY_SERVER = "closed the connection"
# The rounds in the script's order, each with whether the script brings the player to playing first
# and the words one of which the line that closes its connection must hold.
SENDSPIN_ROUNDS = [
    ("warm-up", True, (CLOSED_BY_SERVER,)),
    ("bad ciphertext after the handshake", False, ("decrypt:",)),
    ("a tampered tag while playing", True, ("decrypt:",)),
    ("a replayed message", True, ("decrypt:",)),
    ("an audio chunk shorter than its header", True, ("malformed_message:",)),
    ("an audio chunk stamped at Int64.max", True, ("out_of_range:",)),
    ("a first fragment, then another message", True, ("malformed_message:",)),
    ("a first fragment, then silence", True, ("timeout:",)),
    ("an 8.5 MB audio chunk in fragments", True, ("message_too_large:",)),
    ("a 70 KB JSON message", True, ("message_too_large:",)),
    ("a WebSocket frame announcing 2 GB", True, ("message_too_large:", "dropped:")),
    ("a WebSocket message of 80 KB in continuation frames", True, ("message_too_large:",)),
    ("a re-handshake whose message 1 is noise", True, ("handshake:",)),
    ("a pairing activation on the Sentinel PSK", True, (CLOSED_BY_SERVER,)),
    ("a pairing-code share of low order", True, ("pairing: the peer's CPace share is a low-order point",)),
    ("a pairing confirmation out of turn", True, ("pairing: server/pair-confirm outside a pairing-code attempt",)),
    ("a flood of text frames after the handshake", True, ("malformed_message:",)),
    ("a flood of encrypted messages", True, ("message_flood:",)),
    ("an honest server after all that", True, (CLOSED_BY_SERVER,)),
]
FLOOD_ROUND = "a flood of encrypted messages"
# VmRSS after the flood against before it, both while a connection plays. The flood's messages are
# decoded one at a time and dropped, and the frames not yet read wait in the kernel's socket
# buffers, not in the process (the channel reads no further ahead than its back-pressure allows).
# What moves is the allocator: over 15 runs one flood (60,000-94,000 messages) grew VmRSS by 0.4 to
# 2.9 MB, and floods one after another on one process level off about 5 MB above the first, then
# stay flat. Holding the flood's messages would take 100 bytes or more each, 6 MB and up, and a leak
# of 50 bytes a message shows as well.
FLOOD_RSS_MB = 4


def sendspin_connections(lines):
    """The Sendspin lines of each connection in the order they closed, each list ending with the
    line that closed it (the joining line left out; a connection still open has no list)."""
    connections, current = [], []
    for line in lines:
        if "sendspin" not in line or "joining" in line:
            continue
        current.append(line)
        if SENDSPIN_CLOSING.search(line):
            connections.append(current)
            current = []
    return connections


class SendspinWatch:
    """Follows the hostile server's events file on a thread of its own (its status and /proc reads
    stay off the clients' loop): at each connection the script accepts, /v1/status's connection
    count; VmRSS before the flood, when the next connection plays, and at the first and last; the
    player's status a second into the honest round after the flood."""

    def __init__(self, gate, events):
        self.gate = gate
        self.events_file = events
        self.events = []
        self.connections = []  # (round, /v1/status sendspin.connections when the script accepted it)
        self.rss = {}
        self.playing = {}
        self.done = threading.Event()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()

    def _read(self):
        try:
            lines = self.events_file.read_text().splitlines()
        except OSError:
            return []
        fresh = [json.loads(line) for line in lines[len(self.events):] if line.endswith("}")]
        self.events += fresh
        return fresh

    def _sample(self, event, flood_over):
        try:
            if event["event"] == "accepted":
                self.connections.append((event["round"], self.gate.get("/v1/status")["sendspin"]["connections"]))
                self.rss.setdefault("start", self.gate.rss_mb())
            elif event["event"] == "before-flood":
                self.rss["before flood"] = self.gate.rss_mb()
            elif event["event"] == "playing" and flood_over:
                self.rss.setdefault("after flood", self.gate.rss_mb())
                # What the honest round after the flood plays, once its first chunks are due.
                time.sleep(1)
                self.playing = self.gate.get("/v1/status")["sendspin"]
            elif event["event"] == "done":
                self.rss["end"] = self.gate.rss_mb()
        except (OSError, ValueError, KeyError):
            pass

    def _run(self):
        flood_over = False
        while not self.stopping.is_set():
            for event in self._read():
                self._sample(event, flood_over)
                flood_over |= event["event"] == "end" and event.get("name") == FLOOD_ROUND
                if event["event"] == "done":
                    self.done.set()
            self.stopping.wait(0.05)

    def stop(self):
        self.stopping.set()
        if self.thread.ident is not None:
            self.thread.join(5)
        self._read()

    def during(self, t):
        """The round in progress at monotonic time t (its name; `; flooding` while the flood goes), or
        the reconnect after one."""
        current = "the start"
        for event in self.events:
            if event["t"] > t:
                break
            if event["event"] == "accepted":
                current = f"round {event['round']} ({event['name']})"
            elif event["event"] == "end":
                current = f"the reconnect after round {event['round']} ({event['name']})"
            elif event["event"] in ("flooding", "after-flood"):
                current = current.partition("; ")[0] + ("; flooding" if event["event"] == "flooding" else "; after it")
        return current

    def rounds(self):
        """{round number: {event: the event}}."""
        found = {}
        for event in self.events:
            if "round" in event:
                found.setdefault(event["round"], {})[event["event"]] = event
        return found


def sendspin_available():
    """Whether .venv-sendspin has the sendspin package; says why not (a skip where no Python >= 3.12
    exists, a failure where one does)."""
    if (SENDSPIN_VENV / "bin/sendspin").exists():
        return True
    if shutil.which("python3.12") is None and shutil.which("python3.13") is None:
        print("skipped: no Python >= 3.12 here for the sendspin package, so no hostile Sendspin server to test against",
              flush=True)
    else:
        check(False, f"{SENDSPIN_VENV.name} holds no sendspin: run scripts/install-deps.sh test")
    return False


async def sendspin_attempt(binary, scratch):
    scratch = pathlib.Path(scratch) / f"sendspin-{time.monotonic_ns()}"
    scratch.mkdir()
    port = e2e.free_port()
    events, go, server_log = scratch / "events.jsonl", scratch / "go", scratch / "hostile-server.log"
    hostile = start_sendspin_server(port, events, go, server_log)
    gate = e2e.Server(binary, log=scratch / "audiogate.log", log_level="info",
                      extra=["--sendspin-server", f"ws://127.0.0.1:{port}/sendspin"])
    watch = SendspinWatch(gate, events)
    served = Served()
    try:
        listening = e2e.wait_for(lambda: hostile.poll() is not None or port_open(port), 20)
        if not check(listening and hostile.poll() is None, "the hostile Sendspin server listens"):
            print(server_log.read_text()[-2000:])
            return
        if not check(gate.start(capture=True), "audiogate starts against the hostile Sendspin server"):
            print(gate.log_text()[-2000:])
            return
        watch.start()
        await while_served(gate, served, go.touch, watch.done.is_set, 150)
        running, healthy, status = server_state(gate, "sendspin")
    finally:
        watch.stop()
        gate.stop()
        e2e.stop_process(hostile)
    point = e2e.mark()
    check_sendspin_rounds(watch, gate.log_text().splitlines(), running and healthy, status)
    check_served(served, "sendspin", watch.during)
    output = server_log.read_text()[-3000:]
    if e2e.failures_since(point) and output:
        print("the hostile server's output:\n" + output, flush=True)


def start_sendspin_server(port, events, go, log):
    """sendspin_hostile_server.py on 127.0.0.1:`port`, its output in `log`."""
    with open(log, "w") as out:
        return subprocess.Popen([str(SENDSPIN_VENV / "bin/python"), str(SENDSPIN_SERVER), "--port", str(port),
                                 "--events", str(events), "--go", str(go)], stdout=out, stderr=subprocess.STDOUT)


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def check_sendspin_rounds(watch, log_lines, alive, status):
    rounds = watch.rounds()
    played = [n for n in range(len(SENDSPIN_ROUNDS)) if "end" in rounds.get(n, {})]
    check(watch.done.is_set() and len(played) == len(SENDSPIN_ROUNDS),
          f"sendspin: every round was played ({len(played)} of {len(SENDSPIN_ROUNDS)})")
    check(alive, "sendspin: the server never exited and still answers /healthz")
    accepted = max((e["connections"] for e in watch.events if e["event"] == "accepted"), default=0)
    # Each connection audiogate makes counts, whether or not it reached the script: equal counts mean
    # every one did, and the n-th line that closes a connection is the n-th round's.
    check(status.get("connections") == accepted,
          f"sendspin: /v1/status counts {status.get('connections')} connections, the script accepted {accepted}")
    counts = [count for _, count in watch.connections]
    check(counts == sorted(counts) and len({n for n, _ in watch.connections}) == len(counts),
          f"sendspin: audiogate reconnected after each round, its connection count rising ({counts})")
    connections = sendspin_connections(log_lines)
    for number, (name, plays, words) in enumerate(SENDSPIN_ROUNDS):
        round_events = rounds.get(number, {})
        end = round_events.get("end", {})
        reached = (round_events.get("accepted", {}).get("name") == name and end.get("handshake")
                   and end.get("playing") == plays)
        if not check(reached, f"{name}: audiogate connected, went through the handshake"
                              + (" and played" if plays else "") + ("" if reached else f" ({end})")):
            continue
        lines = connections[number] if number < len(connections) else []
        closing = lines[-1] if lines else ""
        # The codec of a stream that started, and the digits of a pairing-code round the server
        # started (the operator's to read), are said as well.
        others = [line for line in lines[:-1] if "sendspin stream:" not in line and "type it into the server" not in line]
        check(any(word in closing for word in words) and not others,
              f"{name}: one line says why it closed ({' or '.join(words)}), {len(others)} other Sendspin lines"
              + (f": {closing[closing.find('sendspin'):][:200]}" if closing else ": none"))
        if CLOSED_BY_SERVER not in words:
            check(end.get("closed_by_audiogate"), f"{name}: audiogate closed the connection")
    playing = watch.playing
    check(playing.get("codec") == "pcm" and playing.get("queued_ms", 0) > 0 and playing.get("clock_converged"),
          f"sendspin: after the flood an honest server's stream plays (codec {playing.get('codec')}, "
          f"{playing.get('queued_ms')} ms queued, clock converged {playing.get('clock_converged')})")
    sent = next((e for e in watch.events if e["event"] == "after-flood"), {})
    texts = next((e for e in watch.events if e["event"] == "text-flood"), {})
    before, after = watch.rss.get("before flood"), watch.rss.get("after flood")
    print(f"sendspin: {texts.get('messages')} text frames written before the connection was gone; the flood: "
          f"{sent.get('messages')} encrypted messages in {sent.get('seconds')} s; VmRSS "
          + ", ".join(f"{k} {v:.1f} MB" for k, v in watch.rss.items()), flush=True)
    check(sent and before and after and after - before <= FLOOD_RSS_MB,
          f"sendspin: VmRSS after the flood within {FLOOD_RSS_MB} MB of before it "
          f"({before and round(before, 1)} -> {after and round(after, 1)} MB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    e2e.add_binary_argument(parser)
    parser.add_argument("--only", choices=["snapcast", "sendspin"], help="run one part")
    args = parser.parse_args()
    # Each part is one real-time attempt, run again once when it failed while the CPU was stolen.
    with tempfile.TemporaryDirectory(prefix="audiogate-hostile-") as scratch:
        if args.only in (None, "snapcast"):
            e2e.real_time(lambda directory: asyncio.run(snapcast_attempt(args.binary, directory)), scratch, report=True)
        if args.only in (None, "sendspin") and sendspin_available():
            e2e.real_time(lambda directory: asyncio.run(sendspin_attempt(args.binary, directory)), scratch, report=True)
    e2e.finish()


if __name__ == "__main__":
    main()
