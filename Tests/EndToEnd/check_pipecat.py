#!/usr/bin/env python3
"""Runs a real Pipecat pipeline on audiogate: transport.input() -> echo -> transport.output().

    .venv-pipecat/bin/python Tests/EndToEnd/check_pipecat.py [--binary .build/debug/audiogate] [--device pulse]

The test card's microphone hears its loudspeaker, so a tone played into the room (`paplay`) reaches
the pipeline through `WS /v1/capture`, and what the pipeline plays is heard by a monitor (a second
capture, whose chunks carry their CLOCK_MONOTONIC capture time, the clock of time.monotonic()).
The echo processor replays what it heard during a window, 1.8 s later, so the room's tone and
its echo are apart; echo cancellation (on by default) keeps the echo from feeding back.
  echo       the 1 s 440 Hz tone comes out again at 440 Hz, 1 s long, without a gap, with no
             stream underrun; BotStartedSpeakingFrame comes, and BotStoppedSpeakingFrame only once
             the echo's end was heard (not when its last bytes were written)
  interrupt  an InterruptionFrame in the middle of an echo silences the loudspeaker within 100 ms,
             answers `cleared` with audio flushed, and stops the bot speaking
  close      after EndFrame the runner returns; the server counts no capture client and no stream of
             the pipeline's, and no asyncio task of the pipeline is left
  reply      a scripted LLM's three-sentence reply through a stub TTS (a tone per sentence), with RTVI
             on: the worker's capabilities show audio in and out; on an InterruptionFrame half-way
             through the second sentence the loudspeaker is silent within 100 ms, the first sentence
             was heard whole and the third never, the assistant context holds the first sentence
             alone, RTVI `bot-output` completed it and never showed the third
  restart    a second server restarted under a running bot: on_client_disconnected, then
             on_client_connected within 5 s of the server being back, and the echo plays again
  vad        speech played into the room gives VADUserStartedSpeakingFrame with the server's onset as
             start_secs, dated (timestamp - start_secs) within 100 ms of where the monitor heard the
             speech begin; a second server stopped mid-speech ends the user's turn
             (VADUserStoppedSpeakingFrame) and calls on_client_disconnected
  example    examples/pipecat_echo.py says back speech played into the room (espeak-ng) and ends on
             Ctrl-C; so does clients/python/examples/pipecat_assistant.py (STT -> LLM -> TTS, stubbed
             STT and LLM) with its spoken reply
A check that fails while the hypervisor was stealing CPU (/proc/stat) runs once more.
Environment: AUDIOGATE_BINARY (default .build/debug/audiogate), AUDIOGATE_TEST_DEVICE (pulse).
Needs pipecat-ai and the audiogate client (scripts/requirements-pipecat.txt), pulseaudio-utils (paplay),
espeak-ng.
"""
import argparse
import asyncio
import collections
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

import e2e
from e2e import SpeakerMonitor, check, check_voice_example, dominant, longest_gap_ms, runs, wait_until

sys.path.insert(0, str(e2e.ROOT / "clients/python/src"))
os.environ.setdefault("LOGURU_LEVEL", "WARNING")  # Pipecat logs a banner and every step at import and run

import audiogate  # noqa: E402
from audiogate.pipecat import AudiogateParams, AudiogateTransport  # noqa: E402
from pipecat.frames.frames import (  # noqa: E402
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    EndFrame,
    InputAudioRawFrame,
    InterruptionFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    OutputAudioRawFrame,
    OutputTransportMessageUrgentFrame,
    TTSAudioRawFrame,
    TTSStoppedFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver  # noqa: E402
from pipecat.pipeline.pipeline import Pipeline  # noqa: E402
from pipecat.pipeline.worker import PipelineParams, PipelineWorker  # noqa: E402
from pipecat.processors.aggregators.llm_context import LLMContext  # noqa: E402
from pipecat.processors.aggregators.llm_response_universal import LLMAssistantAggregator  # noqa: E402
from pipecat.processors.frame_processor import FrameProcessor  # noqa: E402
from pipecat.services.settings import TTSSettings  # noqa: E402
from pipecat.services.tts_service import TTSService  # noqa: E402
from pipecat.workers.runner import WorkerRunner  # noqa: E402

RATE = 16000          # the monitor's and the pipeline input's rate
OUT_RATE = 24000      # the pipeline's output rate (the stream takes the echo's 16 kHz as it comes)
DELAY_S = 1.8         # the echo's delay, longer than the room's tone so the two are apart
CUSHION_S = 0.12      # the echo starts this much ahead, so capture jitter never starves the stream
STREAM = "pipecat-check"
ROOM_DB = -13.5       # RMS of the room's tone (a sine at amplitude 0.3)


# ---- the monitor: what the loudspeaker plays, with the time of each sample

def tone_windows(x, frequency, window_ms=10):
    """Level (dBFS, peak amplitude) of `frequency` in each window of the monitor's audio."""
    return e2e.tone_track(x, frequency, RATE, window_ms)


# ---- the pipeline's pieces

class DelayEcho(FrameProcessor):
    """Replays the sound (not the silence) the microphone heard while armed, DELAY_S later, as the
    bot's audio (TTS frames, then TTSStoppedFrame): the echo ends with the tone, so when the bot
    stops speaking can be checked."""

    def __init__(self):
        super().__init__()
        self.armed_until = 0.0
        self.held = collections.deque()
        self.flowing = False

    def arm(self, seconds):
        """Echoes what is heard from now on for `seconds` (and nothing held from before)."""
        self.held.clear()
        self.flowing = False
        self.armed_until = time.monotonic() + seconds

    async def process_frame(self, frame, direction):
        await super().process_frame(frame, direction)
        if isinstance(frame, InputAudioRawFrame):
            now = time.monotonic()
            if now < self.armed_until and e2e.dbfs(np.frombuffer(frame.audio, dtype="<i2") / 32768) > -50:
                self.held.append((now, frame))
            # The first frames go out CUSHION_S early together, the rest one per frame heard.
            due = now - (DELAY_S - CUSHION_S if self.flowing else DELAY_S)
            while self.held and self.held[0][0] <= due:
                _, heard = self.held.popleft()
                self.flowing = True
                await self.push_frame(TTSAudioRawFrame(heard.audio, heard.sample_rate, heard.num_channels))
            if not self.held and self.flowing:
                # The echo is over: the output says the bot stopped once its last audio was heard.
                self.flowing = False
                await self.push_frame(TTSStoppedFrame())
            return
        if isinstance(frame, InterruptionFrame):
            self.held.clear()
            self.flowing = False
            self.armed_until = 0.0
        await self.push_frame(frame, direction)


class Tap(FrameProcessor):
    """Notes when the bot-speaking frames leave the output, and when audio did (once written)."""

    def __init__(self):
        super().__init__()
        self.events = []
        self.last_written = 0.0

    async def process_frame(self, frame, direction):
        await super().process_frame(frame, direction)
        if isinstance(frame, (BotStartedSpeakingFrame, BotStoppedSpeakingFrame)):
            self.events.append((time.monotonic(), type(frame).__name__))
        elif isinstance(frame, OutputAudioRawFrame):
            self.last_written = time.monotonic()
        await self.push_frame(frame, direction)

    def after(self, start, name):
        return next((t for t, n in self.events if t >= start and n == name), None)


SENTENCES = [  # the scripted reply: (text, the pitch the stub TTS speaks it at)
    ("The first sentence is heard in full.", 500),
    ("The second one is cut half-way through.", 700),
    ("The third is never heard.", 900),
]
SENTENCE_S = 1.0


class ScriptedLLM(FrameProcessor):
    """Stands in for an LLM service: answers any context with the three sentences, streamed as tokens."""

    async def process_frame(self, frame, direction):
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            await self.push_frame(LLMFullResponseStartFrame())
            for text, _ in SENTENCES:
                for word in text.split(" "):
                    await self.push_frame(LLMTextFrame(word + " "))
            await self.push_frame(LLMFullResponseEndFrame())
            return
        await self.push_frame(frame, direction)


class ToneTTS(TTSService):
    """Stands in for a TTS service (a real one needs a voice model): each sentence is SENTENCE_S of a
    tone of its own pitch, so the monitor tells which sentences were heard. Text frames are the
    base class's: a TTSTextFrame per sentence, queued behind its audio."""

    def __init__(self):
        super().__init__(push_start_frame=True, push_stop_frames=True, sample_rate=OUT_RATE,
                         settings=TTSSettings(model=None, voice=None, language=None))

    async def run_tts(self, text, context_id):
        pitch = next(p for sentence, p in SENTENCES if sentence.split()[1] in text)
        audio = e2e.tone(pitch, SENTENCE_S, self.sample_rate).tobytes()
        step = self.sample_rate // 10 * 2  # 100 ms pieces, as a streaming TTS sends them
        for offset in range(0, len(audio), step):
            yield TTSAudioRawFrame(audio[offset:offset + step], self.sample_rate, 1, context_id=context_id)


class BotOutput(BaseObserver):
    """The RTVI `bot-output` messages the pipeline sends: (when, text, spoken_status)."""

    def __init__(self):
        super().__init__()
        self.messages = []
        self.seen = set()

    async def on_push_frame(self, data):
        frame = data.frame
        if isinstance(frame, OutputTransportMessageUrgentFrame) and frame.id not in self.seen:
            self.seen.add(frame.id)
            if isinstance(frame.message, dict) and frame.message.get("type") == "bot-output":
                data = frame.message.get("data", {})
                self.messages.append((time.monotonic(), data.get("text", ""), data.get("spoken_status")))


# ---- the checks

def room_tone(folder, frequency, seconds):
    path = pathlib.Path(folder) / f"room-{frequency}.wav"
    e2e.write_wav(path, e2e.tone(frequency, seconds, RATE), RATE)
    return path


async def play_room(path):
    player = e2e.room(path)
    await asyncio.get_running_loop().run_in_executor(None, player.wait)


async def check_echo(server, monitor, echo, tap, folder):
    status = server.get("/v1/status")["playback"]
    start = time.monotonic()
    echo.arm(1.3)
    await play_room(room_tone(folder, 440, 1.0))
    stopped = await wait_until(lambda: tap.after(start, "BotStoppedSpeakingFrame"), 6)
    await asyncio.sleep(0.3)
    began, x = monitor.since(start)
    spans = runs(tone_windows(x, 440) > -30)
    ok = check(len(spans) == 2,
               f"echo: the room's tone and its echo are heard apart ({', '.join(f'{a:.2f}-{b:.2f} s' for a, b in spans)})")
    if not ok:
        return
    echo_a, echo_b = spans[-1]
    echo_x = x[int((echo_a + 0.02) * RATE):int((echo_b - 0.02) * RATE)]
    pitch = dominant(echo_x)
    check(abs(pitch - 440) <= 3, f"echo: comes out at the tone's pitch ({pitch:.1f} Hz, 440 Hz played)")
    check(abs((echo_b - echo_a) - 1.0) <= 0.04,
          f"echo: as long as the tone ({echo_b - echo_a:.2f} s heard, 1 s played into the room)")
    gap = longest_gap_ms(echo_x)
    level = e2e.dbfs(echo_x) - ROOM_DB
    after = server.get("/v1/status")["playback"]
    check(gap < 3 and abs(level) <= 3 and after["underruns"] == status["underruns"],
          f"echo: without a gap (longest {gap:.1f} ms near zero, level {level:+.1f} dB against the room's tone, "
          f"{after['underruns'] - status['underruns']} stream underruns)")
    started = tap.after(start, "BotStartedSpeakingFrame")
    heard_end = began + echo_b
    check(started is not None and stopped is not None and started < stopped,
          "echo: BotStartedSpeakingFrame, then BotStoppedSpeakingFrame")
    if stopped is not None:
        # The last bytes were written about CUSHION_S plus the card's buffer before they were heard.
        check(-0.02 <= stopped - heard_end <= 0.15 and stopped - tap.last_written >= 0.1,
              f"echo: the bot stopped speaking when the echo's end was heard ({1000 * (stopped - heard_end):+.0f} ms), "
              f"not when it was written ({1000 * (stopped - tap.last_written):+.0f} ms)")


async def check_interrupt(server, monitor, echo, tap, output, worker, folder):
    start = time.monotonic()
    echo.arm(1.5)
    await play_room(room_tone(folder, 660, 1.2))
    started = await wait_until(lambda: tap.after(start, "BotStartedSpeakingFrame"), 5)
    if not check(started is not None, "interrupt: the echo began"):
        return
    await asyncio.sleep(max(0.0, started + 0.4 - time.monotonic()))
    interrupted = time.monotonic()
    await worker.queue_frame(InterruptionFrame())
    stopped = await wait_until(lambda: tap.after(interrupted, "BotStoppedSpeakingFrame"), 2)
    await asyncio.sleep(1.0)
    began, x = monitor.since(start)
    levels = tone_windows(x, 660)
    spans = runs(levels > -30)
    echo_span = next(((began + a, began + b) for a, b in spans[1:] if began + a < interrupted < began + b + 0.2), None)
    ok = check(len(spans) == 2 and echo_span is not None,
               f"interrupt: the echo was playing when the InterruptionFrame came (tone heard "
               f"{', '.join(f'{began + a - interrupted:+.2f} to {began + b - interrupted:+.2f} s' for a, b in spans)} of it)")
    if ok:
        loud = np.nonzero(levels > -40)[0]
        last_heard = began + (loud[-1] + 1) * 0.01
        check(last_heard - interrupted <= 0.1,
              f"interrupt: the loudspeaker is silent {1000 * (last_heard - interrupted):.0f} ms after the InterruptionFrame")
    cleared = output.last_cleared
    check(cleared is not None and cleared.flushed_ms > 0 and cleared.played_ms > 0,
          f"interrupt: the stream was cleared ({cleared})")
    check(stopped is not None and stopped - interrupted < 0.1,
          f"interrupt: the bot stopped speaking ({'never' if stopped is None else f'{1000 * (stopped - interrupted):.0f} ms'} after it)")


async def run(server, folder, binary):
    client = audiogate.Client(server.base)
    monitor = SpeakerMonitor(client)
    await monitor.start()
    existing = asyncio.all_tasks()
    before = server.get("/v1/status")
    transport = AudiogateTransport(
        server.base, params=AudiogateParams(audio_in_sample_rate=RATE, audio_out_sample_rate=OUT_RATE, stream=STREAM)
    )
    echo, tap, worker, running = await start_echo_bot(transport)
    try:
        connected = await wait_until(
            lambda: server.get("/v1/status")["capture"]["subscribers"] == before["capture"]["subscribers"] + 1, 10
        )
        check(connected, "the transport's input opened a capture")
        check(await wait_until(monitor.live, 5), "the monitor hears the loudspeaker live")
        await retried(server, lambda: check_echo(server, monitor, echo, tap, folder))
        await retried(server, lambda: check_interrupt(server, monitor, echo, tap, transport.output(), worker, folder))
        await worker.queue_frame(EndFrame())
        check(await finished(running, 10), "close: the runner returns after EndFrame")
    finally:
        await stop_worker(worker, running)
    after = await wait_until(lambda: _counts(server, before), 3)
    status = server.get("/v1/status")
    check(after, f"close: no capture client or stream left ({status['capture']['subscribers']} capture clients, "
                 f"{status['playback']['streams']} streams; {before['capture']['subscribers']} and "
                 f"{before['playback']['streams']} before)")
    def leftover():
        return [t for t in asyncio.all_tasks() - existing if t is not asyncio.current_task()]

    # A task may still be on its way out (a socket's closing handshake): give it a moment.
    await wait_until(lambda: not leftover(), 1)
    left = leftover()
    check(not left, f"close: no asyncio task left ({', '.join(f'{t.get_name()} {t.get_coro()}' for t in left) or 'none'})")
    await retried(server, lambda: check_restart(binary, monitor, folder))
    await retried(server, lambda: check_reply(server, monitor))
    await retried(server, lambda: check_vad(binary, monitor, folder))
    await retried(server, lambda: check_voice_example(server, monitor, folder, e2e.ROOT / "examples/pipecat_echo.py"))
    await retried(server, lambda: check_voice_example(server, monitor, folder, e2e.ROOT / "clients/python/examples/pipecat_assistant.py"))
    await monitor.stop()


async def check_reply(server, monitor):
    """A scripted three-sentence reply through a stub TTS, interrupted half-way through the second
    sentence: the context holds what was heard, RTVI reported it, the worker sees the transport."""
    transport = AudiogateTransport(
        server.base, params=AudiogateParams(audio_in_sample_rate=RATE, audio_out_sample_rate=OUT_RATE, stream=STREAM)
    )
    context = LLMContext([{"role": "user", "content": "Tell me three things."}])
    tap, observer = Tap(), BotOutput()
    worker = PipelineWorker(
        Pipeline([transport.input(), ScriptedLLM(), ToneTTS(), transport.output(), LLMAssistantAggregator(context), tap]),
        params=PipelineParams(audio_in_sample_rate=RATE, audio_out_sample_rate=OUT_RATE),
        idle_timeout_secs=None,
        enable_rtvi=True,
        observers=[observer],
    )
    capabilities = worker.capabilities
    check(capabilities.audio_out is True and capabilities.audio_in is True,
          f"reply: the worker's capabilities show the transport (audio_in {capabilities.audio_in}, "
          f"audio_out {capabilities.audio_out})")
    connected = []

    @transport.event_handler("on_client_connected")
    async def on_connected(_transport, client):
        connected.append(client)

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    running = asyncio.ensure_future(runner.run())
    try:
        check(await wait_until(lambda: connected, 10), "reply: on_client_connected once capture and playback are open")
        underruns = server.get("/v1/status")["playback"]["underruns"]
        start = time.monotonic()
        await worker.queue_frame(LLMContextFrame(context))
        started = await wait_until(lambda: tap.after(start, "BotStartedSpeakingFrame"), 5)
        if not check(started is not None, "reply: the bot began the reply"):
            return
        # The first sentence is heard about the card's delay after the bot started.
        await asyncio.sleep(max(0.0, started + 1.5 * SENTENCE_S - time.monotonic()))
        underruns = server.get("/v1/status")["playback"]["underruns"] - underruns
        interrupted = time.monotonic()
        await worker.queue_frame(InterruptionFrame())
        await asyncio.sleep(1.5)
        began, x = monitor.since(start)
        heard = {pitch: runs(e2e.tone_track(x, pitch, RATE, 10) > -30) for _, pitch in SENTENCES}
        first, second, third = (heard[pitch] for _, pitch in SENTENCES)
        describe = "; ".join(f"{p} Hz " + (", ".join(f"{began + a - interrupted:+.2f} to {began + b - interrupted:+.2f} s"
                                                    for a, b in spans) or "never") for p, spans in heard.items())
        ok = check(len(first) == 1 and abs(first[0][1] - first[0][0] - SENTENCE_S) <= 0.05 and len(second) == 1
                   and 0.2 <= second[0][1] - second[0][0] <= SENTENCE_S - 0.2 and not third,
                   f"reply: the first sentence was heard, the second cut, the third never ({describe}, "
                   f"against the InterruptionFrame)")
        if ok:
            silence = began + second[0][1] - interrupted
            check(silence <= 0.1, f"reply: silent {1000 * silence:.0f} ms after the InterruptionFrame")
            gap = longest_gap_ms(x[int((first[0][0] + 0.02) * RATE):int((second[0][1] - 0.02) * RATE)])
            check(gap < 3 and underruns == 0,
                  f"reply: paced {1000 * AudiogateParams().audio_out_lead_secs:.0f} ms ahead of what was heard "
                  f"without a gap (longest {gap:.1f} ms near zero, {underruns} stream underruns)")
        messages = [m for m in context.get_messages() if m.get("role") == "assistant"]
        said = " ".join(str(m.get("content")) for m in messages)
        check(said.strip() == SENTENCES[0][0],
              f"reply: the assistant context holds only the sentence heard ({said!r})")
        # A sentence is announced ("new") as its audio starts and "completed" once it all went out.
        sent = [(status, text) for _, text, status in observer.messages]
        completed = [(at, text) for at, text, status in observer.messages if status == "completed"]
        if ok and completed:
            print(f"     the first sentence's bot-output (completed) went out {1000 * (began + first[0][1] - completed[0][0]):.0f} "
                  f"ms before its end was heard", flush=True)
        check([text for _, text in completed] == [SENTENCES[0][0]]
              and not any(SENTENCES[2][0] in text for _, text in sent),
              f"reply: RTVI bot-output completed the sentence heard and never showed the unheard one ({sent})")
        await worker.queue_frame(EndFrame())
        check(await finished(running, 10), "reply: the runner returns after EndFrame")
    finally:
        await stop_worker(worker, running)


class VadTap(FrameProcessor):
    """The VAD frames the input pushes, with the wall-clock time each arrived."""

    def __init__(self):
        super().__init__()
        self.frames = []

    async def process_frame(self, frame, direction):
        await super().process_frame(frame, direction)
        if isinstance(frame, (VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame)):
            self.frames.append((time.time(), frame))
        await self.push_frame(frame, direction)


async def check_vad(binary, monitor, folder):
    """VAD frames carry the server's onset and hangover and are dated by the capture time; a
    capture that ends mid-speech (the server going away) ends the user's turn."""
    speech = pathlib.Path(folder) / "vad-speech.wav"
    subprocess.run(["espeak-ng", "-w", str(speech), "one two three four five six seven eight nine ten "
                    "eleven twelve thirteen fourteen fifteen"], check=True)
    server = e2e.Server(binary, "pulse")
    if not check(server.start(capture=True), "vad: a second server comes up"):
        return
    transport = AudiogateTransport(server.base, params=AudiogateParams(audio_in_sample_rate=RATE, audio_out_enabled=False))
    events = []

    @transport.event_handler("on_client_disconnected")
    async def on_disconnected(_transport, _client):
        events.append(time.time())

    tap = VadTap()
    worker = PipelineWorker(Pipeline([transport.input(), tap]), params=PipelineParams(audio_in_sample_rate=RATE),
                            idle_timeout_secs=None, enable_rtvi=False)
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    running = asyncio.ensure_future(runner.run())
    player = None
    try:
        await asyncio.sleep(1.0)
        played = time.monotonic()
        player = e2e.room(speech)
        started = await wait_until(lambda: tap.frames, 5)
        if not check(started, "vad: the speech played into the room starts the user speaking"):
            return
        arrived, frame = tap.frames[0]
        # The monitor dates its samples on the monotonic clock: where the speech became loud.
        await asyncio.sleep(0.5)
        began, x = monitor.since(played)
        n = RATE // 100
        loud = next((i for i in range(0, len(x) - n, n) if e2e.dbfs(x[i:i + n]) > -40), None)
        onset = None if loud is None else time.time() - (time.monotonic() - (began + loud / RATE))
        said = frame.timestamp - frame.start_secs
        check(isinstance(frame, VADUserStartedSpeakingFrame) and frame.start_secs == 0.05 and onset is not None
              and abs(said - onset) <= 0.1 and frame.timestamp <= arrived + 0.005,
              f"vad: VADUserStartedSpeakingFrame carries start_secs {frame.start_secs} and dates the speech "
              f"{'?' if onset is None else f'{1000 * (said - onset):+.0f}'} ms from where the room heard it "
              f"(arrived {1000 * (arrived - frame.timestamp):.0f} ms after its timestamp)")
        await asyncio.sleep(1.0)
        stopping = time.time()
        server.stop()  # mid-speech: the capture ends with the server
        ended = await wait_until(lambda: [f for t, f in tap.frames if isinstance(f, VADUserStoppedSpeakingFrame)], 5)
        check(ended and ended[0].stop_secs == 0.0 and ended[0].timestamp <= stopping + 0.1,
              f"vad: the capture ending mid-speech ends the user's turn "
              f"({'no VADUserStoppedSpeakingFrame' if not ended else f'stop_secs {ended[0].stop_secs}'})")
        check(await wait_until(lambda: events, 3), "vad: on_client_disconnected when the server went away")
    finally:
        if player is not None:
            e2e.stop_room(player)
        server.stop()
        await stop_worker(worker, running)


async def check_restart(binary, monitor, folder):
    """A server restarted under a running bot (input, echo, output) on a second server: both sides
    come back by themselves within 5 s of it (on_client_disconnected, then on_client_connected
    again) and the bot's echo plays again, with no code of the test's to reconnect."""
    server = e2e.Server(binary, "pulse")
    if not check(server.start(capture=True), "restart: a second server comes up"):
        return
    transport = AudiogateTransport(
        server.base,
        params=AudiogateParams(audio_in_sample_rate=RATE, audio_out_sample_rate=OUT_RATE, stream="pipecat-restart"),
    )
    events = []

    @transport.event_handler("on_client_connected")
    async def on_connected(_transport, _client):
        events.append((time.monotonic(), "connected"))

    @transport.event_handler("on_client_disconnected")
    async def on_disconnected(_transport, _client):
        events.append((time.monotonic(), "disconnected"))

    echo, tap, worker, running = await start_echo_bot(transport)
    restarted = None

    def seen(name, since):
        return next((t for t, n in events if n == name and t >= since), None)

    try:
        if not check(await wait_until(lambda: seen("connected", 0), 10), "restart: the bot connects to the second server"):
            return
        stopped = time.monotonic()
        await asyncio.to_thread(server.stop)
        check(await wait_until(lambda: seen("disconnected", stopped), 3),
              "restart: on_client_disconnected when the server went away")
        await asyncio.sleep(1.0)
        restarted = e2e.Server(binary, "pulse", port=server.port)
        if not check(await asyncio.to_thread(restarted.start, True), "restart: the server starts again on its port"):
            return
        ready = time.monotonic()
        back = await wait_until(lambda: seen("connected", stopped), 6)
        check(back is not None and back - ready <= 5.0,
              f"restart: on_client_connected again {'never' if back is None else f'{back - ready:.2f} s'} after the "
              f"server was back (down {ready - stopped:.2f} s)")
        if back is None:
            return
        start = time.monotonic()
        echo.arm(1.3)
        await play_room(room_tone(folder, 440, 1.0))
        await wait_until(lambda: tap.after(start, "BotStoppedSpeakingFrame"), 6)
        await asyncio.sleep(0.3)
        _, x = monitor.since(start)
        spans = runs(tone_windows(x, 440) > -30)
        pitch = dominant(x[int((spans[-1][0] + 0.02) * RATE):int((spans[-1][1] - 0.02) * RATE)]) if spans else 0.0
        check(len(spans) == 2 and abs(spans[-1][1] - spans[-1][0] - 1.0) <= 0.04 and abs(pitch - 440) <= 3,
              f"restart: the bot's echo plays again on the restarted server "
              f"({', '.join(f'{a:.2f}-{b:.2f} s' for a, b in spans) or 'nothing heard'}, {pitch:.0f} Hz)")
    finally:
        await stop_worker(worker, running)
        server.stop()
        if restarted is not None:
            restarted.stop()


def _counts(server, before):
    status = server.get("/v1/status")
    return (status["capture"]["subscribers"] == before["capture"]["subscribers"]
            and status["playback"]["streams"] == before["playback"]["streams"])


async def start_echo_bot(transport):
    """Runs transport.input() -> DelayEcho -> transport.output() -> Tap; returns the echo, the tap,
    the worker and the runner's task."""
    echo, tap = DelayEcho(), Tap()
    worker = PipelineWorker(
        Pipeline([transport.input(), echo, transport.output(), tap]),
        params=PipelineParams(audio_in_sample_rate=RATE, audio_out_sample_rate=OUT_RATE),
        idle_timeout_secs=None,
        enable_rtvi=False,
    )
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    return echo, tap, worker, asyncio.ensure_future(runner.run())


async def finished(task, seconds):
    """Whether `task` ends within `seconds`."""
    done, _ = await asyncio.wait([task], timeout=seconds)
    return task in done


async def stop_worker(worker, running):
    """Cancels the worker unless its runner already returned, and waits for the runner."""
    if not running.done():
        await worker.cancel()
    await asyncio.gather(running, return_exceptions=True)


async def retried(server, run_check):
    """Runs the check `run_check()` makes once the server is quiet; once more if it failed while the
    hypervisor was stealing CPU (/proc/stat)."""
    for attempt in e2e.attempts():
        point = e2e.mark()
        await server_quiet(server)
        await run_check()
        if not e2e.failures_since(point) or not attempt.retry():
            return
        print(f"     (again: the hypervisor took {attempt.steal:.0f} % of the CPU)", flush=True)
        e2e.rewind(point)


async def server_quiet(server):
    await asyncio.get_running_loop().run_in_executor(None, server.quiet, 5)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    e2e.add_binary_argument(parser)
    parser.add_argument("--device", default=os.environ.get("AUDIOGATE_TEST_DEVICE", "pulse"))
    args = parser.parse_args()
    started = time.monotonic()
    server = e2e.Server(args.binary, args.device)
    if not check(server.start(capture=True), f"server starts on {args.device}"):
        e2e.finish()
    try:
        with tempfile.TemporaryDirectory(prefix="audiogate-pipecat-") as folder:
            asyncio.run(run(server, folder, args.binary))
    finally:
        server.stop()
    print(f"     ({time.monotonic() - started:.1f} s)", flush=True)
    e2e.finish()


if __name__ == "__main__":
    main()
