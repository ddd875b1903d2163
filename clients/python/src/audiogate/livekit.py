"""LiveKit Agents audio I/O on audiogate: `AudioInput` and `AudioOutput` for an `AgentSession`.

    from audiogate.livekit import AudioInput, AudioOutput

    session = AgentSession(stt=..., llm=..., tts=..., vad=...)
    session.input.audio = AudioInput("http://127.0.0.1:8750")
    session.output.audio = AudioOutput("http://127.0.0.1:8750")
    await session.start(MyAgent())

AudioInput yields `rtc.AudioFrame`s from `WS /v1/capture` (echo cancellation on by default); it
stops capturing while detached from the session. AudioOutput writes the agent's speech to
`WS /v1/playback`: a mark a little into each segment reports `playback_started` when it was
heard, `flush()` ends a segment with a mark and `playback_finished` comes when that was heard;
`clear_buffer()` sends `clear` and reports how far the segment really played (the server's
`cleared.played_ms`); `pause()`/`resume()` hold the stream on the server, so a false
interruption resumes where it stopped. Every segment counted finishes: one whose audio could not
be played (the server unreachable, restarted, or silent past a timeout) finishes interrupted.
Both reconnect by themselves after a server restart.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from livekit import rtc
from livekit.agents.voice import io

from .capture import AudioChunk, Capture, VadEvent
from .client import Client
from .connection import ConnectionLost, Reconnected
from .errors import AudiogateError, AudiogateTimeoutError, retryable
from .playback import Cleared, Mark, Playback, PlaybackError, PlaybackEvent

logger = logging.getLogger("audiogate.livekit")

__all__ = ["AudioInput", "AudioOutput"]

T = TypeVar("T")

# Beyond the audio a segment still has to play: how long its mark or clear may take to be answered.
_ANSWER_MARGIN_S = 2.0
# Where the mark that dates a segment's start goes: a mark starts a stream without its jitter
# buffer, so it waits until the segment has this much queued, well past the server's 40 ms.
_START_MARK_MS = 100.0


def _client(client: Client | str, token: str | None) -> Client:
    return Client(client, token) if isinstance(client, str) else client


class AudioInput(io.AudioInput):
    """Live microphone audio from audiogate as `rtc.AudioFrame`s (`session.input.audio`).

    The capture opens on the first frame asked for, closes while the input is detached from the
    session (`on_detached`), opens again once attached, and closes with `aclose()`. Echo
    cancellation, noise suppression and VAD run on mono 8, 16, 32 or 48 kHz (16 kHz by default:
    what speech-to-text wants). With `vad=True` the server's voice activity events go to `on_vad`
    and `speaking` follows them. A server restart is bridged: the capture reconnects and the gap
    is logged.
    """

    def __init__(
        self,
        client: Client | str = "http://127.0.0.1:8750",
        token: str | None = None,
        *,
        sample_rate: int = 16000,
        num_channels: int = 1,
        chunk_ms: int = 20,
        aec: bool = True,
        ns: bool | None = None,
        vad: bool = False,
        on_vad: Callable[[VadEvent], object] | None = None,
        label: str = "audiogate",
    ) -> None:
        super().__init__(label=label)
        self._client = _client(client, token)
        self._params: dict[str, Any] = dict(
            rate=sample_rate, channels=num_channels, chunk_ms=chunk_ms, aec=aec, ns=ns, vad=vad
        )
        self._on_vad = on_vad
        self._capture: Capture | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self._attached = asyncio.Event()
        self._attached.set()
        self._stopping: asyncio.Task[None] | None = None
        self.speaking = False
        """Whether the server's voice activity detection hears speech (with `vad=True`)."""

    async def __anext__(self) -> rtc.AudioFrame:
        delays = None
        while True:
            await self._attached.wait()
            try:
                capture = await self._open()
                item = await capture.__anext__()
            except StopAsyncIteration:
                if self._closed:
                    raise
                await self._forget(capture)  # the server ended it: a new one on the next frame
                continue
            except AudiogateError as error:
                # Unreachable at the first frame, or given up on: wait and try again, as the capture would.
                if self._closed or not retryable(error):
                    raise
                delays = delays or self._client.reconnect.delays()
                logger.warning("audiogate capture unavailable: %s; trying again", error)
                await self._forget(self._capture)
                await asyncio.sleep(next(delays, self._client.reconnect.max_delay))
                continue
            delays = None
            if isinstance(item, AudioChunk):
                return rtc.AudioFrame(item.data, item.rate, item.channels, item.frames)
            if isinstance(item, VadEvent):
                self._vad(item)
            elif isinstance(item, ConnectionLost):
                logger.warning("audiogate capture lost: %s; reconnecting", item.error)
                if self.speaking:
                    self._vad(VadEvent("silence", time.monotonic() * 1000))
            elif isinstance(item, Reconnected):
                lost = f"{item.lost_ms:.0f} ms of audio lost" if item.lost_ms is not None else "audio lost"
                logger.info("audiogate capture back after %.0f ms, %s", item.down_ms, lost)

    async def _forget(self, capture: Capture | None) -> None:
        if capture is not None and capture is self._capture:
            self._capture = None
            await capture.close()

    def _vad(self, event: VadEvent) -> None:
        self.speaking = event.state == "speech"
        if self._on_vad is not None:
            self._on_vad(event)

    async def _open(self) -> Capture:
        async with self._lock:
            if self._closed:
                raise StopAsyncIteration
            if self._stopping is not None:
                await asyncio.gather(self._stopping, return_exceptions=True)
                self._stopping = None
            if self._capture is None:
                capture = self._client.capture(**self._params)
                await capture.open()
                self._capture = capture
            return self._capture

    def on_attached(self) -> None:
        """The session reads this input again: capture resumes with the next frame asked for."""
        super().on_attached()
        self._attached.set()

    def on_detached(self) -> None:
        """The session stopped reading this input: the capture closes (the microphone is not held)."""
        super().on_detached()
        self._attached.clear()
        if self._capture is not None:
            capture, self._capture = self._capture, None
            self._stopping = asyncio.ensure_future(capture.close())

    async def aclose(self) -> None:
        """Closes the capture; iterating ends."""
        self._closed = True
        self._attached.set()
        if self._stopping is not None:
            await asyncio.gather(self._stopping, return_exceptions=True)
        if self._capture is not None:
            capture, self._capture = self._capture, None
            await capture.close()


@dataclass
class _Segment:
    """The frames between two flushes and what became of them."""

    #: stream position (ms written since the last clear) where the segment starts; None until written
    start_ms: float | None = None
    #: audio of the segment accepted (ms)
    length_ms: float = 0.0
    #: some of its audio could not be played (no server, or the connection dropped under it)
    failed: bool = False
    #: the clear that cut it before it was flushed
    cut: asyncio.Future[Cleared] | None = None
    #: audio of the segment written to the server (ms)
    written_ms: float = 0.0
    #: the mark that dates its start is placed
    start_watched: bool = False
    #: when its first frame was heard (time.monotonic)
    started_at: float | None = None


class AudioOutput(io.AudioOutput):
    """The agent's speech played by audiogate (`session.output.audio`), finished when heard.

    Each segment (frames up to `flush()`) ends with a mark; `playback_finished` reports it once the
    mark was heard, or interrupted when it was cleared, when the connection dropped, or when the
    mark did not come within the segment's audio plus two seconds. `clear_buffer()` flushes the
    stream at once and reports the segment's real playback position from the server's
    `cleared.played_ms`. `pause()` holds the stream on the server (its queue kept) and `resume()`
    plays on. Frames with another channel count than `num_channels` are mixed to it. The stream
    opens on the first frame and closes with `aclose()`.
    """

    def __init__(
        self,
        client: Client | str = "http://127.0.0.1:8750",
        token: str | None = None,
        *,
        sample_rate: int = 24000,
        num_channels: int = 1,
        stream: str = "livekit",
        clear_timeout: float = 1.0,
        label: str = "audiogate",
    ) -> None:
        super().__init__(
            label=label,
            capabilities=io.AudioOutputCapabilities(pause=True),
            next_in_chain=None,
            sample_rate=sample_rate,
        )
        self._client = _client(client, token)
        self._channels = num_channels
        self._params: dict[str, Any] = dict(rate=sample_rate, channels=num_channels, stream=stream)
        self._clear_timeout = clear_timeout
        self._playback: Playback | None = None
        self._lock = asyncio.Lock()
        self._segment: _Segment | None = None
        self._finishing: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._paused = False
        # Counts pauses, so a mark's timeout is not counted across one.
        self._pauses = 0
        self._lost_at: float | None = None
        self.last_cleared: Cleared | None = None
        """The stream's last `cleared` (from this output, another client or DELETE /v1/playback)."""

    @property
    def connected(self) -> bool:
        """Whether the playback stream is open and connected (False before the first frame and while reconnecting)."""
        return self._playback is not None and self._playback.connected

    def _event(self, event: PlaybackEvent) -> None:
        # Called before the waiters of a cleared mark resume, so they find the clear that dropped it.
        if isinstance(event, Cleared):
            self.last_cleared = event
        elif isinstance(event, PlaybackError):
            logger.warning("audiogate playback error %s: %s", event.code, event.message)
        elif isinstance(event, ConnectionLost):
            self._lost_at = time.monotonic()
            if self._segment is not None:
                self._segment.failed = True
            logger.warning("audiogate playback lost: %s%s", event.error, "" if event.final else "; reconnecting")
            if event.final:
                self._playback = None
        elif isinstance(event, Reconnected):
            logger.info("audiogate playback back after %.0f ms (%.0f ms of audio not heard)",
                        event.down_ms, event.lost_ms or 0.0)

    async def _open(self) -> Playback:
        async with self._lock:
            if self._playback is None:
                playback = self._client.playback(**self._params, on_event=self._event)
                await playback.open()
                self._playback = playback
                if self._paused:
                    playback.pause()
            return self._playback

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        """Queues a frame for playback; frames may come faster than real time. Never raises for the server's sake."""
        await super().capture_frame(frame)
        if self._segment is None:
            # Counted by the base class from here on: flush() finishes it whatever happens next.
            self._segment = _Segment()
        segment = self._segment
        segment.length_ms += 1000 * frame.samples_per_channel / frame.sample_rate
        if segment.cut is not None or segment.failed:
            return  # cleared, or already short of audio: the rest of it is not wanted
        try:
            playback = await self._open()
        except AudiogateError as error:
            logger.warning("audiogate playback unavailable: %s", error)
            segment.failed = True
            return
        if segment.start_ms is None:
            segment.start_ms = playback.written_ms or 0.0
        try:
            await playback.write(self._pcm(frame))
            if not playback.connected:
                segment.failed = True
                return
            segment.written_ms += 1000 * frame.samples_per_channel / frame.sample_rate
            if not segment.start_watched and segment.written_ms >= _START_MARK_MS:
                self._watch_start(playback.mark(), segment)
        except AudiogateError as error:
            logger.warning("audiogate playback failed: %s", error)
            segment.failed = True

    def _pcm(self, frame: rtc.AudioFrame) -> bytes:
        """The frame's samples with this output's channel count (mixed down, or copied up)."""
        data = bytes(frame.data)
        if frame.num_channels == self._channels:
            return data
        samples = np.frombuffer(data, dtype="<i2").reshape(-1, frame.num_channels)
        mono = samples.mean(axis=1).round().astype("<i2")
        return np.repeat(mono, self._channels).tobytes() if self._channels > 1 else mono.tobytes()

    def _watch_start(self, mark: asyncio.Future[Mark], segment: _Segment) -> None:
        """`playback_started` when the segment's first frame was heard: the time the mark placed
        after `segment.written_ms` of it was heard, less that much."""
        segment.start_watched = True
        into_s = segment.written_ms / 1000

        def heard(future: asyncio.Future[Mark]) -> None:
            if future.cancelled() or future.exception() is not None or not future.result().heard:
                return
            segment.started_at = time.monotonic() - into_s
            self.on_playback_started(created_at=time.time() - into_s)

        mark.add_done_callback(heard)

    def flush(self) -> None:
        """Ends the segment: `playback_finished` follows once its last frame was heard (or it was cut or lost)."""
        super().flush()
        segment, self._segment = self._segment, None
        if segment is None:
            return
        mark: asyncio.Future[Mark] | None = None
        playback = self._playback
        if segment.cut is None and not segment.failed and playback is not None and segment.start_ms is not None:
            try:
                mark = playback.mark()
                if not segment.start_watched:
                    # Shorter than the start mark's place: its end dates its start.
                    self._watch_start(mark, segment)
            except AudiogateError:
                segment.failed = True
        previous = self._finishing
        self._finishing = self._spawn(self._finish(segment, mark, previous))

    def clear_buffer(self) -> None:
        """Stops playback at once (the server flushes the stream; over HTTP if the socket is slow to take it)."""
        playback = self._playback
        if playback is None or not playback.connected:
            self._paused = False
            if self._segment is not None:
                self._segment.failed = True
            return
        clear = playback.clear_nowait(self._clear_timeout)
        if self._segment is not None and self._segment.cut is None:
            self._segment.cut = clear
        if self._paused:
            # A confirmed interruption: what comes next must play (the resume goes out after the clear).
            self._paused = False
            playback.resume()

    def pause(self) -> None:
        """Holds the stream where it is; its queued audio waits for `resume()` (false-interruption handling)."""
        super().pause()
        self._paused = True
        self._pauses += 1
        if self._playback is not None and self._playback.connected:
            self._playback.pause()

    def resume(self) -> None:
        """Plays on from where `pause()` held the stream."""
        super().resume()
        self._paused = False
        if self._playback is not None and self._playback.connected:
            self._playback.resume()

    def _spawn(self, coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return task

    async def _finish(
        self, segment: _Segment, mark: asyncio.Future[Mark] | None, previous: asyncio.Task[None] | None
    ) -> None:
        start, length = segment.start_ms or 0.0, segment.length_ms
        position, interrupted = length, False
        try:
            cleared: Cleared | None = None
            if segment.cut is not None:
                cleared = await asyncio.wait_for(asyncio.shield(segment.cut), 3 * self._clear_timeout)
            elif segment.failed or mark is None:
                raise AudiogateError("not_played", "the segment's audio could not all be played")
            elif not (await self._heard(mark, start + length)).heard:
                cleared = self.last_cleared
            if cleared is not None:
                position, interrupted = min(max(cleared.played_ms - start, 0.0), length), True
        except (AudiogateError, asyncio.TimeoutError):
            interrupted = True
            position = self._estimate(segment)
        if previous is not None:
            # Segments finish in the order they were counted.
            await asyncio.gather(asyncio.shield(previous), return_exceptions=True)
        self.on_playback_finished(playback_position=position / 1000, interrupted=interrupted)

    async def _heard(self, mark: asyncio.Future[Mark], end_ms: float) -> Mark:
        """The segment's mark, or AudiogateTimeoutError when it is not heard in time (pauses not counted)."""
        playback = self._playback
        ahead_ms = max(0.0, end_ms - (playback.heard_ms if playback is not None else 0.0))
        while True:
            pauses = self._pauses
            done, _ = await asyncio.wait([mark], timeout=ahead_ms / 1000 + _ANSWER_MARGIN_S)
            if done:
                return mark.result()
            if not self._paused and pauses == self._pauses:
                raise AudiogateTimeoutError("the segment's mark was not heard in time")

    def _estimate(self, segment: _Segment) -> float:
        """How much of a segment played before its audio was lost: the time since its start was heard."""
        if segment.started_at is None:
            return 0.0
        end = self._lost_at if self._lost_at is not None and self._lost_at > segment.started_at else time.monotonic()
        return min(max(1000 * (end - segment.started_at), 0.0), segment.length_ms)

    async def aclose(self) -> None:
        """Closes the stream (audio already queued still plays); segments still waiting finish interrupted."""
        if self._playback is not None:
            playback, self._playback = self._playback, None
            await playback.close()
        if self._tasks:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.gather(*self._tasks, return_exceptions=True), 5)
