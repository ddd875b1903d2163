"""LiveKit Agents audio I/O on audiogate: `AudioInput` and `AudioOutput` for an `AgentSession`.

    from audiogate.livekit import AudioInput, AudioOutput

    session = AgentSession(stt=..., llm=..., tts=..., vad=...)
    session.input.audio = AudioInput("http://127.0.0.1:8750")
    session.output.audio = AudioOutput("http://127.0.0.1:8750")
    await session.start(MyAgent())

AudioInput yields `rtc.AudioFrame`s from `WS /v1/capture` (echo cancellation on by default).
AudioOutput writes the agent's speech to `WS /v1/playback`: `flush()` ends a segment with a mark and
`playback_finished` comes when it was heard; `clear_buffer()` sends `clear` and reports how far the
segment really played (the server's `cleared.played_ms`).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable

from livekit import rtc
from livekit.agents.voice import io

from .capture import AudioChunk, Capture, VadEvent
from .client import Client
from .errors import AudiogateError
from .playback import Cleared, Mark, Playback, PlaybackError, PlaybackEvent

logger = logging.getLogger("audiogate.livekit")

__all__ = ["AudioInput", "AudioOutput"]


def _client(client: Client | str, token: str | None) -> Client:
    return Client(client, token) if isinstance(client, str) else client


class AudioInput(io.AudioInput):
    """Live microphone audio from audiogate as `rtc.AudioFrame`s (`session.input.audio`).

    The capture opens on the first frame asked for and closes with `aclose()`. Echo
    cancellation, noise suppression and VAD run on mono 8, 16, 32 or 48 kHz (16 kHz by default:
    what speech-to-text wants). With `vad=True` the server's voice activity events go to `on_vad`
    and `speaking` follows them.
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
        self.speaking = False
        """Whether the server's voice activity detection hears speech (with `vad=True`)."""

    async def __anext__(self) -> rtc.AudioFrame:
        capture = await self._open()
        while True:
            try:
                item = await capture.__anext__()
            except StopAsyncIteration:
                await self.aclose()
                raise
            if isinstance(item, AudioChunk):
                return rtc.AudioFrame(item.data, item.rate, item.channels, item.frames)
            if isinstance(item, VadEvent):
                self.speaking = item.state == "speech"
                if self._on_vad is not None:
                    self._on_vad(item)

    async def _open(self) -> Capture:
        async with self._lock:
            if self._closed:
                raise StopAsyncIteration
            if self._capture is None:
                capture = self._client.capture(**self._params)
                await capture.open()
                self._capture = capture
            return self._capture

    async def aclose(self) -> None:
        """Closes the capture; iterating ends."""
        self._closed = True
        if self._capture is not None:
            capture, self._capture = self._capture, None
            await capture.close()


class AudioOutput(io.AudioOutput):
    """The agent's speech played by audiogate (`session.output.audio`), finished when heard.

    Each segment (frames up to `flush()`) ends with a mark; `playback_finished` reports it once the
    mark was heard. `clear_buffer()` flushes the stream at once and reports the segment's real
    playback position from the server's `cleared.played_ms`. The stream opens on the first frame
    and closes with `aclose()`.
    """

    def __init__(
        self,
        client: Client | str = "http://127.0.0.1:8750",
        token: str | None = None,
        *,
        sample_rate: int = 24000,
        num_channels: int = 1,
        stream: str = "livekit",
        label: str = "audiogate",
    ) -> None:
        super().__init__(
            label=label,
            capabilities=io.AudioOutputCapabilities(pause=False),
            next_in_chain=None,
            sample_rate=sample_rate,
        )
        self._client = _client(client, token)
        self._params: dict[str, Any] = dict(rate=sample_rate, channels=num_channels, stream=stream)
        self._playback: Playback | None = None
        self._lock = asyncio.Lock()
        # The open segment: where it starts in the stream (ms written since the last clear), and
        # the clear that cut it before it was flushed.
        self._start_ms: float | None = None
        self._cut: asyncio.Future[Cleared] | None = None
        self._finishing: asyncio.Task[None] | None = None
        self.last_cleared: Cleared | None = None
        """The stream's last `cleared` (from this output, another client or DELETE /v1/playback)."""

    def _event(self, event: PlaybackEvent) -> None:
        # Called before the waiters of a cleared mark resume, so they find the clear that dropped it.
        if isinstance(event, Cleared):
            self.last_cleared = event
        elif isinstance(event, PlaybackError):
            logger.warning("audiogate playback error %s: %s", event.code, event.message)

    async def _open(self) -> Playback:
        async with self._lock:
            if self._playback is None:
                playback = self._client.playback(**self._params, on_event=self._event)
                await playback.open()
                self._playback = playback
            return self._playback

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        """Queues a frame for playback; frames may come faster than real time."""
        await super().capture_frame(frame)
        if self._finishing is not None and not self._finishing.done():
            await asyncio.shield(self._finishing)
        playback = await self._open()
        if self._cut is not None:
            return  # cleared: the rest of this segment is not wanted
        if self._start_ms is None:
            self._start_ms = playback.written_ms or 0.0
            self.on_playback_started(created_at=time.time())
        await playback.write(bytes(frame.data))

    def flush(self) -> None:
        """Ends the segment: `playback_finished` follows once its last frame was heard."""
        super().flush()
        playback, start, cut = self._playback, self._start_ms, self._cut
        self._start_ms, self._cut = None, None
        if playback is None or start is None:
            return
        length = (playback.written_ms or 0.0) - start
        if cut is not None:
            self._finishing = asyncio.ensure_future(self._finish(None, cut, start, length))
            return
        try:
            mark: asyncio.Future[Mark] | None = playback.mark()
        except AudiogateError:
            mark = None
        self._finishing = asyncio.ensure_future(self._finish(mark, None, start, length))

    def clear_buffer(self) -> None:
        """Stops playback at once (the server flushes the stream)."""
        playback = self._playback
        if playback is None:
            return
        clear = asyncio.ensure_future(playback.clear())
        clear.add_done_callback(lambda f: f.cancelled() or f.exception())
        if self._start_ms is not None and self._cut is None:
            self._cut = clear

    async def _finish(
        self, mark: asyncio.Future[Mark] | None, cut: asyncio.Future[Cleared] | None, start: float, length: float
    ) -> None:
        position, interrupted = length, False
        try:
            cleared = None
            if cut is not None:
                cleared = await cut
            elif mark is not None and not (await mark).heard:
                cleared = self.last_cleared
            if cleared is not None:
                position, interrupted = min(max(cleared.played_ms - start, 0.0), length), True
        except AudiogateError:
            interrupted = True
        self.on_playback_finished(playback_position=position / 1000, interrupted=interrupted)

    async def aclose(self) -> None:
        """Closes the stream (audio already queued still plays)."""
        if self._finishing is not None and not self._finishing.done():
            self._finishing.cancel()
            await asyncio.gather(self._finishing, return_exceptions=True)
        if self._playback is not None:
            playback, self._playback = self._playback, None
            await playback.close()
