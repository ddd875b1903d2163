"""Live microphone audio over `WS /v1/capture`: audio chunks and typed events."""
from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal

import websockets

from ._transport import Connection, Endpoint, closed_error, heartbeat
from .connection import ConnectionLost, Reconnected, ReconnectPolicy
from .errors import AudiogateError, ConnectionLostError, ProtocolError, retryable

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
    """`chunk_ms` of interleaved little-endian audio; `seq` counts chunks from 0.

    `seq` has no gaps while the connection holds; across a reconnect it jumps by the chunks lost,
    so it stays a count of `chunk_ms` periods since the capture opened.
    """

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
class MusicEvent:
    """What the Sendspin player plays (with `music=True`): on connecting and on each change.
    `metadata` holds the fields of `sendspin.metadata` in `/v1/status` (None: nothing known), its
    `progress_ms` as of `timestamp_ms` (capture time)."""

    player: str
    playback_state: str | None
    metadata: dict[str, Any] | None
    timestamp_ms: float


@dataclass(frozen=True)
class OverrunEvent:
    """This client fell behind and its oldest `dropped_ms` of audio were dropped."""

    dropped_ms: float


@dataclass(frozen=True)
class DeviceEvent:
    """The capture device was lost (the server reopens it) or restored."""

    state: Literal["lost", "restored"]


CaptureEvent = VadEvent | LevelEvent | MusicEvent | OverrunEvent | DeviceEvent | ConnectionLost | Reconnected
CaptureItem = AudioChunk | CaptureEvent


class Capture:
    """Live capture: `async with client.capture() as cap: async for item in cap` yields chunks and events in order.

    A connection that ends other than by `close()` (the server restarted, a ping went unanswered)
    yields `ConnectionLost`, is reopened with the client's `ReconnectPolicy`, and yields
    `Reconnected` with the audio lost in between before the first new chunk. A server shutting
    down (close 1001) with reconnecting off, or a normal close, ends the iteration.
    """

    def __init__(self, endpoint: Endpoint, params: dict[str, Any], policy: ReconnectPolicy | None = None) -> None:
        self._endpoint = endpoint
        # JSON audio messages carry seq and the capture time; binary frames carry neither.
        self._params = {"encoding": "json", **params}
        self._policy = policy or ReconnectPolicy(max_attempts=0)
        self._socket: Connection | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._closed = False
        # Server seq + offset = our seq; the offset grows by the chunks a reconnect lost.
        self._seq = 0
        self._seq_offset = 0
        self._last_end_ms: float | None = None
        self._last_arrival: float | None = None
        self._lost: ConnectionLostError | None = None
        self._lost_at = 0.0
        self._attempts = 0
        self._resumed = False
        self._pending: collections.deque[CaptureItem] = collections.deque()
        self.start: CaptureStart | None = None
        """The `start` message, set once the capture is open."""

    async def open(self) -> Capture:
        """Connects and reads the `start` message (also done by `async with`); the first connection is not retried."""
        if self._socket is None and not self._closed:
            await self._connect()
        return self

    async def _connect(self) -> None:
        # Chunks of up to 200 ms of 48 kHz stereo float, base64: well under 1 MiB.
        socket = await self._endpoint.connect("/v1/capture", self._params, max_size=2**21)
        try:
            first = await self._read(socket)
        except BaseException:
            await socket.close()
            raise
        if first is None or first.get("type") != "start":
            await socket.close()
            raise ProtocolError("protocol_error", f"expected a start message, got {first!r}")
        start = CaptureStart(
            rate=int(first["rate"]),
            channels=int(first["channels"]),
            format=str(first["format"]),
            chunk_ms=int(first["chunk_ms"]),
            processing={str(k): bool(v) for k, v in (first.get("processing") or {}).items()},
        )
        if self.start is not None and start != self.start:
            await socket.close()
            raise ProtocolError("protocol_error", f"the capture came back as {start}, not {self.start}")
        self.start = start
        self._socket = socket
        policy = self._policy
        self._heartbeat = asyncio.ensure_future(
            heartbeat(socket, policy.ping_interval, policy.ping_timeout, lambda: True)
        )

    async def close(self) -> None:
        """Closes the socket (normal closure); iterating ends."""
        self._closed = True
        await self._drop()

    async def _drop(self) -> None:
        if self._heartbeat is not None:
            beat, self._heartbeat = self._heartbeat, None
            beat.cancel()
            await asyncio.gather(beat, return_exceptions=True)
        if self._socket is not None:
            socket, self._socket = self._socket, None
            with contextlib.suppress(Exception):
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
            if self._pending:
                return self._pending.popleft()
            if self._closed:
                raise StopAsyncIteration
            if self._lost is not None:
                await self._reconnect()
            try:
                message = await self._receive()
            except ConnectionLostError as error:
                if self._closed:
                    raise StopAsyncIteration from None
                await self._drop()
                final = self._policy.max_attempts == 0
                if final and error.close_code == 1001:
                    raise StopAsyncIteration from None  # the server shut down: the stream's end
                if final:
                    raise
                self._lost, self._lost_at, self._attempts = error, time.monotonic(), 0
                return ConnectionLost(error)
            if message is None:
                await self._drop()
                raise StopAsyncIteration
            item = self._item(message)
            if item is not None:
                return item

    async def chunks(self) -> AsyncIterator[AudioChunk]:
        """The audio chunks alone, events skipped."""
        async for item in self:
            if isinstance(item, AudioChunk):
                yield item

    async def _reconnect(self) -> None:
        """Reopens the capture with the policy's back-off; raises what ended it if it cannot heal or gives up."""
        lost = self._lost
        assert lost is not None
        last: AudiogateError = lost
        for delay in self._policy.delays():
            await asyncio.sleep(delay)
            if self._closed:
                raise StopAsyncIteration
            self._attempts += 1
            try:
                await self._connect()
            except AudiogateError as error:
                if not retryable(error):
                    self._lost = None
                    raise
                last = error
                continue
            self._lost = None
            self._resumed = True
            return
        self._lost = None
        raise last

    async def _receive(self) -> dict[str, Any] | None:
        """The next message as a dict (binary frames as `{"type": "binary"}`), None at a normal end."""
        if self._socket is None:
            raise AudiogateError("not_open", "the capture is not open")
        return await self._read(self._socket)

    @staticmethod
    async def _read(socket: Connection) -> dict[str, Any] | None:
        try:
            raw = await socket.recv()
        except websockets.exceptions.ConnectionClosedOK as error:
            if error.rcvd is not None and error.rcvd.code == 1001:
                raise closed_error(error) from None
            return None
        except websockets.exceptions.ConnectionClosed as error:
            raise closed_error(error) from None
        if isinstance(raw, bytes):
            return {"type": "binary", "bytes": raw}
        message = json.loads(raw)
        if not isinstance(message, dict):
            raise ProtocolError("protocol_error", f"unexpected message {raw[:200]!r}")
        return message

    def _item(self, message: dict[str, Any]) -> CaptureItem | None:
        kind = message.get("type")
        start = self.start
        assert start is not None
        if kind == "audio" or kind == "binary":
            now = time.monotonic()
            if kind == "audio":
                data = base64.b64decode(message["data"])
                server_seq, timestamp = int(message["seq"]), float(message["timestamp_ms"])
            else:
                data, server_seq, timestamp = message["bytes"], None, None
            chunk_ms = float(start.chunk_ms)
            missing = 0
            if self._resumed:
                self._resumed = False
                lost_ms = self._gap(timestamp, now, chunk_ms)
                missing = max(0, round(lost_ms / chunk_ms)) if lost_ms is not None else 0
                if server_seq is not None:
                    # The new connection counts from 0 again: carry on from ours, past what was lost.
                    self._seq_offset = self._seq + missing - server_seq
                self._pending.append(Reconnected(lost_ms, 1000 * (now - self._lost_at), self._attempts))
            seq = server_seq + self._seq_offset if server_seq is not None else self._seq + missing
            self._seq = seq + 1
            chunk = AudioChunk(data, seq, timestamp, start.rate, start.channels, start.format)
            if timestamp is not None:
                self._last_end_ms = timestamp + chunk.duration_ms
            self._last_arrival = now
            if self._pending:
                self._pending.append(chunk)
                return self._pending.popleft()
            return chunk
        if kind == "vad":
            return VadEvent(message["state"], float(message["timestamp_ms"]))
        if kind == "level":
            return LevelEvent(float(message["rms_dbfs"]), float(message["peak_dbfs"]))
        if kind == "music":
            return MusicEvent(str(message.get("player", "")), message.get("playback_state"), message.get("metadata"),
                              float(message.get("timestamp_ms", 0)))
        if kind == "overrun":
            return OverrunEvent(float(message["dropped_ms"]))
        if kind == "device":
            return DeviceEvent(message["state"])
        if kind == "error":
            raise ProtocolError(str(message.get("code", "error")), str(message.get("message", "")))
        return None  # a message type newer than this client

    def _gap(self, timestamp: float | None, now: float, chunk_ms: float) -> float | None:
        """Audio lost between the last chunk before the reconnect and the first after it."""
        if timestamp is not None and self._last_end_ms is not None:
            # Both on CLOCK_MONOTONIC: a restarted server on the same machine keeps the clock.
            return max(0.0, timestamp - self._last_end_ms)
        if self._last_arrival is not None:
            return max(0.0, 1000 * (now - self._last_arrival) - chunk_ms)
        return None
