"""Pipecat transport on audiogate: `AudiogateTransport(url).input()` and `.output()` in a Pipeline.

    from audiogate.pipecat import AudiogateParams, AudiogateTransport

    transport = AudiogateTransport("http://127.0.0.1:8750")
    pipeline = Pipeline([transport.input(), stt, user_aggregator, llm, tts, transport.output(), ...])

Input pushes `InputAudioRawFrame`s from `WS /v1/capture` (echo cancellation and voice activity
events on by default) and turns the server's `vad` events into `VADUserStartedSpeakingFrame`,
`VADUserStoppedSpeakingFrame` and `UserSpeakingFrame`. Output writes every `OutputAudioRawFrame` to
`WS /v1/playback` as fast as the server takes it (its queue paces the pipeline), sends `clear` on an
`InterruptionFrame`, and reports `BotStoppedSpeakingFrame` once the last audio was heard (a mark),
not when it was written.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np
from loguru import logger
from pipecat.audio.utils import create_stream_resampler
from pipecat.frames.frames import (
    BotSpeakingFrame,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    CancelFrame,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    OutputAudioRawFrame,
    OutputTransportReadyFrame,
    StartFrame,
    TTSStoppedFrame,
    UserSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_transport import BaseTransport, TransportParams

from .capture import AudioChunk, Capture, DeviceEvent, OverrunEvent, VadEvent
from .client import Client
from .errors import AudiogateError
from .playback import Cleared, Playback

__all__ = ["AudiogateParams", "AudiogateTransport", "AudiogateInputTransport", "AudiogateOutputTransport"]

# How often the "still speaking" frames go out, as Pipecat's own transports do.
_SPEAKING_PERIOD_S = 0.2


class AudiogateParams(TransportParams):
    """TransportParams with audio in and out on, and audiogate's capture processing and stream name."""

    audio_in_enabled: bool = True
    audio_out_enabled: bool = True
    #: cancel the echo of what audiogate plays, so the bot does not hear itself
    aec: bool = True
    #: server-side voice activity events become Pipecat's user-speaking frames
    vad: bool = True
    #: noise suppression (None: the server's default)
    ns: bool | None = None
    chunk_ms: int = 20
    #: the playback stream the bot speaks on (its own queue, marks and clear)
    stream: str = "pipecat"


class AudiogateInputTransport(BaseInputTransport):
    """Live microphone audio from audiogate as InputAudioRawFrames, with server VAD as user-speaking frames."""

    _params: AudiogateParams

    def __init__(self, client: Client, params: AudiogateParams, **kwargs: Any) -> None:
        super().__init__(params, **kwargs)
        self._client = client
        self._capture: Capture | None = None
        self._reader: asyncio.Task[None] | None = None
        self._speaking = False
        self._speaking_sent = 0.0

    async def start(self, frame: StartFrame) -> None:
        """Opens the capture at the pipeline's input rate and starts pushing audio."""
        await super().start(frame)
        if self._capture is not None or not self._params.audio_in_enabled:
            await self.set_transport_ready(frame)
            return
        capture = self._client.capture(
            rate=self.sample_rate,
            channels=self._params.audio_in_channels,
            chunk_ms=self._params.chunk_ms,
            aec=self._params.aec,
            vad=self._params.vad,
            ns=self._params.ns,
        )
        await capture.open()
        self._capture = capture
        await self.set_transport_ready(frame)
        self._reader = self.create_task(self._read(capture), f"{self}::capture")

    async def stop(self, frame: EndFrame) -> None:
        """Closes the capture after the pipeline's end."""
        await super().stop(frame)
        await self._close()

    async def cancel(self, frame: CancelFrame) -> None:
        """Closes the capture at once."""
        await super().cancel(frame)
        await self._close()

    async def cleanup(self) -> None:
        """Closes the capture if the pipeline ended without an EndFrame or CancelFrame."""
        await super().cleanup()
        await self._close()

    async def _close(self) -> None:
        if self._reader is not None:
            reader, self._reader = self._reader, None
            await self.cancel_task(reader)
        if self._capture is not None:
            capture, self._capture = self._capture, None
            await capture.close()

    async def _read(self, capture: Capture) -> None:
        try:
            async for item in capture:
                if isinstance(item, AudioChunk):
                    await self.push_audio_frame(
                        InputAudioRawFrame(audio=item.data, sample_rate=item.rate, num_channels=item.channels)
                    )
                    if self._speaking and time.monotonic() - self._speaking_sent >= _SPEAKING_PERIOD_S:
                        self._speaking_sent = time.monotonic()
                        await self.broadcast_frame(UserSpeakingFrame)
                elif isinstance(item, VadEvent):
                    await self._vad(item.state == "speech")
                elif isinstance(item, OverrunEvent):
                    logger.warning(f"{self}: fell behind live audio, {item.dropped_ms:.0f} ms dropped")
                elif isinstance(item, DeviceEvent):
                    logger.warning(f"{self}: capture device {item.state}")
        except AudiogateError as error:
            await self.push_error(f"{self}: capture failed: {error}", exception=error)
            return
        logger.info(f"{self}: the server ended the capture")

    async def _vad(self, speech: bool) -> None:
        if speech == self._speaking:
            return
        self._speaking = speech
        if speech:
            self._speaking_sent = time.monotonic()
            await self.broadcast_frame(VADUserStartedSpeakingFrame)
            await self.broadcast_frame(UserSpeakingFrame)
        else:
            await self.broadcast_frame(VADUserStoppedSpeakingFrame)


class AudiogateOutputTransport(FrameProcessor):
    """Plays OutputAudioRawFrames on an audiogate playback stream; bot speaking follows what was heard.

    The stream opens with the first audio, at that audio's rate (the server resamples for the
    card; later audio at another rate is resampled here). Writes go out as fast as the server
    takes them: when the stream's queue is full the write waits, which paces the pipeline. An
    InterruptionFrame clears the stream at once; BotStoppedSpeakingFrame comes when a mark placed
    after the last audio was heard. All audio counts as the bot's speech. `last_cleared` holds
    the server's answer to the last clear.
    """

    def __init__(self, client: Client, params: AudiogateParams, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._client = client
        self._params = params
        self._playback: Playback | None = None
        self._rate = 0
        self._resampler = create_stream_resampler()
        self._resampling = False
        self._written = asyncio.Event()
        self._watcher: asyncio.Task[None] | None = None
        self._speaking = False
        self.last_cleared: Cleared | None = None
        """What the server answered to the last clear (played_ms, flushed_ms)."""

    @property
    def sample_rate(self) -> int:
        """The playback stream's rate (0 until the first audio opened it)."""
        return self._rate

    async def cleanup(self) -> None:
        """Closes the playback stream (audio already queued still plays)."""
        await super().cleanup()
        await self._close()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        """Writes audio, clears on interruption, waits for the last audio to be heard at the end."""
        await super().process_frame(frame, direction)
        if isinstance(frame, StartFrame):
            await self.push_frame(frame, direction)
            await self.push_frame(OutputTransportReadyFrame(), FrameDirection.UPSTREAM)
        elif isinstance(frame, InterruptionFrame):
            # Pushed on first, so what is upstream of here stops producing while the clear travels.
            await self.push_frame(frame, direction)
            await self._interrupt()
        elif isinstance(frame, CancelFrame):
            await self._interrupt()
            await self._close()
            await self.push_frame(frame, direction)
        elif isinstance(frame, EndFrame):
            await self._flush_resampler()
            await self._drain()
            await self._close()
            await self.push_frame(frame, direction)
        elif isinstance(frame, OutputAudioRawFrame) and direction == FrameDirection.DOWNSTREAM:
            if await self._write(frame):
                await self.push_frame(frame, direction)
        elif isinstance(frame, TTSStoppedFrame):
            await self._flush_resampler()
            await self.push_frame(frame, direction)
        else:
            await self.push_frame(frame, direction)

    async def _open(self, rate: int) -> Playback | None:
        if self._playback is None and self._params.audio_out_enabled:
            playback = self._client.playback(
                rate=rate, channels=self._params.audio_out_channels, stream=self._params.stream
            )
            await playback.open()
            self._playback, self._rate = playback, rate
            self._watcher = self.create_task(self._watch(playback), f"{self}::heard")
        return self._playback

    async def _close(self) -> None:
        if self._watcher is not None:
            watcher, self._watcher = self._watcher, None
            await self.cancel_task(watcher)
        if self._playback is not None:
            playback, self._playback = self._playback, None
            await playback.close()
        if self._speaking:
            await self._stopped_speaking()

    async def _write(self, frame: OutputAudioRawFrame) -> bool:
        try:
            playback = await self._open(frame.sample_rate)
            if playback is None:
                return False
            audio = self._convert(frame.audio, frame.num_channels)
            if frame.sample_rate != self._rate:
                self._resampling = True
                audio = await self._resampler.resample(audio, frame.sample_rate, self._rate)
            if audio:
                await playback.write(audio)
        except AudiogateError as error:
            await self.push_error(f"{self}: playback failed: {error}", exception=error)
            return False
        if audio:
            if not self._speaking:
                self._speaking = True
                await self.broadcast_frame(BotStartedSpeakingFrame)
            self._written.set()
        return True

    async def _flush_resampler(self) -> None:
        """Writes the tail the resampler holds back, at the end of the bot's speech."""
        if not self._resampling or self._playback is None:
            return
        self._resampling = False
        tail = await self._resampler.flush()
        if tail:
            try:
                await self._playback.write(tail)
            except AudiogateError as error:
                logger.warning(f"{self}: playback failed: {error}")
                return
            self._written.set()

    def _convert(self, audio: bytes, channels: int) -> bytes:
        wanted = self._params.audio_out_channels
        if channels == wanted or not audio:
            return audio
        samples = np.frombuffer(audio, dtype="<i2").reshape(-1, channels)
        mono = samples.mean(axis=1).round().astype("<i2")
        return np.repeat(mono, wanted).tobytes() if wanted > 1 else mono.tobytes()

    async def _interrupt(self) -> None:
        self._written.clear()
        if self._resampling:
            self._resampling = False
            await self._resampler.reset()
        if self._playback is not None:
            try:
                self.last_cleared = await self._playback.clear()
            except AudiogateError as error:
                logger.warning(f"{self}: clear failed: {error}")
        if self._speaking:
            await self._stopped_speaking()

    async def _drain(self) -> None:
        """Returns once everything written was heard (the pipeline's end lets the bot finish)."""
        if self._playback is None or not self._speaking:
            return
        try:
            await self._playback.drained()
        except AudiogateError as error:
            logger.warning(f"{self}: the playback ended before the last audio was heard: {error}")

    async def _watch(self, playback: Playback) -> None:
        """One mark at a time after the audio written so far: heard with nothing written since, the bot is quiet."""
        while True:
            await self._written.wait()
            self._written.clear()
            try:
                mark = playback.mark()
            except AudiogateError:
                return
            while True:
                try:
                    heard = await asyncio.wait_for(asyncio.shield(mark), _SPEAKING_PERIOD_S)
                    break
                except asyncio.TimeoutError:
                    if self._speaking:
                        await self.broadcast_frame(BotSpeakingFrame)
                except AudiogateError:
                    return
            if heard.heard and not self._written.is_set() and self._speaking:
                await self._stopped_speaking()

    async def _stopped_speaking(self) -> None:
        self._speaking = False
        await self.broadcast_frame(BotStoppedSpeakingFrame)


class AudiogateTransport(BaseTransport):
    """A Pipecat transport on an audiogate server: microphone in, loudspeaker out."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8750",
        token: str | None = None,
        params: AudiogateParams | None = None,
        *,
        client: Client | None = None,
        name: str | None = None,
        input_name: str | None = None,
        output_name: str | None = None,
    ) -> None:
        super().__init__(name=name, input_name=input_name, output_name=output_name)
        self._client = client or Client(url, token)
        self._params = params or AudiogateParams()
        self._input: AudiogateInputTransport | None = None
        self._output: AudiogateOutputTransport | None = None

    @property
    def client(self) -> Client:
        """The audiogate client the transport uses."""
        return self._client

    def input(self) -> AudiogateInputTransport:
        """The processor that pushes microphone audio and user-speaking frames."""
        if self._input is None:
            self._input = AudiogateInputTransport(self._client, self._params, name=self._input_name)
        return self._input

    def output(self) -> AudiogateOutputTransport:
        """The processor that plays the bot's audio."""
        if self._output is None:
            self._output = AudiogateOutputTransport(self._client, self._params, name=self._output_name)
        return self._output
