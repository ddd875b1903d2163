#!/usr/bin/env python3
"""The Python client package `audiogate` (clients/python) against a live server on the test card,
whose default capture source is the speaker's monitor, so what the client plays it captures again.

- an http:// URL serves both the HTTP calls and the WebSockets (ws:// works for HTTP too);
- capture: the `start` message as CaptureStart; chunks numbered from 0 without gaps, 20 ms apart on
  the server's clock (longer only by audio the server reports lost); a tone written through
  Playback is captured at its pitch and level;
- marks resolve in order, each not before its audio was heard (timed on the capture's clock),
  with their positions; `drained()` returns after the last; the server's drained event arrives;
- clear (barge-in) silences the speaker within 60 ms of the call, measured on what the card heard
  (capture timestamps are CLOCK_MONOTONIC, the clock of time.monotonic()); Cleared's played_ms and
  flushed_ms add up to what was written; a pending mark resolves as not heard;
- `levels=True` brings LevelEvents among the chunks;
- say, status, a recording started, listed, stopped and downloaded as WAV;
- errors: a bad parameter refuses the WebSocket with the server's code; an unreachable port and a
  bad scheme are reported as such;
- the server shutting down (SIGTERM) ends a capture's iteration and fails a pending mark and the next
  write with `connection_closed` when reconnecting is off;
- a server restarted (SIGTERM, then started again on its port) under a capture loop and a playback:
  the capture yields ConnectionLost, then Reconnected with the audio lost (its timestamps' gap, and
  seq jumps by as many chunks) and chunks again within 5 s of the server being back; the playback
  reports ConnectionLost and Reconnected and plays a mark that is heard;
- a server with --token: the client with the token captures, plays and calls HTTP; without it, or
  with a wrong one, every route is refused as `unauthorized` (401).
A real-time check that fails while the hypervisor was stealing CPU or the CPUs were saturated
(/proc/stat) runs once more.

    .venv/bin/python Tests/EndToEnd/check_client.py [--binary .build/debug/audiogate] [--device pulse]
"""
import argparse
import asyncio
import os
import pathlib
import sys
import tempfile
import time
import wave

import numpy as np
import websockets

import e2e
from e2e import check, dbfs, tone

try:
    import audiogate
except ImportError:  # a checkout without `pip install ./clients/python`
    sys.path.insert(0, str(e2e.ROOT / "clients/python/src"))
    import audiogate

websockets_version = tuple(int(part) for part in websockets.__version__.split(".")[:2])

RATE = 16000
PLAY_RATE = 24000
TOKEN = "client-check-token"


class Recorder:
    """A client capture in the background: every chunk with the monotonic time it was captured."""

    def __init__(self, capture):
        self.capture = capture
        self.chunks = []
        self.first_received = None
        self.task = None

    async def __aenter__(self):
        await self.capture.open()
        self.task = asyncio.ensure_future(self._read())
        # The first chunk: capture is flowing.
        await wait_async(lambda: self.chunks, 3)
        return self

    async def _read(self):
        async for chunk in self.capture.chunks():
            if not self.chunks:
                self.first_received = time.monotonic()
            self.chunks.append(chunk)

    async def __aexit__(self, *exc):
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.capture.close()

    def samples(self):
        """(float samples, monotonic seconds of the first one)."""
        data = b"".join(c.data for c in self.chunks)
        return np.frombuffer(data, dtype="<i2") / 32768.0, self.chunks[0].timestamp_ms / 1000


async def wait_async(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return False


def dominant(x, rate):
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2
    spectrum[0] = 0
    return int(np.argmax(spectrum)) * rate / len(x)


def sounding(x, floor=0.02):
    """Indices of the samples above `floor` (the null sink is digital silence otherwise)."""
    return np.flatnonzero(np.abs(x) > floor)


async def check_urls(base):
    ws = base.replace("http://", "ws://")
    for url in (base, ws, ws + "/"):
        status = await audiogate.Client(url).status()
        check(status["capture"]["state"] == "running", f"status() through {url}: capture {status['capture']['state']}")
    try:
        audiogate.Client("ftp://127.0.0.1:1")
        check(False, "a bad scheme is refused")
    except ValueError as error:
        check("http://" in str(error), f"a bad scheme is refused: {error}")


async def check_capture_and_marks(base):
    """Capture at the right pitch and marks in order, through an http:// URL."""
    client = audiogate.Client(base)
    events = []
    lost_before = (await client.status())["capture"]["lost_ms"]
    async with Recorder(client.capture(rate=RATE, chunk_ms=20)) as recorder:
        start = recorder.capture.start
        check(start == audiogate.CaptureStart(RATE, 1, "s16le", 20, start.processing)
              and start.processing.get("aec") is False,
              f"capture through {base}: start {start}")
        async with client.playback(rate=PLAY_RATE, stream="client-check", on_event=events.append) as playback:
            segments = [(440, 0.4), (660, 0.4), (880, 0.6)]
            marks = []
            for index, (frequency, seconds) in enumerate(segments):
                await playback.write(tone(frequency, seconds, PLAY_RATE).tobytes())
                marks.append(playback.mark(f"segment-{index}"))
            resolved = []
            for future in marks:
                future.add_done_callback(lambda f: resolved.append((f.result().name, time.monotonic())))
            results = await asyncio.wait_for(asyncio.gather(*marks), 10)
            await asyncio.wait_for(playback.drained(), 5)
            await wait_async(lambda: any(isinstance(e, audiogate.Drained) for e in events), 2)
            await asyncio.sleep(0.2)
        kinds = [type(e).__name__ for e in events]
        check(kinds[:1] == ["Started"] and kinds.count("Started") == 1 and "Drained" in kinds,
              f"playback: Started when the first segment began to be heard, once, before the marks ({kinds})")
        x, t0 = recorder.samples()
        chunks = list(recorder.chunks)
        first_received = recorder.first_received
    lost_ms = (await client.status())["capture"]["lost_ms"] - lost_before

    # The chunks: numbered without gaps, 20 ms apart on the server's clock.
    seqs = [c.seq for c in chunks]
    steps = np.diff([c.timestamp_ms for c in chunks])
    check(seqs == list(range(len(chunks))) and all(len(c.data) == RATE // 50 * 2 for c in chunks),
          f"capture: {len(chunks)} chunks of 20 ms numbered 0..{seqs[-1]} without gaps")
    # Device timestamps jitter by a fraction of a period and follow the card's clock (up to 2 %
    # off the system's over these seconds on the busy test machine). Audio the device lost (the server's `lost_ms`;
    # the test card loses about 100 ms once, soon after the server starts) shows as a longer step.
    jumps = steps[steps > 23]
    regular = steps[steps <= 23]
    span = regular.sum()
    check(len(regular) > 0 and np.all(regular > 17) and abs(span / (20 * len(regular)) - 1) < 0.05
          and abs((jumps - 20).sum() - lost_ms) < 5,
          f"capture: timestamps 20 ms apart (steps from {regular.min():.2f} to {regular.max():.2f} ms, "
          f"{span:.1f} ms over {len(regular)} steps; jumps {np.round(jumps - 20, 1).tolist()} ms for "
          f"{lost_ms:.1f} ms the server lost)")
    # The first chunk's last sample was captured before it arrived, and at most the 1 s queue earlier.
    age = first_received - (chunks[0].timestamp_ms + chunks[0].duration_ms) / 1000
    check(-0.005 <= age <= 1.0,
          f"capture: timestamps on the clock of time.monotonic() (the first chunk arrived {1000 * age:.1f} ms "
          f"after its last sample was captured)")

    # The tone at its pitch: each segment found in the capture at the right frequency and level.
    played = sounding(x)
    ok = len(played) > 0
    detail = "nothing heard"
    if ok:
        begin = played[0]
        found = []
        offset = 0.0
        for frequency, seconds in segments:
            a = begin + int((offset + 0.05) * RATE)
            b = begin + int((offset + seconds - 0.05) * RATE)
            found.append((dominant(x[a:b], RATE), dbfs(x[a:b])))
            offset += seconds
        heard_seconds = (played[-1] - played[0]) / RATE
        ok = (all(abs(f - want) <= 3 and abs(level - -13.5) <= 3 for (f, level), (want, _) in zip(found, segments))
              and abs(heard_seconds - 1.4) <= 0.03)
        detail = (", ".join(f"{f:.1f} Hz at {level:.1f} dBFS" for f, level in found)
                  + f"; {heard_seconds:.3f} s of tone")
    check(ok, f"capture: the tones written through Playback are captured at their pitch: {detail}")

    # Marks: in order, heard, with positions; none before its audio was captured.
    names = [m.name for m in results]
    check(names == ["segment-0", "segment-1", "segment-2"] and all(m.heard for m in results)
          and [round(m.position_ms) for m in results] == [400, 800, 1400],
          f"marks: {[(m.name, m.heard, m.position_ms) for m in results]}")
    heard_events = [e.name for e in events if isinstance(e, audiogate.Mark)]
    check([name for name, _ in resolved] == names and heard_events[:3] == names,
          f"marks: resolved in order {[name for name, _ in resolved]}, events {heard_events}")
    if len(played):
        tone_start = t0 + played[0] / RATE
        ends = np.cumsum([s for _, s in segments])
        lateness = [when - (tone_start + end) for (_, when), end in zip(resolved, ends)]
        # A mark resolves once its last sample left the speaker, on the clock the capture is
        # stamped with; it may come a little later (the event's way back), never earlier.
        check(all(-0.03 <= late <= 0.5 for late in lateness),
              f"marks: each resolves after its audio was heard, {', '.join(f'{1000 * s:.0f}' for s in lateness)} ms "
              f"after its last sample")
    check(any(isinstance(e, audiogate.Drained) for e in events) and playback.heard_ms == 1400,
          f"drained: the server's event came, heard_ms {playback.heard_ms}")


async def check_clear(base):
    """clear() silences the speaker within 60 ms of the call, as the card heard it."""
    client = audiogate.Client(base)
    async with Recorder(client.capture(rate=RATE, chunk_ms=10)) as recorder:
        async with client.playback(rate=PLAY_RATE, stream="client-check") as playback:
            await playback.write(tone(550, 5, PLAY_RATE).tobytes())
            pending = playback.mark("never")
            await wait_async(lambda: len(sounding(recorder.samples()[0])) > RATE // 2, 5)
            called = time.monotonic()
            cleared = await playback.clear()
            answered = time.monotonic()
            mark = await asyncio.wait_for(pending, 1)
            await asyncio.sleep(0.5)
        x, t0 = recorder.samples()
    played = sounding(x)
    if not check(len(played) > 0, "clear: the tone was heard"):
        return
    heard_ms = 1000 * (played[-1] - played[0]) / RATE
    stopped = t0 + played[-1] / RATE
    after = x[played[-1] + 1:]
    check(stopped - called <= 0.060 and len(after) > RATE // 4 and dbfs(after) < -60,
          f"clear: the speaker fell silent {1000 * (stopped - called):.1f} ms after clear() "
          f"(answered in {1000 * (answered - called):.1f} ms), then {dbfs(after):.1f} dBFS")
    check(abs(cleared.played_ms - heard_ms) <= 60 and abs(cleared.played_ms + cleared.flushed_ms - 5000) <= 60,
          f"clear: {cleared}, {heard_ms:.0f} ms heard of 5000 ms written")
    check(mark == audiogate.Mark("never", False, 5000.0) and playback.written_ms == 0,
          f"clear: the pending mark resolves as not heard: {mark}")


async def check_levels(base):
    async with audiogate.Client(base).capture(rate=RATE, levels=True) as capture:
        items = []
        started = time.monotonic()
        async for item in capture:
            items.append(item)
            if time.monotonic() - started > 0.5:
                break
    levels = [i for i in items if isinstance(i, audiogate.LevelEvent)]
    chunks = [i for i in items if isinstance(i, audiogate.AudioChunk)]
    check(len(levels) >= 7 and all(-120 <= e.rms_dbfs <= e.peak_dbfs <= 0 for e in levels) and len(chunks) >= 20,
          f"levels=True: {len(levels)} LevelEvents among {len(chunks)} chunks in 0.5 s, e.g. {levels[:1]}")


async def check_shutdown(server):
    """The server going away (SIGTERM, close 1001) ends a capture's iteration and fails a playback's
    waiters, with reconnecting off."""
    client = audiogate.Client(server.base, reconnect=False)
    async with client.capture(rate=RATE) as capture, client.playback(rate=PLAY_RATE) as playback:
        await playback.write(tone(440, 3, PLAY_RATE).tobytes())
        mark = playback.mark("end")
        received = 0

        async def drain():
            nonlocal received
            async for _ in capture:
                received += 1

        reader = asyncio.ensure_future(drain())
        await asyncio.sleep(0.3)
        stopped = time.monotonic()
        await asyncio.to_thread(server.stop)
        try:
            await asyncio.wait_for(reader, 3)
            ended = f"the capture's iteration ended after {received} items"
        except Exception as error:
            ended = f"the capture's iteration raised {type(error).__name__}: {error}"
        try:
            outcome = await asyncio.wait_for(mark, 2)
        except audiogate.AudiogateError as error:
            outcome = error
        try:
            await playback.write(b"\0\0")
            written = "accepted"
        except audiogate.AudiogateError as error:
            written = error.code
    check(ended.startswith("the capture's iteration ended") and received > 0
          and isinstance(outcome, audiogate.AudiogateError) and written == "connection_closed",
          f"shutdown: {ended}; the pending mark: {outcome!r}; a write then: {written} "
          f"({time.monotonic() - stopped:.2f} s)")


async def check_restart(server, binary, device):
    """A server restarted under a capture loop and a playback: both come back by themselves within
    5 s of the server and report what they lost. Returns the restarted server."""
    client = audiogate.Client(server.base)
    items, events = [], []
    capture = await client.capture(rate=RATE, chunk_ms=20).open()

    async def read():
        async for item in capture:
            items.append((time.monotonic(), item))

    reader = asyncio.ensure_future(read())
    playback = await client.playback(rate=PLAY_RATE, stream="client-restart", on_event=events.append).open()
    restarted = None
    try:
        await wait_async(lambda: len(items) >= 10, 3)
        stopped = time.monotonic()
        await asyncio.to_thread(server.stop)
        await asyncio.sleep(1.0)
        restarted = e2e.Server(binary, device, port=server.port)
        if not check(await asyncio.to_thread(restarted.start, True), "restart: the server starts again on its port"):
            return restarted
        ready = time.monotonic()

        def back():
            kinds = [type(item).__name__ for _, item in items]
            return "Reconnected" in kinds and kinds[-1] == "AudioChunk"

        await wait_async(back, 8)
        await wait_async(lambda: any(isinstance(e, audiogate.Reconnected) for e in events), 8)
        lost = next((i for i, (_, item) in enumerate(items) if isinstance(item, audiogate.ConnectionLost)), None)
        again = next((i for i, (_, item) in enumerate(items) if isinstance(item, audiogate.Reconnected)), None)
        ok = lost is not None and again is not None and again > lost and again + 1 < len(items)
        if not check(ok, f"restart: the capture yields ConnectionLost then Reconnected then chunks "
                         f"({[type(item).__name__ for _, item in items[-5:]]} last)"):
            return restarted
        before = [item for _, item in items[:lost] if isinstance(item, audiogate.AudioChunk)][-1]
        arrived, after = items[again + 1]
        reconnected = items[again][1]
        gap = after.timestamp_ms - (before.timestamp_ms + before.duration_ms)
        down = 1000 * (ready - stopped)
        check(isinstance(after, audiogate.AudioChunk) and arrived - ready <= 5.0,
              f"restart: the capture is back {arrived - ready:.2f} s after the server "
              f"(down {down / 1000:.2f} s, {reconnected.attempts} attempts)")
        check(reconnected.lost_ms is not None and abs(reconnected.lost_ms - gap) < 1 and gap >= 1000
              and after.seq - before.seq - 1 == round(gap / 20),
              f"restart: lost_ms {reconnected.lost_ms:.0f} ms, the timestamps' gap {gap:.0f} ms; seq "
              f"{before.seq} -> {after.seq}")
        kinds = [type(e).__name__ for e in events]
        restored = next((e for e in events if isinstance(e, audiogate.Reconnected)), None)
        check("ConnectionLost" in kinds and restored is not None and kinds.index("ConnectionLost") < kinds.index("Reconnected")
              and restored.down_ms / 1000 - (ready - stopped) <= 5.0,
              f"restart: the playback reports {kinds}, back after {restored.down_ms if restored else float('nan'):.0f} ms")
        await playback.write(tone(440, 0.2, PLAY_RATE).tobytes())
        try:
            mark = await asyncio.wait_for(playback.mark("after-restart"), 3)
        except (asyncio.TimeoutError, audiogate.AudiogateError) as error:
            mark = error
        check(isinstance(mark, audiogate.Mark) and mark.heard and mark.position_ms == 200,
              f"restart: the playback plays on the new server: {mark!r}")
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        await capture.close()
        await playback.close()
    return restarted


async def check_http(base, work):
    client = audiogate.Client(base)
    said = await client.say("The client speaks.", wait=True)
    check(said.get("duration_ms", 0) > 300 and said.get("played_ms", said.get("duration_ms")) > 0,
          f"say(wait=True): {said}")
    started = await client.start_recording(rate=16000, max_seconds=1, name="client check")
    listed = [r["id"] for r in await client.recordings()]
    check(started["state"] == "recording" and started["id"] in listed,
          f"start_recording: {started['id']} {started['state']}, listed")
    done = False
    for _ in range(50):
        done = (await client.recording(started["id"]))["state"] == "completed"
        if done:
            break
        await asyncio.sleep(0.1)
    stopped = await client.stop_recording(started["id"])
    files = await client.download_recording(started["id"], work)
    frames = None
    if files:
        with wave.open(str(files[0])) as w:
            frames = (w.getframerate(), w.getnframes())
    check(done and stopped["state"] == "completed" and len(files) == 1 and frames == (16000, 16000),
          f"recording: completed, downloaded {[f.name for f in files]} ({frames})")
    wav = await client.download_segment(started["id"], 0)
    check(wav[:4] == b"RIFF" and wav == files[0].read_bytes(), "download_segment: the same WAV")
    await client.delete_recording(started["id"])
    try:
        await client.recording(started["id"])
        check(False, "delete_recording: gone")
    except audiogate.AudiogateError as error:
        check(error.status == 404 and error.code == "not_found", f"delete_recording: then {error}")


async def check_errors(base):
    client = audiogate.Client(base)
    try:
        async with client.capture(rate=12345):
            pass
        check(False, "a bad capture rate is refused")
    except audiogate.AudiogateError as error:
        # websockets 12 drops the body of a refused upgrade (the message then names no parameter).
        check(isinstance(error, audiogate.AudiogateHTTPError) and error.status == 400
              and error.code == "bad_parameter" and ("rate" in error.message or websockets_version < (13,)),
              f"a bad capture rate is refused: {error!r}")
    port = e2e.free_port()
    for what, call in (("HTTP", lambda c: c.status()), ("WebSocket", lambda c: c.playback().open())):
        try:
            await call(audiogate.Client(f"http://127.0.0.1:{port}"))
            check(False, f"an unreachable server ({what})")
        except audiogate.AudiogateError as error:
            check(isinstance(error, audiogate.UnreachableError) and isinstance(error, ConnectionError)
                  and error.code == "unreachable" and error.status is None,
                  f"an unreachable server ({what}): {error!r}")


async def check_token(base):
    good = audiogate.Client(base, token=TOKEN)
    status = await good.status()
    async with good.capture(rate=RATE) as capture:
        first = await asyncio.wait_for(anext(capture.chunks()), 2)
    async with good.playback(rate=PLAY_RATE) as playback:
        await playback.write(tone(440, 0.1, PLAY_RATE).tobytes())
        mark = await asyncio.wait_for(playback.mark(), 3)
    check("capture" in status and first.seq == 0 and mark.heard,
          "token: with it, status, capture and playback work")
    for label, client in (("no token", audiogate.Client(base)), ("a wrong token", audiogate.Client(base, "wrong"))):
        refused = []
        for what, call in (("status", lambda: client.status()),
                           ("capture", lambda: client.capture().open()),
                           ("playback", lambda: client.playback().open())):
            try:
                await call()
                refused.append(f"{what} accepted")
            except audiogate.AudiogateError as error:
                refused.append(f"{what} {error.status} {error.code}")
        check(all(r.endswith("401 unauthorized") for r in refused), f"token: with {label}: {', '.join(refused)}")


def run(server, name, coroutine_function, *args, quiet=True):
    """One real-time check in its attempts; True when it passed."""
    for attempt in e2e.attempts(busy_limit=90):
        print(f"-- {name}", flush=True)
        mark = e2e.mark()
        if quiet:
            server.quiet()
        try:
            asyncio.run(coroutine_function(server.base, *args))
        except Exception as error:  # a check that crashed failed; the others still run
            check(False, f"{name}: {type(error).__name__}: {error}")
        if not e2e.failures_since(mark):
            return True
        if not attempt.retry():
            return False
        print(f"-- {name} failed while the CPUs were {attempt.steal:.0f}% stolen, {attempt.busy:.0f}% busy: once more")
        e2e.rewind(mark)
    return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    e2e.add_binary_argument(parser)
    parser.add_argument("--device", default=os.environ.get("AUDIOGATE_TEST_DEVICE", "pulse"))
    args = parser.parse_args()
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"check-client: no server binary at {args.binary} (swift build)")
    started = time.monotonic()
    check(audiogate.__file__.startswith(str(e2e.ROOT / "clients/python")) or "site-packages" in audiogate.__file__,
          f"the package: {audiogate.__file__}")
    with tempfile.TemporaryDirectory(prefix="audiogate-client-") as work:
        server = e2e.Server(args.binary, args.device)
        try:
            if check(server.start(capture=True), "the server starts and its capture runs"):
                run(server, "urls", check_urls)
                run(server, "errors", check_errors)
                run(server, "http", check_http, pathlib.Path(work))
                run(server, "capture and marks", check_capture_and_marks)
                run(server, "clear", check_clear)
                run(server, "levels", check_levels)
                asyncio.run(check_shutdown(server))
        finally:
            server.stop()
        server = e2e.Server(args.binary, args.device)
        try:
            if check(server.start(capture=True), "a server to restart starts"):
                server = asyncio.run(check_restart(server, args.binary, args.device)) or server
        finally:
            server.stop()
        server = e2e.Server(args.binary, args.device, extra=["--token", TOKEN])
        try:
            # Readiness is /healthz alone: /v1/status needs the token.
            if check(server.start(), "the server with --token starts"):
                run(server, "token", check_token, quiet=False)
        finally:
            server.stop()
    print(f"client checks in {time.monotonic() - started:.0f} s", flush=True)
    e2e.finish()


if __name__ == "__main__":
    main()
