"""Live microphone audio over `WS /v1/capture`: audio chunks and typed events."""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, AsyncIterator, Literal, Union

import websockets

from ._transport import Connection, Endpoint, closed_error
from .errors import AudiogateError

_BYTES_PER_SAMPLE = {"s16le": 2, "f32le": 4, "mulaw": 1, "alaw": 1}


@dataclass(frozen=True)
class CaptureStart:
    """The stream's format as the server confirmed it, and the processing in effect."""

    rate: int
    channels: int
    format: str
    chunk_ms: int
    processing: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class AudioChunk:
    """`chunk_ms` of interleaved little-endian audio; `seq` counts chunks from 0 with no gaps."""

    data: bytes
    seq: int
    #: capture time of the first sample on the server's monotonic clock (ms); a jump shows dropped
    #: audio. None only for binary frames, which carry no time.
    timestamp_ms: float | None
    rate: int
    channels: int
    format: str

    @property
    def frames(self) -> int:
        """Frames in the chunk (0 for compressed formats)."""
        width = _BYTES_PER_SAMPLE.get(self.format)
        return len(self.data) // (width * self.channels) if width else 0

    @property
    def duration_ms(self) -> float:
        """Milliseconds of audio in the chunk (0 for compressed formats)."""
        return 1000 * self.frames / self.rate


@dataclass(frozen=True)
class VadEvent:
    """Speech started or ended at `timestamp_ms` (capture time)."""

    state: Literal["speech", "silence"]
    timestamp_ms: float


@dataclass(frozen=True)
class LevelEvent:
    """The input level over the last 50 ms (with `levels=True`)."""

    rms_dbfs: float
    peak_dbfs: float


@dataclass(frozen=True)
class OverrunEvent:
    """This client fell behind and its oldest `dropped_ms` of audio were dropped."""

    dropped_ms: float


@dataclass(frozen=True)
class DeviceEvent:
    """The capture device was lost (the server reopens it) or restored."""

    state: Literal["lost", "restored"]


CaptureEvent = Union[VadEvent, LevelEvent, OverrunEvent, DeviceEvent]
CaptureItem = Union[AudioChunk, VadEvent, LevelEvent, OverrunEvent, DeviceEvent]


class Capture:
    """Live capture: `async with client.capture() as cap: async for item in cap` yields chunks and events in order."""

    def __init__(self, endpoint: Endpoint, params: dict[str, Any]) -> None:
        self._endpoint = endpoint
        # JSON audio messages carry seq and the capture time; binary frames carry neither.
        self._params = {"encoding": "json", **params}
        self._socket: Connection | None = None
        self._seq = 0
        self.start: CaptureStart | None = None
        """The `start` message, set once the capture is open."""

    async def open(self) -> Capture:
        """Connects and reads the `start` message (also done by `async with`)."""
        if self._socket is not None:
            return self
        # Chunks of up to 200 ms of 48 kHz stereo float, base64: well under 1 MiB.
        self._socket = await self._endpoint.connect("/v1/capture", self._params, max_size=2**21)
        first = await self._receive()
        if first is None or first.get("type") != "start":
            await self.close()
            raise AudiogateError("protocol_error", f"expected a start message, got {first!r}")
        self.start = CaptureStart(
            rate=int(first["rate"]),
            channels=int(first["channels"]),
            format=str(first["format"]),
            chunk_ms=int(first["chunk_ms"]),
            processing={str(k): bool(v) for k, v in (first.get("processing") or {}).items()},
        )
        return self

    async def close(self) -> None:
        """Closes the socket (normal closure)."""
        if self._socket is not None:
            socket, self._socket = self._socket, None
            await socket.close()

    async def __aenter__(self) -> Capture:
        return await self.open()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    def __aiter__(self) -> AsyncIterator[CaptureItem]:
        return self

    async def __anext__(self) -> CaptureItem:
        while True:
            message = await self._receive()
            if message is None:
                raise StopAsyncIteration
            item = self._item(message)
            if item is not None:
                return item

    async def chunks(self) -> AsyncIterator[AudioChunk]:
        """The audio chunks alone, events skipped."""
        async for item in self:
            if isinstance(item, AudioChunk):
                yield item

    async def _receive(self) -> dict[str, Any] | None:
        """The next message as a dict (binary frames as `{"type": "binary"}`), None at a normal end.

        A normal close (1000) and the server shutting down (1001) end the iteration: both are the
        end of the stream, not a failure of this client.
        """
        if self._socket is None:
            raise AudiogateError("not_open", "the capture is not open")
        try:
            raw = await self._socket.recv()
        except websockets.exceptions.ConnectionClosedOK:
            return None
        except websockets.exceptions.ConnectionClosed as error:
            if error.rcvd is not None and error.rcvd.code == 1001:
                return None
            raise closed_error(error) from None
        if isinstance(raw, bytes):
            return {"type": "binary", "bytes": raw}
        message = json.loads(raw)
        if not isinstance(message, dict):
            raise AudiogateError("protocol_error", f"unexpected message {raw[:200]!r}")
        return message

    def _item(self, message: dict[str, Any]) -> CaptureItem | None:
        kind = message.get("type")
        start = self.start
        assert start is not None
        if kind == "audio" or kind == "binary":
            if kind == "audio":
                data = base64.b64decode(message["data"])
                seq, timestamp = int(message["seq"]), float(message["timestamp_ms"])
            else:
                data, seq, timestamp = message["bytes"], self._seq, None
            self._seq = seq + 1
            return AudioChunk(data, seq, timestamp, start.rate, start.channels, start.format)
        if kind == "vad":
            return VadEvent(message["state"], float(message["timestamp_ms"]))
        if kind == "level":
            return LevelEvent(float(message["rms_dbfs"]), float(message["peak_dbfs"]))
        if kind == "overrun":
            return OverrunEvent(float(message["dropped_ms"]))
        if kind == "device":
            return DeviceEvent(message["state"])
        if kind == "error":
            raise AudiogateError(str(message.get("code", "error")), str(message.get("message", "")))
        return None  # a message type newer than this client
