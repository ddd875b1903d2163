"""Pipecat transport on audiogate: `AudiogateTransport(url).input()` and `.output()` in a Pipeline.

    from audiogate.pipecat import AudiogateParams, AudiogateTransport

    transport = AudiogateTransport("http://127.0.0.1:8750")
    pipeline = Pipeline([transport.input(), stt, user_aggregator, llm, tts, transport.output(), ...])

    @transport.event_handler("on_client_connected")
    async def on_connected(transport, client): ...

Input pushes `InputAudioRawFrame`s from `WS /v1/capture` (echo cancellation and voice activity
events on by default) and turns the server's `vad` events into `VADUserStartedSpeakingFrame` and
`VADUserStoppedSpeakingFrame`, carrying the server's onset and hangover as `start_secs` and
`stop_secs` and dated by the capture time; a capture that ends mid-speech sends the stopped frame.

Output is a `BaseOutputTransport`: the base class resamples audio to the output rate (here with
a filter that holds back 2 ms, not soxr's bursts), cuts it into chunks, mixes, applies volume
frames and keeps text and other frames in step with the audio. Each chunk goes to a
`WS /v1/playback` stream (one per destination: the default one is `AudiogateParams.stream`, a
destination in `audio_out_destinations` plays on the stream of that name) with a mark after it,
and the next chunk waits until the audio ahead of what was heard is down to
`audio_out_lead_secs`. So a frame queued behind audio (an LLM's text, an image) leaves the
transport when that audio is about to be heard, which is what the assistant aggregator writes to
the context on an interruption. An `InterruptionFrame` clears the stream at once; audio from
uninterruptible frames that was sent and not yet played goes out again after the clear.
`BotStoppedSpeakingFrame` comes once the last audio was heard.

Transport events: `on_client_connected(transport, client)` once every enabled side reached the
server, `on_client_disconnected(transport, client)` when a side lost the server (both sides reconnect
with the client's back-off, and `on_client_connected` comes again once they are back; a turn
open when the capture dropped ends there), `on_device_lost(transport)` and
`on_device_restored(transport)` from the capture device's events. RTVI and other transport
messages have no channel on audiogate and are dropped at the output (observers still see them).
"""
from __future__ import annotations

import asyncio
import collections
import time
from typing import Any

import numpy as np
from loguru import logger
from pipecat.audio.resamplers.base_audio_resampler import BaseAudioResampler
from pipecat.frames.frames import (
    BotStoppedSpeakingFrame,
    CancelFrame,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    OutputAudioRawFrame,
    StartFrame,
    UserSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import BaseTransport, TransportParams

from ._resample import StreamResampler
from .capture import AudioChunk, Capture, DeviceEvent, OverrunEvent, VadEvent
from .client import Client
from .connection import ConnectionLost, Reconnected
from .errors import AudiogateError
from .playback import Cleared, Mark, Playback

__all__ = ["AudiogateInputTransport", "AudiogateOutputTransport", "AudiogateParams", "AudiogateTransport"]

# How often the "still speaking" frames go out, as Pipecat's own transports do.
_SPEAKING_PERIOD_S = 0.2
# The server's voice activity rule (5 voiced 10 ms frames start speech, 40 unvoiced end it).
_VAD_ONSET_S = 0.05
_VAD_HANGOVER_S = 0.4
# Capture times further than this from our monotonic clock come from another host's clock.
_SAME_CLOCK_S = 10.0
_SAMPLE_BYTES = 2


class AudiogateParams(TransportParams):
    """TransportParams with audio in and out on, and audiogate's capture processing and stream name."""

    audio_in_enabled: bool = True
    audio_out_enabled: bool = True
    #: cancel the echo of what audiogate plays, so the bot does not hear itself
    aec: bool = True
    #: server-side voice activity events become Pipecat's VAD frames
    vad: bool = True
    #: noise suppression (None: the server's default)
    ns: bool | None = None
    chunk_ms: int = 20
    #: the playback stream the bot speaks on (its own queue, marks and clear)
    stream: str = "pipecat"
    #: how far the audio sent may run ahead of what was heard: it covers the card's buffer and
    #: the jitter of this process; what is ahead is what an interruption throws away
    audio_out_lead_secs: float = 0.2


def _wall_time(capture_ms: float) -> float:
    """A capture time (the server's CLOCK_MONOTONIC, ms) as wall-clock seconds, as Pipecat dates frames."""
    now = time.monotonic()
    at = capture_ms / 1000
    if abs(now - at) > _SAME_CLOCK_S:
        return time.time()  # a server on another host: its clock is not ours
    return time.time() - (now - at)


class AudiogateInputTransport(BaseInputTransport):
    """Live microphone audio from audiogate as InputAudioRawFrames, with server VAD as user-speaking frames."""

    _params: AudiogateParams

    def __init__(self, transport: AudiogateTransport, params: AudiogateParams, **kwargs: Any) -> None:
        super().__init__(params, **kwargs)
        self._transport = transport
        self._capture: Capture | None = None
        self._reader: asyncio.Task[None] | None = None
        self._speaking = False
        self._speaking_sent = 0.0
        self._last_capture_ms: float | None = None

    async def start(self, frame: StartFrame) -> None:
        """Opens the capture at the pipeline's input rate and starts pushing audio."""
        await super().start(frame)
        if self._capture is not None or not self._params.audio_in_enabled:
            await self.set_transport_ready(frame)
            return
        capture = self._transport.client.capture(
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
        await self._transport._side_connected("input")

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
        await super().cleanup()  # type: ignore[no-untyped-call, unused-ignore]  # unannotated in Pipecat
        await self._close()

    async def _close(self) -> None:
        if self._reader is not None:
            reader, self._reader = self._reader, None
            await self.cancel_task(reader)
        if self._capture is not None:
            capture, self._capture = self._capture, None
            await capture.close()
        await self._end_speech()

    async def _read(self, capture: Capture) -> None:
        try:
            async for item in capture:
                if isinstance(item, AudioChunk):
                    if item.timestamp_ms is not None:
                        self._last_capture_ms = item.timestamp_ms + item.duration_ms
                    await self.push_audio_frame(
                        InputAudioRawFrame(audio=item.data, sample_rate=item.rate, num_channels=item.channels)
                    )
                    if self._speaking and time.monotonic() - self._speaking_sent >= _SPEAKING_PERIOD_S:
                        self._speaking_sent = time.monotonic()
                        await self.broadcast_frame(UserSpeakingFrame)
                elif isinstance(item, VadEvent):
                    await self._vad(item)
                elif isinstance(item, OverrunEvent):
                    logger.warning(f"{self}: fell behind live audio, {item.dropped_ms:.0f} ms dropped")
                elif isinstance(item, DeviceEvent):
                    await self._transport._device(item.state)
                elif isinstance(item, ConnectionLost):
                    # The turn cannot go on over a gap: end it now, as a capture that ended would.
                    await self._end_speech()
                    await self._transport._side_disconnected()
                elif isinstance(item, Reconnected):
                    gap = "unknown" if item.lost_ms is None else f"{item.lost_ms:.0f} ms"
                    logger.info(f"{self}: capture back after {item.down_ms:.0f} ms, {gap} of audio lost")
                    await self._transport._side_connected("input")
        except AudiogateError as error:
            await self._end_speech()
            await self.push_error(f"{self}: capture failed: {error}", exception=error)
            await self._transport._side_disconnected()
            return
        logger.info(f"{self}: the server ended the capture")
        await self._end_speech()
        await self._transport._side_disconnected()

    async def _vad(self, event: VadEvent) -> None:
        speech = event.state == "speech"
        if speech == self._speaking:
            return
        self._speaking = speech
        if speech:
            self._speaking_sent = time.monotonic()
            # The event names where speech began; Pipecat dates a VAD frame when the VAD decided.
            decided = _wall_time(event.timestamp_ms) + _VAD_ONSET_S
            await self.broadcast_frame(VADUserStartedSpeakingFrame, start_secs=_VAD_ONSET_S, timestamp=decided)
            await self.broadcast_frame(UserSpeakingFrame)
        else:
            decided = _wall_time(event.timestamp_ms) + _VAD_HANGOVER_S
            await self.broadcast_frame(VADUserStoppedSpeakingFrame, stop_secs=_VAD_HANGOVER_S, timestamp=decided)

    async def _end_speech(self) -> None:
        """The capture ended while the user spoke: the turn ends with the last audio that came."""
        if not self._speaking:
            return
        self._speaking = False
        ended = time.time() if self._last_capture_ms is None else _wall_time(self._last_capture_ms)
        # stop_secs 0: no silence confirmed this end (Pipecat then measures no latency from it).
        await self.broadcast_frame(VADUserStoppedSpeakingFrame, stop_secs=0.0, timestamp=ended)


class _Stream:
    """One playback stream (a destination): what was sent since the last clear and how far it was heard."""

    def __init__(self, playback: Playback, rate: int, channels: int) -> None:
        self.playback = playback
        self.frame_bytes = _SAMPLE_BYTES * channels
        self.rate = rate
        #: (position in ms after a chunk, the mark placed there), oldest first
        self.marks: collections.deque[tuple[float, asyncio.Future[Mark]]] = collections.deque()
        #: chunks sent and not yet heard: (end position in ms, audio, interruptible)
        self.unheard: collections.deque[tuple[float, bytes, bool]] = collections.deque()
        self.sent_ms = 0.0
        #: counts clears, so a chunk taken before one is not sent after it
        self.epoch = 0
        # Sends and clears one at a time, so audio re-sent after a clear precedes what follows.
        self.lock = asyncio.Lock()

    async def paced(self, lead_ms: float) -> None:
        """Returns once what was sent and not heard is at most `lead_ms` (raises if the stream failed)."""
        while self.marks and self.marks[0][0] < self.sent_ms - lead_ms:
            position, future = self.marks[0]
            mark = await future
            if self.marks and self.marks[0][1] is future:
                self.marks.popleft()
                while mark.heard and self.unheard and self.unheard[0][0] <= position:
                    self.unheard.popleft()

    async def send(self, audio: bytes, interruptible: bool) -> None:
        await self.playback.write(audio)
        self.sent_ms += 1000 * (len(audio) // self.frame_bytes) / self.rate
        self.unheard.append((self.sent_ms, audio, interruptible))
        self.marks.append((self.sent_ms, self.playback.mark()))

    async def heard(self) -> None:
        """Returns once everything sent was heard or cleared (or the stream failed)."""
        if self.marks:
            await asyncio.gather(self.marks[-1][1], return_exceptions=True)

    async def clear(self) -> Cleared:
        """Flushes the stream, then sends again the uninterruptible audio it had not played."""
        self.epoch += 1
        async with self.lock:
            unheard = self.unheard
            self.marks, self.unheard, self.sent_ms = collections.deque(), collections.deque(), 0.0
            cleared = await self.playback.clear()
            kept = bytearray()
            start = 0.0
            for end, audio, interruptible in unheard:
                if not interruptible and end > cleared.played_ms:
                    skip = max(0.0, cleared.played_ms - start)
                    kept += audio[int(skip * self.rate / 1000) * self.frame_bytes :]
                start = end
            if kept:
                await self.send(bytes(kept), False)
        return cleared


class _PacedResampler(BaseAudioResampler):
    """Pipecat's resampler interface on `StreamResampler`: what comes in goes out at once."""

    def __init__(self) -> None:
        self._resampler: StreamResampler | None = None

    async def resample(self, audio: bytes, in_rate: int, out_rate: int) -> bytes:
        if in_rate == out_rate:
            return audio
        if self._resampler is None or (self._resampler.in_rate, self._resampler.out_rate) != (in_rate, out_rate):
            self._resampler = StreamResampler(in_rate, out_rate)
        return self._resampler.resample(audio)

    async def flush(self) -> bytes:
        return b"" if self._resampler is None else self._resampler.flush()

    async def reset(self) -> None:
        if self._resampler is not None:
            self._resampler.reset()


class AudiogateOutputTransport(BaseOutputTransport):
    """Plays the bot's audio on audiogate playback streams, paced by what was heard.

    `last_cleared` holds the server's answer to the last clear (played_ms, flushed_ms).
    """

    _params: AudiogateParams

    def __init__(self, transport: AudiogateTransport, params: AudiogateParams, **kwargs: Any) -> None:
        super().__init__(params, **kwargs)
        self._transport = transport
        self._streams: dict[str | None, _Stream] = {}
        self._interrupting = False
        self.last_cleared: Cleared | None = None
        """What the server answered to the last clear (played_ms, flushed_ms)."""

    async def start(self, frame: StartFrame) -> None:
        """Opens the default stream (the destinations' open as they register) at the output rate."""
        await super().start(frame)
        if self._params.audio_out_enabled:
            await self._open(None, self._params.stream)
        await self.set_transport_ready(frame)
        await self._transport._side_connected("output")

    async def set_transport_ready(self, frame: StartFrame) -> None:
        """Starts the base class's senders, each resampling with a filter that holds back only 2 ms.

        Pipecat's own resampler (soxr at its highest quality) works in blocks: fed 20 ms frames
        at 16 kHz for a 24 kHz output, it returns nothing for three frames, then 69 ms at once,
        holding up to 76 ms back. Audio that comes at its own pace (an echo, a relay, a voice
        streamed in real time) then reaches the stream that much later and in bursts, so the
        audio queued ahead of the card runs low and a late frame leaves a hole at a chunk's end
        (each chunk ends on a mark, after which the server counts running dry as no underrun).
        `StreamResampler` gives each frame's audio at once, 2 ms behind.
        """
        await super().set_transport_ready(frame)
        for sender in self._media_senders.values():
            sender._resampler = _PacedResampler()

    async def register_audio_destination(self, destination: str) -> None:
        """A destination plays on the playback stream of the same name."""
        if self._params.audio_out_enabled:
            await self._open(destination, destination)

    async def stop(self, frame: EndFrame) -> None:
        """Lets the audio queued before the EndFrame play out, then closes the streams."""
        await super().stop(frame)
        for stream in self._streams.values():
            await stream.heard()
        await self._close()

    async def cancel(self, frame: CancelFrame) -> None:
        """Silences the streams at once and closes them."""
        await super().cancel(frame)
        for stream in list(self._streams.values()):
            await self._clear(stream)
        await self._close()

    async def cleanup(self) -> None:
        """Closes the streams if the pipeline ended without an EndFrame or CancelFrame."""
        await super().cleanup()  # type: ignore[no-untyped-call, unused-ignore]  # unannotated in Pipecat
        await self._close()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        """Clears the server on an interruption before the base class drops its queued audio."""
        if isinstance(frame, InterruptionFrame):
            stream = self._streams.get(frame.transport_destination)
            self._interrupting = True
            try:
                if stream is not None:
                    await self._clear(stream)
                await super().process_frame(frame, direction)
            finally:
                self._interrupting = False
            return
        await super().process_frame(frame, direction)

    async def push_frame(self, frame: Frame, direction: FrameDirection = FrameDirection.DOWNSTREAM) -> None:
        """Holds BotStoppedSpeakingFrame until the bot's last audio was heard."""
        if isinstance(frame, BotStoppedSpeakingFrame) and direction == FrameDirection.DOWNSTREAM:
            stream = self._streams.get(frame.transport_destination)
            if stream is not None and not self._interrupting:
                await stream.heard()
        await super().push_frame(frame, direction)

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        """Sends a chunk once the audio ahead of what was heard is down to the lead."""
        stream = self._streams.get(frame.transport_destination)
        if stream is None:
            return False
        epoch = stream.epoch
        try:
            await stream.paced(1000 * self._params.audio_out_lead_secs)
            async with stream.lock:
                if epoch != stream.epoch and frame.interruptible:
                    return False  # taken before a clear: it would play after it
                await stream.send(self._channels(frame), frame.interruptible)
        except AudiogateError as error:
            await self._failed(error)
            return False
        return True

    def _channels(self, frame: OutputAudioRawFrame) -> bytes:
        """The frame's audio with the stream's channel count (mono TTS on a stereo stream, say)."""
        wanted = self._params.audio_out_channels
        if frame.num_channels == wanted or not frame.audio:
            return bytes(frame.audio)
        samples = np.frombuffer(frame.audio, dtype="<i2").reshape(-1, frame.num_channels)
        mono = samples.mean(axis=1).round().astype("<i2")
        return np.repeat(mono, wanted).tobytes() if wanted > 1 else mono.tobytes()

    async def _open(self, destination: str | None, name: str) -> None:
        if destination in self._streams:
            return
        playback = self._transport.client.playback(
            rate=self.sample_rate, channels=self._params.audio_out_channels, stream=name, on_event=self._connection
        )
        await playback.open()
        self._streams[destination] = _Stream(playback, self.sample_rate, self._params.audio_out_channels)

    def _connection(self, event: object) -> None:
        """A playback stream's connection events, told to the transport's event handlers."""
        if isinstance(event, ConnectionLost):
            self.create_task(self._transport._side_disconnected(), f"{self}::disconnected")
        elif isinstance(event, Reconnected):
            logger.info(f"{self}: playback back after {event.down_ms:.0f} ms")
            self.create_task(self._transport._side_connected("output"), f"{self}::reconnected")

    async def _clear(self, stream: _Stream) -> None:
        try:
            self.last_cleared = await stream.clear()
        except AudiogateError as error:
            logger.warning(f"{self}: clear failed: {error}")

    async def _failed(self, error: AudiogateError) -> None:
        if self._streams:
            await self.push_error(f"{self}: playback failed: {error}", exception=error)
            await self._close()
            await self._transport._side_disconnected()

    async def _close(self) -> None:
        streams, self._streams = list(self._streams.values()), {}
        for stream in streams:
            await stream.playback.close()


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
        self._connected: set[str] = set()
        self._reported = False
        self._register_event_handler("on_client_connected")
        self._register_event_handler("on_client_disconnected")
        self._register_event_handler("on_device_lost")
        self._register_event_handler("on_device_restored")

    @property
    def client(self) -> Client:
        """The audiogate client the transport uses."""
        return self._client

    def input(self) -> AudiogateInputTransport:
        """The processor that pushes microphone audio and user-speaking frames."""
        if self._input is None:
            self._input = AudiogateInputTransport(self, self._params, name=self._input_name)
        return self._input

    def output(self) -> AudiogateOutputTransport:
        """The processor that plays the bot's audio."""
        if self._output is None:
            self._output = AudiogateOutputTransport(self, self._params, name=self._output_name)
        return self._output

    async def _side_connected(self, side: str) -> None:
        self._connected.add(side)
        # Only the sides in the pipeline (and enabled) count.
        wanted = set()
        if self._input is not None and self._params.audio_in_enabled:
            wanted.add("input")
        if self._output is not None and self._params.audio_out_enabled:
            wanted.add("output")
        if wanted <= self._connected and not self._reported:
            self._reported = True
            await self._call_event_handler("on_client_connected", self._client)

    async def _side_disconnected(self) -> None:
        if self._reported:
            self._reported = False
            self._connected.clear()
            await self._call_event_handler("on_client_disconnected", self._client)

    async def _device(self, state: str) -> None:
        await self._call_event_handler("on_device_lost" if state == "lost" else "on_device_restored")
