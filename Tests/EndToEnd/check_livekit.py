#!/usr/bin/env python3
"""Runs LiveKit Agents' audio I/O on audiogate: audiogate.livekit.AudioInput and AudioOutput.

    .venv-livekit/bin/python Tests/EndToEnd/check_livekit.py [--binary .build/debug/audiogate] [--device pulse]

The test card's microphone hears its loudspeaker: a tone played into the room (`paplay`) reaches
AudioInput, and what AudioOutput plays is heard by a monitor (a second capture whose chunks carry
their CLOCK_MONOTONIC capture time, the clock of time.monotonic()).
  input      AudioInput yields 16 kHz mono rtc.AudioFrames holding the room's 1 s 440 Hz tone, whole
  no server  AudioOutput on a port nobody listens on: the segment finishes interrupted at 0 s and
             wait_for_playout() returns (no wedged session)
  attach     on_detached() closes AudioInput's capture on the server and no frame comes; on_attached()
             opens it again and frames flow
  output     1 s of 523 Hz pushed faster than real time is heard at its pitch, 1 s long, without a gap;
             after flush() `playback_finished` comes when its end was heard, not interrupted, at 1 s
  clear      clear_buffer() in the middle of 3 s silences the loudspeaker within 100 ms, and
             `playback_finished` (interrupted) reports a position within 30 ms of what the monitor
             heard; the same when clear_buffer() comes before flush(), as it does when a reply is cancelled
  session    inside an AgentSession (no model or cloud service): `say()` with audio is heard whole,
             and `interrupt()` stops it within 100 ms with a matching playback position
  started    `playback_started` comes when the segment's first frame was heard (within 60 ms of the monitor)
  pause      pause() in the middle of 2 s stops the loudspeaker within 100 ms, resume() plays on: the
             tone is heard 2 s long in all, nothing lost or repeated, and finishes not interrupted
  close      aclose() leaves no capture client or stream on the server and no asyncio task
  restart    inside an AgentSession (resume_false_interruption on, as by default), the server killed
             (SIGKILL) mid-sentence: `playback_finished` interrupted within 2 s, the speech handle
             done and the session running; the server started again on its port: the output is back
             within 5 s and the next reply is heard whole
  example    examples/livekit_echo.py says back speech played into the room (espeak-ng) and ends on Ctrl-C
A check that fails while the hypervisor was stealing CPU (/proc/stat) runs once more.
Environment: AUDIOGATE_BINARY (default .build/debug/audiogate), AUDIOGATE_TEST_DEVICE (pulse).
Needs livekit-agents and the audiogate client (scripts/requirements-livekit.txt), pulseaudio-utils (paplay),
espeak-ng.
"""
import argparse
import asyncio
import logging
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

import e2e
from e2e import SpeakerMonitor, check, check_voice_example, dominant, longest_gap_ms, runs, wait_until

sys.path.insert(0, str(e2e.ROOT / "clients/python/src"))

import audiogate  # noqa: E402
from audiogate.livekit import AudioInput, AudioOutput  # noqa: E402
from livekit import rtc  # noqa: E402
from livekit.agents import Agent, AgentSession  # noqa: E402

RATE = 16000          # the monitor's rate
LK_RATE = 24000       # the agent's output rate (LiveKit's default)
IN_RATE = 16000       # AudioInput's default rate
ROOM_DB = -13.5       # RMS of a sine at amplitude 0.3
STREAM = "livekit-check"


# ---- the monitor: what the loudspeaker plays, with the time of each sample

def tone_spans(monitor, start, frequency):
    """[(start, end)] on the monotonic clock of where `frequency` sounded, and its last loud moment."""
    began, x = monitor.since(start)
    levels = e2e.tone_track(x, frequency, RATE, 10)
    spans = [(began + a, began + b) for a, b in runs(levels > -30)]
    loud = np.nonzero(levels > -40)[0]
    return spans, (began + (loud[-1] + 1) * 0.01 if len(loud) else None), began, x


def frames_of(frequency, seconds, frame_ms=20):
    """A tone as 20 ms rtc.AudioFrames at the agent's rate, as a TTS would produce it."""
    samples = e2e.tone(frequency, seconds, LK_RATE)
    n = LK_RATE * frame_ms // 1000
    return [rtc.AudioFrame(samples[i:i + n].tobytes(), LK_RATE, 1, len(samples[i:i + n]))
            for i in range(0, len(samples), n)]


async def into_tone(monitor, start, frequency, seconds, what):
    """Waits until `frequency` (played since `start`) is heard and then `seconds` into it; False,
    with a failed check, when it is not heard within 3 s."""
    heard = await wait_until(lambda: tone_spans(monitor, start, frequency)[0], 3)
    if not check(heard, f"{what}: the tone is heard"):
        return False
    await asyncio.sleep(max(0.0, heard[0][0] + seconds - time.monotonic()))
    return True


class Finished:
    """The AudioOutput's playback_finished events with their arrival time."""

    def __init__(self, output):
        self.events = []
        output.on("playback_finished", lambda ev: self.events.append((time.monotonic(), ev)))

    def after(self, start):
        return next(((t, ev) for t, ev in self.events if t >= start), None)


# ---- the checks

async def check_input(folder):
    source = AudioInput(SERVER.base)
    frames = []

    async def read():
        async for frame in source:
            frames.append(frame)

    reader = asyncio.create_task(read())
    await wait_until(lambda: frames, 5)
    path = pathlib.Path(folder) / "room-440.wav"
    e2e.write_wav(path, e2e.tone(440, 1.0, RATE), RATE)
    player = e2e.room(path)
    await asyncio.get_running_loop().run_in_executor(None, player.wait)
    await asyncio.sleep(0.3)
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)
    await source.aclose()
    check(frames and all(isinstance(f, rtc.AudioFrame) and f.sample_rate == IN_RATE and f.num_channels == 1
                         for f in frames),
          f"input: {len(frames)} rtc.AudioFrames at {frames[0].sample_rate if frames else '?'} Hz, "
          f"{frames[0].num_channels if frames else '?'} channel")
    x = np.frombuffer(b"".join(bytes(f.data) for f in frames), dtype="<i2") / 32768.0
    spans = runs(e2e.tone_track(x, 440, IN_RATE, 10) > -30)
    if not check(len(spans) == 1, f"input: the room's tone is heard once ({len(spans)} runs)"):
        return
    a, b = spans[0]
    inner = x[int((a + 0.02) * IN_RATE):int((b - 0.02) * IN_RATE)]
    pitch = dominant(inner, IN_RATE)
    check(abs(pitch - 440) <= 3 and abs((b - a) - 1.0) <= 0.04 and longest_gap_ms(inner, IN_RATE) < 3,
          f"input: the frames hold the tone whole ({b - a:.2f} s at {pitch:.1f} Hz, longest gap "
          f"{longest_gap_ms(inner, IN_RATE):.1f} ms)")


class Started:
    """The AudioOutput's playback_started events."""

    def __init__(self, output):
        self.events = []
        output.on("playback_started", lambda ev: self.events.append((time.monotonic(), ev)))


async def check_pause(monitor, output, finished):
    start = time.monotonic()
    for frame in frames_of(600, 2.0):
        await output.capture_frame(frame)
    output.flush()
    if not await into_tone(monitor, start, 600, 0.7, "pause"):
        return
    paused = time.monotonic()
    output.pause()
    await asyncio.sleep(1.0)
    resumed = time.monotonic()
    output.resume()
    done = await wait_until(lambda: finished.after(resumed), 4)
    await asyncio.sleep(0.3)
    spans, _, _, _ = tone_spans(monitor, start, 600)
    total = sum(b - a for a, b in spans)
    if not check(len(spans) == 2, f"pause: two runs of the tone, before the pause and after ({len(spans)})"):
        return
    check(spans[0][1] - paused <= 0.1 and spans[1][0] - resumed <= 0.15 and abs(total - 2.0) <= 0.04,
          f"pause: silent {1000 * (spans[0][1] - paused):.0f} ms after pause(), on again {1000 * (spans[1][0] - resumed):.0f} ms "
          f"after resume(), {total:.3f} s heard of 2 s")
    if check(done is not None, "pause: playback_finished after resume()"):
        check(not done[1].interrupted and abs(done[1].playback_position - 2.0) <= 0.01,
              f"pause: not interrupted, position {done[1].playback_position:.3f} s of 2 s")


async def check_restart(monitor, folder):
    global SERVER
    output = AudioOutput(SERVER.base, sample_rate=LK_RATE, stream=STREAM)
    finished = Finished(output)
    session = await started_session(output)
    try:
        start = time.monotonic()
        handle = session.say("a long tone", audio=tone_frames(3.0, 740))
        if not await into_tone(monitor, start, 740, 0.5, "restart"):
            return
        killed = time.monotonic()
        SERVER.process.kill()
        SERVER.process.wait()
        done = await wait_until(lambda: finished.after(killed), 3)
        check(done is not None and done[1].interrupted and done[0] - killed <= 2.0,
              f"restart: playback_finished interrupted "
              f"{1000 * (done[0] - killed) if done else float('nan'):.0f} ms after the server was killed")
        try:
            await asyncio.wait_for(handle.wait_for_playout(), 2)
            ended = "done"
        except asyncio.TimeoutError:
            ended = "still waiting"
        check(ended == "done", f"restart: the speech handle is {ended} (interrupted {handle.interrupted})")
        restarted = e2e.Server(ARGS.binary, ARGS.device, port=SERVER.port)
        SERVER.stop()
        SERVER = restarted
        if not check(await asyncio.get_running_loop().run_in_executor(None, SERVER.start, True),
                     "restart: the server starts again on its port"):
            return
        ready = time.monotonic()
        back = await wait_until(lambda: output.connected and monitor.live(), 8)
        check(back and time.monotonic() - ready <= 5.0,
              f"restart: the output is back {time.monotonic() - ready:.2f} s after the server")
        start = time.monotonic()
        handle = session.say("after the restart", audio=tone_frames(1.0, 880))
        await asyncio.wait_for(handle.wait_for_playout(), 5)
        await asyncio.sleep(0.2)
        spans, _, _, _ = tone_spans(monitor, start, 880)
        check(len(spans) == 1 and abs(spans[0][1] - spans[0][0] - 1.0) <= 0.04 and not handle.interrupted,
              f"restart: the next reply is heard whole ({', '.join(f'{b - a:.2f} s' for a, b in spans)})")
    finally:
        await session.aclose()
        await output.aclose()


async def check_no_server():
    output = AudioOutput(f"http://127.0.0.1:{e2e.free_port()}", sample_rate=LK_RATE, stream=STREAM)
    finished = Finished(output)
    try:
        for frame in frames_of(523, 0.2):
            await output.capture_frame(frame)
        output.flush()
        done = await wait_until(lambda: finished.events, 2)
        check(done and done[0][1].interrupted and done[0][1].playback_position == 0,
              f"no server: the segment finishes interrupted ({done[0][1] if done else 'no playback_finished'})")
        try:
            await asyncio.wait_for(output.wait_for_playout(), 1)
            waited = "returns"
        except asyncio.TimeoutError:
            waited = "hangs"
        check(waited == "returns", f"no server: wait_for_playout() {waited}")
    finally:
        await output.aclose()


async def check_attach():
    source = AudioInput(SERVER.base)
    frames = []

    async def read():
        async for frame in source:
            frames.append(frame)

    def subscribers():
        return SERVER.get("/v1/status")["capture"]["subscribers"]

    reader = asyncio.create_task(read())
    try:
        await wait_until(lambda: frames, 5)
        attached = subscribers()
        source.on_detached()
        closed = await wait_until(lambda: subscribers() == attached - 1, 3)
        count = len(frames)
        await asyncio.sleep(0.3)
        check(closed and len(frames) == count,
              f"attach: detached, the capture is closed ({subscribers()} capture clients, {attached} attached) "
              f"and {len(frames) - count} frames came in 0.3 s")
        source.on_attached()
        flowing = await wait_until(lambda: len(frames) >= count + 10, 3)
        check(flowing and subscribers() == attached,
              f"attach: attached again, frames flow ({len(frames) - count} since) on {subscribers()} capture clients")
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        await source.aclose()


async def check_output(monitor, output, finished, started):
    status = SERVER.get("/v1/status")["playback"]
    start = time.monotonic()
    for frame in frames_of(523, 1.0):
        await output.capture_frame(frame)
    written = time.monotonic()
    output.flush()
    done = await wait_until(lambda: finished.after(start), 5)
    await asyncio.sleep(0.2)
    spans, _, began, x = tone_spans(monitor, start, 523)
    if not check(len(spans) == 1, f"output: the pushed tone is heard once ({len(spans)} runs)"):
        return
    a, b = spans[0]
    inner = x[int((a - began + 0.02) * RATE):int((b - began - 0.02) * RATE)]
    pitch, gap = dominant(inner, RATE), longest_gap_ms(inner, RATE)
    level = e2e.dbfs(inner) - ROOM_DB
    after = SERVER.get("/v1/status")["playback"]
    check(abs(pitch - 523) <= 3 and abs((b - a) - 1.0) <= 0.04 and gap < 3 and abs(level) <= 3
          and after["underruns"] == status["underruns"],
          f"output: heard at its pitch, whole and without a gap ({b - a:.2f} s at {pitch:.1f} Hz, longest gap "
          f"{gap:.1f} ms, level {level:+.1f} dB, {after['underruns'] - status['underruns']} underruns)")
    check(written - start < 0.5, f"output: the frames were taken faster than real time ({written - start:.2f} s for 1 s)")
    begun = next((ev.created_at for at, ev in started.events if at >= start), None)
    if check(begun is not None, "started: playback_started after the first frame"):
        # created_at is wall-clock time; the monitor's spans are monotonic.
        heard_at = begun - (time.time() - time.monotonic())
        check(abs(heard_at - a) <= 0.06,
              f"started: playback_started dates the first heard frame {1000 * (heard_at - a):+.0f} ms from the monitor")
    if check(done is not None, "output: playback_finished after flush()"):
        at, ev = done
        check(not ev.interrupted and abs(ev.playback_position - 1.0) <= 0.01,
              f"output: not interrupted, position {ev.playback_position:.3f} s of 1 s")
        check(-0.02 <= at - b <= 0.15, f"output: playback_finished when the end was heard ({1000 * (at - b):+.0f} ms)")


async def check_clear(monitor, output, finished, frequency, flush_first):
    name = "clear after flush" if flush_first else "clear before flush"
    start = time.monotonic()
    for frame in frames_of(frequency, 3.0):
        await output.capture_frame(frame)
    if flush_first:
        output.flush()
    if not await into_tone(monitor, start, frequency, 0.8, name):
        return
    cleared = time.monotonic()
    output.clear_buffer()
    if not flush_first:
        output.flush()
    done = await wait_until(lambda: finished.after(cleared), 3)
    await asyncio.sleep(0.5)
    spans, last, _, _ = tone_spans(monitor, start, frequency)
    check(len(spans) == 1 and last is not None and last - cleared <= 0.1,
          f"{name}: the loudspeaker is silent {1000 * (last - cleared) if last else float('nan'):.0f} ms after clear_buffer()")
    if check(done is not None and done[1].interrupted, f"{name}: playback_finished, interrupted"):
        position, span = done[1].playback_position, spans[0][1] - spans[0][0]
        check(abs(position - span) <= 0.03,
              f"{name}: position {position:.3f} s, the monitor heard {span:.3f} s ({1000 * (position - span):+.0f} ms)")


async def tone_frames(seconds, frequency):
    """A tone as a TTS stream of frames, for `session.say(audio=...)`."""
    for frame in frames_of(frequency, seconds):
        yield frame


async def started_session(output, **options):
    """An AgentSession (no model or cloud service) speaking through `output`."""
    session = AgentSession(**options)
    session.output.audio = output
    await session.start(Agent(instructions="Say what you are given."))
    return session


async def check_session(monitor, output, finished):
    session = await started_session(output, turn_handling={"interruption": {"resume_false_interruption": False}})
    try:
        start = time.monotonic()
        handle = session.say("a tone", audio=tone_frames(1.0, 587))
        await asyncio.wait_for(handle.wait_for_playout(), 5)
        ended = time.monotonic()
        spans, _, _, _ = tone_spans(monitor, start, 587)
        check(len(spans) == 1 and abs(spans[0][1] - spans[0][0] - 1.0) <= 0.04 and -0.02 <= ended - spans[0][1] <= 0.2,
              f"session: say() is heard whole and ends when heard "
              f"({', '.join(f'{b - a:.2f} s' for a, b in spans)}, done {1000 * (ended - spans[-1][1]) if spans else 0:+.0f} ms after)")
        start = time.monotonic()
        handle = session.say("a long tone", audio=tone_frames(3.0, 698))
        if not await into_tone(monitor, start, 698, 0.8, "session: the second say()"):
            return
        interrupted = time.monotonic()
        session.interrupt()
        done = await wait_until(lambda: finished.after(interrupted), 3)
        await asyncio.sleep(0.5)
        spans, last, _, _ = tone_spans(monitor, start, 698)
        check(handle.interrupted and last is not None and last - interrupted <= 0.1,
              f"session: interrupt() silences it {1000 * (last - interrupted) if last else float('nan'):.0f} ms after")
        if check(done is not None and done[1].interrupted and len(spans) == 1,
                 "session: playback_finished, interrupted"):
            position, span = done[1].playback_position, spans[0][1] - spans[0][0]
            check(abs(position - span) <= 0.03,
                  f"session: position {position:.3f} s, the monitor heard {span:.3f} s ({1000 * (position - span):+.0f} ms)")
    finally:
        await session.aclose()


async def retried(run, *args):
    for attempt in e2e.attempts():
        point = e2e.mark()
        await asyncio.get_running_loop().run_in_executor(None, SERVER.quiet, 5)
        await run(*args)
        if not e2e.failures_since(point) or not attempt.retry():
            return
        print(f"     (again: the hypervisor took {attempt.steal:.0f} % of the CPU)", flush=True)
        e2e.rewind(point)


async def run(folder):
    client = audiogate.Client(SERVER.base)
    monitor = SpeakerMonitor(client)
    await monitor.start()
    check(await wait_until(monitor.live, 5), "the monitor hears the loudspeaker live")
    existing = asyncio.all_tasks()
    before = SERVER.get("/v1/status")
    await retried(check_input, folder)
    await retried(check_attach)
    await check_no_server()
    output = AudioOutput(SERVER.base, sample_rate=LK_RATE, stream=STREAM)
    finished = Finished(output)
    await retried(check_output, monitor, output, finished, Started(output))
    await retried(check_pause, monitor, output, finished)
    await retried(check_clear, monitor, output, finished, 659, True)
    await retried(check_clear, monitor, output, finished, 784, False)
    await output.aclose()
    session_output = AudioOutput(SERVER.base, sample_rate=LK_RATE, stream=STREAM)
    await retried(check_session, monitor, session_output, Finished(session_output))
    await session_output.aclose()

    def same_counts():
        status = SERVER.get("/v1/status")
        return (status["capture"]["subscribers"] == before["capture"]["subscribers"]
                and status["playback"]["streams"] == before["playback"]["streams"])

    counted = await wait_until(same_counts, 3)
    status = SERVER.get("/v1/status")
    check(counted, f"close: no capture client or stream left ({status['capture']['subscribers']} capture clients, "
                   f"{status['playback']['streams']} streams; {before['capture']['subscribers']} and "
                   f"{before['playback']['streams']} before)")
    def leftover():
        return [t for t in asyncio.all_tasks() - existing if t is not asyncio.current_task()]

    # A task may still be on its way out (a socket's closing handshake): give it a moment.
    await wait_until(lambda: not leftover(), 1)
    left = leftover()
    check(not left, f"close: no asyncio task left ({', '.join(f'{t.get_name()} {t.get_coro()}' for t in left) or 'none'})")
    await retried(check_voice_example, SERVER, monitor, folder, e2e.ROOT / "examples/livekit_echo.py")
    await check_restart(monitor, folder)
    await monitor.stop()


SERVER = None
ARGS = None


def main():
    global SERVER, ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    e2e.add_binary_argument(parser)
    parser.add_argument("--device", default=os.environ.get("AUDIOGATE_TEST_DEVICE", "pulse"))
    args = parser.parse_args()
    ARGS = args
    logging.basicConfig(level=logging.WARNING)
    started = time.monotonic()
    SERVER = e2e.Server(args.binary, args.device)
    if not check(SERVER.start(capture=True), f"server starts on {args.device}"):
        e2e.finish()
    try:
        with tempfile.TemporaryDirectory(prefix="audiogate-livekit-") as folder:
            asyncio.run(run(folder))
    finally:
        SERVER.stop()
    print(f"     ({time.monotonic() - started:.1f} s)", flush=True)
    e2e.finish()


if __name__ == "__main__":
    main()
