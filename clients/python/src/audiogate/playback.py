"""Streamed playback over `WS /v1/playback`: write, marks, clear (barge-in), drained."""
from __future__ import annotations

import asyncio
import collections
import itertools
import json
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Callable, Union

import websockets

from ._transport import Connection, Endpoint, closed_error
from .errors import AudiogateError

_BYTES_PER_SAMPLE = {"s16le": 2, "f32le": 4, "mulaw": 1, "alaw": 1}
# The server takes messages up to 1 MiB; larger writes go out in pieces (PCM may be cut anywhere).
_PIECE = 256 * 1024


@dataclass(frozen=True)
class Mark:
    """What became of a mark: heard, or dropped by a clear first (`heard` False)."""

    name: str
    heard: bool
    #: milliseconds of audio written before the mark since the last clear (None for compressed audio).
    position_ms: float | None


@dataclass(frozen=True)
class Cleared:
    """The stream was flushed: `played_ms` heard since the previous clear, `flushed_ms` thrown away."""

    played_ms: int
    flushed_ms: int


@dataclass(frozen=True)
class Drained:
    """The stream's queue ran empty and all of it was heard."""


@dataclass(frozen=True)
class PlaybackError:
    """The server could not use something sent (e.g. undecodable compressed audio); the socket stays open."""

    code: str
    message: str


PlaybackEvent = Union[Mark, Cleared, Drained, PlaybackError]


@dataclass
class _PendingMark:
    name: str
    position_ms: float | None
    epoch: int
    future: asyncio.Future[Mark]


class Playback:
    """A stream: `async with client.playback() as pb: await pb.write(pcm)`; queued audio plays out after the block."""

    def __init__(
        self,
        endpoint: Endpoint,
        params: dict[str, Any],
        on_event: Callable[[PlaybackEvent], object] | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._params = params
        self._on_event = on_event
        width = _BYTES_PER_SAMPLE.get(str(params.get("format", "s16le")))
        self._frame_bytes = width * int(params.get("channels", 1)) if width else None
        self._rate = int(params.get("rate", 24000))
        self._socket: Connection | None = None
        self._outgoing: asyncio.Queue[tuple[bytes | str, asyncio.Future[None] | None]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._marks: collections.deque[_PendingMark] = collections.deque()
        self._clears: collections.deque[tuple[int, asyncio.Future[Cleared]]] = collections.deque()
        self._names = itertools.count()
        self._epoch = 0
        self._written_bytes = 0
        self._error: AudiogateError | None = None
        self._closed: AudiogateError | None = None
        self.heard_ms: float = 0.0
        """Position of the last heard mark (ms since the last clear): how far the listener got."""

    @property
    def written_ms(self) -> float | None:
        """Milliseconds of audio written since the last clear (None for compressed audio)."""
        if self._frame_bytes is None:
            return None
        return 1000 * (self._written_bytes // self._frame_bytes) / self._rate

    async def open(self) -> Playback:
        """Connects (also done by `async with`)."""
        if self._socket is None:
            # No ping timeout: while the stream is full the server reads nothing, pongs included.
            self._socket = await self._endpoint.connect("/v1/playback", self._params, ping_timeout=None)
            self._tasks = [asyncio.ensure_future(self._send_loop()), asyncio.ensure_future(self._receive_loop())]
        return self

    async def close(self) -> None:
        """Closes the socket; queued audio still plays."""
        if self._socket is None:
            return
        if self._closed is None:
            # Marks and clears still queued go out first; a stream the server stopped reading
            # (full) gets two seconds to take them.
            sent: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            sent.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._outgoing.put_nowait((b"", sent))
            await asyncio.wait([sent], timeout=2)
        socket, self._socket = self._socket, None
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await socket.close()
        self._fail(AudiogateError("closed", "the playback was closed"))

    async def __aenter__(self) -> Playback:
        return await self.open()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    async def write(self, data: bytes | bytearray | memoryview) -> None:
        """Queues audio (PCM in the stream's format, or pieces of a compressed file); waits while the stream is full."""
        # Pacing is the server's: with `--playback-queue-seconds` queued it stops reading, the
        # socket's send blocks, and so does this write, without any sleeping here.
        data = bytes(data)
        if not data:
            return
        self._check()
        self._written_bytes += len(data)
        for offset in range(0, len(data), _PIECE):
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._outgoing.put_nowait((data[offset : offset + _PIECE], done))
            await done

    def mark(self, name: str | None = None) -> asyncio.Future[Mark]:
        """Marks what was written so far: a future of its Mark once heard or cleared (fails if the connection ends)."""
        self._check()
        future: asyncio.Future[Mark] = asyncio.get_running_loop().create_future()
        # Read the outcome even when nobody awaits it, so a dropped connection is not logged.
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        name = name if name is not None else f"mark-{next(self._names)}"
        mark = _PendingMark(name, self.written_ms, self._epoch, future)
        self._marks.append(mark)
        self._outgoing.put_nowait((json.dumps({"type": "mark", "name": mark.name}), None))
        return future

    async def clear(self) -> Cleared:
        """Flushes the stream now (barge-in); answers what was played and what was thrown away."""
        self._check()
        self._epoch += 1
        self._written_bytes = 0
        self.heard_ms = 0.0
        future: asyncio.Future[Cleared] = asyncio.get_running_loop().create_future()
        self._clears.append((self._epoch, future))
        self._outgoing.put_nowait((json.dumps({"type": "clear"}), None))
        return await future

    async def drained(self) -> None:
        """Returns once everything written so far was heard (or cleared); raises if the connection ends."""
        await self.mark()

    def _check(self) -> None:
        if self._closed is not None:
            raise self._closed
        if self._socket is None:
            raise AudiogateError("not_open", "the playback is not open")
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    async def _send_loop(self) -> None:
        assert self._socket is not None
        while True:
            payload, done = await self._outgoing.get()
            try:
                if payload:
                    await self._socket.send(payload)
            except websockets.exceptions.ConnectionClosed as error:
                failure = closed_error(error)
                if done is not None and not done.done():
                    done.set_exception(failure)
                self._fail(failure)
                return
            if done is not None and not done.done():
                done.set_result(None)

    async def _receive_loop(self) -> None:
        assert self._socket is not None
        try:
            async for raw in self._socket:
                if isinstance(raw, str):
                    message = json.loads(raw)
                    if isinstance(message, dict):
                        self._handle(message)
        except websockets.exceptions.ConnectionClosed as error:
            self._fail(closed_error(error))
            return
        code, reason = self._socket.close_code, self._socket.close_reason
        detail = f" ({code} {reason})".replace(" )", ")") if code is not None else ""
        self._fail(self._error or AudiogateError("connection_closed", f"the server closed the connection{detail}"))

    def _handle(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        event: PlaybackEvent
        if kind == "mark":
            name = str(message.get("name"))
            pending = next((m for m in self._marks if m.name == name), None)
            if pending is None:
                return
            self._marks.remove(pending)
            event = Mark(pending.name, True, pending.position_ms)
            if pending.position_ms is not None and pending.epoch == self._epoch:
                self.heard_ms = pending.position_ms
            if not pending.future.done():
                pending.future.set_result(event)
        elif kind == "cleared":
            event = Cleared(int(message.get("played_ms", 0)), int(message.get("flushed_ms", 0)))
            # Ours answers the oldest clear sent; one from elsewhere (another socket, DELETE) drops
            # every mark still waiting.
            epoch, future = self._clears.popleft() if self._clears else (self._epoch + 1, None)
            for pending in [m for m in self._marks if m.epoch < epoch]:
                self._marks.remove(pending)
                if not pending.future.done():
                    pending.future.set_result(Mark(pending.name, False, pending.position_ms))
            if future is not None and not future.done():
                future.set_result(event)
        elif kind == "drained":
            event = Drained()
        elif kind == "error":
            event = PlaybackError(str(message.get("code", "error")), str(message.get("message", "")))
            if self._on_event is None:
                self._error = AudiogateError(event.code, event.message)
        else:
            return
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception as error:  # the caller's bug must not stop the stream's bookkeeping
                asyncio.get_running_loop().call_exception_handler(
                    {"message": "audiogate: the playback's on_event callback raised", "exception": error}
                )

    def _fail(self, error: AudiogateError) -> None:
        """Ends every waiter: the connection is gone."""
        if self._closed is None:
            self._closed = error
        while self._marks:
            pending = self._marks.popleft()
            if not pending.future.done():
                pending.future.set_exception(error)
        while self._clears:
            _, future = self._clears.popleft()
            if not future.done():
                future.set_exception(error)
        while not self._outgoing.empty():
            _, done = self._outgoing.get_nowait()
            if done is not None and not done.done():
                done.set_exception(error)
