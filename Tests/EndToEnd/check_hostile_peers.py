#!/usr/bin/env python3
"""A hostile snapserver: a small server speaking the Snapcast binary protocol to audiogate's
Snapcast client, one round per connection, each answering Time requests and sending PCM chunks
around its attack:

- ServerSettings with `bufferMs` near Int64.max and negative, `latency` huge either way, a
  `bufferMs` past Int64 (each refused: out_of_range or malformed_message);
- Time answers and chunk stamps at the ends of their 32-bit fields (played or dropped, never a trap;
  the round ends when the script closes);
- a codec header whose name length is 4 GB, a pcm header at 4 GHz (bad_codec_header); a message
  whose size field is 4 GB (message_too_large); a chunk whose payload length runs past its end
  (malformed_message);
- truncated messages: held open after the settings (the Time timeout closes it), held open before
  any settings (the settings timeout closes it), and cut by a close.

While it runs, a capture WebSocket client (JSON chunks: seq and timestamp_ms) and a playback
WebSocket streaming a 1 kHz tone keep being served: no seq jump, no step over 60 ms between chunk
timestamps or arrivals, no `drained` while the tone streams, and the tone heard in every 20 ms of
the capture with no hole over 60 ms. Each hostile connection logs one line saying why it closed (at
most two Snapcast lines per connection: the codec line of a connection that got that far), and the
server never exits. A failure while the hypervisor stole more than 5 % of the CPU is run again once.

    .venv/bin/python Tests/EndToEnd/check_hostile_peers.py [--binary .build/debug/audiogate]
"""
import argparse
import asyncio
import base64
import json
import pathlib
import socket
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
    inside = [c for c in chunks if start <= c[2] / 1000 <= end]
    seq_jumps = sum(1 for a, b in zip(inside, inside[1:]) if b[1] != a[1] + 1)
    stamp_step = max((b[2] - a[2] for a, b in zip(inside, inside[1:])), default=float("inf"))
    arrival_gap = max(((b[0] - a[0]) * 1000 for a, b in zip(inside, inside[1:])), default=float("inf"))
    audio = np.concatenate([c[3] for c in inside]) if inside else np.zeros(0)
    present = e2e.tone_track(audio, TONE_HZ, CAPTURE_RATE) > -30
    longest_hole = 0
    run = 0
    for on in present:
        run = 0 if on else run + 1
        longest_hole = max(longest_hole, run)
    return dict(chunks=len(inside), seq_jumps=seq_jumps, largest_stamp_step_ms=round(stamp_step, 1),
                largest_arrival_gap_ms=round(arrival_gap, 1), tone_hole_ms=longest_hole * CHUNK_MS,
                tone_windows=int(present.sum()), windows=len(present))


async def attempt(binary, scratch):
    log = pathlib.Path(scratch) / f"audiogate-{time.monotonic_ns()}.log"
    hostile = None
    gate = None

    def log_lines():
        return gate.log_text().splitlines() if gate else []

    hostile = HostileServer(log_lines)
    gate = e2e.Server(binary, log=log, log_level="info", extra=["--snapcast-server", f"127.0.0.1:{hostile.port}"])
    hostile.start()
    if not check(gate.start(capture=True), "audiogate starts against the hostile snapserver"):
        hostile.stop()
        return
    stop = asyncio.Event()
    captured = dict(chunks=[], other=[])
    played = dict(messages=[])
    tasks = []
    try:
        tasks = [asyncio.create_task(capture(gate.port, captured, stop)),
                 asyncio.create_task(playback(gate.port, played, stop))]
        await asyncio.sleep(1.5)
        window_start = time.monotonic()
        hostile.go.set()
        deadline = time.monotonic() + 150
        while not hostile.done.is_set() and time.monotonic() < deadline and gate.running():
            await asyncio.sleep(0.2)
        window_end = time.monotonic()
        stop.set()
        await asyncio.wait(tasks, timeout=3)
        running = gate.running()
        healthy = running and gate.get("/healthz").get("status") == "ok"
        status = gate.get("/v1/status")["snapcast"] if running else {}
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        hostile.stop()
        gate.stop()

    check(hostile.done.is_set(), f"every round was played ({len(hostile.results)} of {len(ROUNDS) + 1})")
    check(running and healthy, "the server never exited and still answers /healthz")
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
          f"/v1/status counts the connections ({status.get('connections')})")

    tone_start = max(window_start, played.get("started", window_start) + 0.5)
    tone_end = min(window_end, played.get("stopped", window_end)) - 0.1
    figures = capture_figures(captured["chunks"], tone_start, tone_end)
    print("check-hostile-peers: " + json.dumps(dict(figures, seconds=round(tone_end - tone_start, 1))), flush=True)
    check(figures["chunks"] >= (tone_end - tone_start) * 1000 / CHUNK_MS * 0.95,
          f"the capture client got its chunks ({figures['chunks']} in {tone_end - tone_start:.1f} s)")
    check(figures["seq_jumps"] == 0 and not [m for m in captured["other"] if m.get("type") == "overrun"],
          f"the capture stream has no seq jump and no overrun ({figures['seq_jumps']} jumps)")
    check(figures["largest_stamp_step_ms"] <= GAP_LIMIT_MS,
          f"no step over {GAP_LIMIT_MS} ms between capture chunk timestamps (largest {figures['largest_stamp_step_ms']} ms)")
    check(figures["largest_arrival_gap_ms"] <= GAP_LIMIT_MS,
          f"no wait over {GAP_LIMIT_MS} ms between capture chunks (largest {figures['largest_arrival_gap_ms']} ms)")
    drained = [m for t, m in played["messages"] if m.get("type") in ("drained", "error") and t < played.get("stopped", 0)]
    check(not drained, f"the playback stream never ran dry or failed while the tone streamed ({drained[:2]})")
    check(figures["windows"] > 0 and figures["tone_hole_ms"] <= GAP_LIMIT_MS,
          f"the tone is heard throughout, no hole over {GAP_LIMIT_MS} ms (longest {figures['tone_hole_ms']} ms, "
          f"{figures['tone_windows']} of {figures['windows']} windows)")


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    e2e.add_binary_argument(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="audiogate-hostile-") as scratch:
        for run in e2e.attempts():
            point = e2e.mark()
            await attempt(args.binary, scratch)
            print(f"steal over the attempt: {run.steal:.1f} %, CPUs busy {run.busy:.0f} %", flush=True)
            if not e2e.failures_since(point) or not run.retry():
                break
            e2e.rewind(point)
    e2e.finish()


if __name__ == "__main__":
    asyncio.run(main())
