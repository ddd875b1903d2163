"""Streamed playback over `WS /v1/playback`: write, marks, clear (barge-in), pause, drained."""
from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import websockets

from ._transport import Connection, Endpoint, closed_error, heartbeat
from .connection import ConnectionLost, Reconnected, ReconnectPolicy
from .errors import AudiogateError, ConnectionLostError, retryable

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
    #: the id the clear carried (`clear()` sends one of its own; None from `DELETE /v1/playback`)
    id: str | None = None


@dataclass(frozen=True)
class Started:
    """The stream's first audio after silence (opened, drained or cleared) was heard."""


@dataclass(frozen=True)
class Drained:
    """The stream's queue ran empty and all of it was heard."""


@dataclass(frozen=True)
class PlaybackError:
    """The server could not use something sent (e.g. undecodable compressed audio); the socket stays open."""

    code: str
    message: str


PlaybackEvent = Mark | Started | Cleared | Drained | PlaybackError | ConnectionLost | Reconnected


@dataclass
class _PendingMark:
    name: str
    position_ms: float | None
    epoch: int
    future: asyncio.Future[Mark]


class Playback:
    """A stream: `async with client.playback() as pb: await pb.write(pcm)`; queued audio plays out after the block.

    A connection that ends other than by `close()` is reopened with the client's
    `ReconnectPolicy`: marks and clears waiting on it fail with `ConnectionLostError` at once,
    `on_event` gets `ConnectionLost`, audio written while it is down is dropped (a live voice
    is not worth replaying late), and `Reconnected` reports what was lost. Positions
    (`written_ms`, `heard_ms`, mark positions) start again from 0 on the new connection, as after
    a clear.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        params: dict[str, Any],
        on_event: Callable[[PlaybackEvent], object] | None = None,
        policy: ReconnectPolicy | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._params = params
        self._on_event = on_event
        self._policy = policy or ReconnectPolicy(max_attempts=0)
        width = _BYTES_PER_SAMPLE.get(str(params.get("format", "s16le")))
        self._frame_bytes = width * int(params.get("channels", 1)) if width else None
        self._rate = int(params.get("rate", 24000))
        self._socket: Connection | None = None
        self._runner: asyncio.Task[None] | None = None
        self._outgoing: asyncio.Queue[tuple[bytes | str, asyncio.Future[bool] | None]] = asyncio.Queue()
        self._marks: collections.deque[_PendingMark] = collections.deque()
        # This socket's clears not answered yet, oldest first: the epoch each starts, its id, who waits.
        self._clears: collections.deque[tuple[int, str, asyncio.Future[Cleared]]] = collections.deque()
        self._names = itertools.count()
        # Clear ids unique to this object, so a `cleared` of another client's on the stream is not taken for ours.
        self._clear_prefix = f"audiogate.py:{secrets.token_hex(4)}:clear-"
        self._epoch = 0
        self._written_bytes = 0
        self._error: AudiogateError | None = None
        self._closed: AudiogateError | None = None
        self._closing = False
        self._sending = False
        # Nothing written since the stream last drained or was cleared: the server reads at once.
        self._idle = True
        self._paused = False
        self._down_since: float | None = None
        self._unheard_ms = 0.0
        self._dropped_bytes = 0
        self.heard_ms: float = 0.0
        """Position of the last heard mark (ms since the last clear): how far the listener got."""

    @property
    def stream(self) -> str:
        """The stream's name."""
        return str(self._params.get("stream", "default"))

    @property
    def connected(self) -> bool:
        """Whether the socket is open (False while reconnecting or after close)."""
        return self._socket is not None and self._down_since is None and self._closed is None

    @property
    def paused(self) -> bool:
        """Whether `pause()` holds the stream."""
        return self._paused

    @property
    def written_ms(self) -> float | None:
        """Milliseconds of audio written since the last clear (None for compressed audio)."""
        if self._frame_bytes is None:
            return None
        return 1000 * (self._written_bytes // self._frame_bytes) / self._rate

    async def open(self) -> Playback:
        """Connects (also done by `async with`); the first connection is not retried."""
        if self._closed is not None:
            raise self._closed
        if self._runner is None:
            socket = await self._connect()
            self._socket = socket
            self._runner = asyncio.ensure_future(self._run(socket))
        return self

    async def _connect(self) -> Connection:
        return await self._endpoint.connect("/v1/playback", self._params)

    async def close(self) -> None:
        """Closes the socket; queued audio still plays."""
        runner = self._runner
        if runner is None or self._closing:
            return
        self._closing = True
        socket = self._socket
        if socket is not None and self._closed is None and self._down_since is None:
            # Marks and clears still queued go out first; a stream the server stopped reading
            # (full) gets two seconds to take them.
            sent: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            sent.add_done_callback(_consume)
            self._outgoing.put_nowait((b"", sent))
            await asyncio.wait([sent], timeout=2)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(socket.close(), 3)
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
        self._fail(AudiogateError("closed", "the playback was closed"))

    async def __aenter__(self) -> Playback:
        return await self.open()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    async def write(self, data: bytes | bytearray | memoryview) -> None:
        """Queues audio (PCM in the stream's format, or pieces of a compressed file); waits while the stream is full.

        While the connection is down the audio is dropped (and counted in `Reconnected.lost_ms`).
        """
        # Pacing is the server's: with `--playback-queue-seconds` queued it stops reading, the
        # socket's send blocks, and so does this write, without any sleeping here.
        data = bytes(data)
        if not data:
            return
        self._check()
        if self._down_since is not None:
            self._dropped_bytes += len(data)
            return
        self._written_bytes += len(data)
        self._idle = False
        for offset in range(0, len(data), _PIECE):
            done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            self._outgoing.put_nowait((data[offset : offset + _PIECE], done))
            if not await done:
                return  # the connection ended under it: counted as not heard

    def mark(self, name: str | None = None) -> asyncio.Future[Mark]:
        """Marks what was written so far: a future of its Mark once heard or cleared.

        It fails with ConnectionLostError when the connection ends first (or is down), with the
        closing error when the playback is closed.
        """
        self._check()
        future: asyncio.Future[Mark] = asyncio.get_running_loop().create_future()
        # Read the outcome even when nobody awaits it, so a dropped connection is not logged.
        future.add_done_callback(_consume)
        if self._down_since is not None:
            future.set_exception(ConnectionLostError("the connection is down: reconnecting"))
            return future
        name = name if name is not None else f"mark-{next(self._names)}"
        mark = _PendingMark(name, self.written_ms, self._epoch, future)
        self._marks.append(mark)
        self._outgoing.put_nowait((json.dumps({"type": "mark", "name": mark.name}), None))
        return future

    async def clear(self, timeout: float | None = 1.0) -> Cleared:
        """Flushes the stream now (barge-in); answers what was played and what was thrown away.

        `clear_nowait()` awaited: see there for the timeout.
        """
        return await self.clear_nowait(timeout)

    def clear_nowait(self, timeout: float | None = 1.0) -> asyncio.Future[Cleared]:
        """Queues a clear at once and returns a future of its answer (what was played and thrown away).

        The clear goes out in order with what was sent before, and before anything sent after this
        call (a `mark()` or `resume()` right after it reaches the server after it). When no answer comes
        within `timeout` seconds (the server stopped reading a full stream and audio sent
        earlier waits in the socket), the stream is flushed over HTTP (`DELETE
        /v1/playback?stream=`) and that answer given; the socket's clear still flushes what was
        sent before it once the server reaches it. Fails with ConnectionLostError while the
        connection is down.
        """
        self._check()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Cleared] = loop.create_future()
        future.add_done_callback(_consume)
        if self._down_since is not None:
            future.set_exception(ConnectionLostError("the connection is down: reconnecting"))
            return future
        self._epoch += 1
        self._written_bytes = 0
        self.heard_ms = 0.0
        clear_id = f"{self._clear_prefix}{next(self._names)}"
        self._clears.append((self._epoch, clear_id, future))
        self._outgoing.put_nowait((json.dumps({"type": "clear", "id": clear_id}), None))
        if timeout is None:
            return future
        answer = asyncio.ensure_future(self._answer(future, timeout))
        answer.add_done_callback(_consume)
        return answer

    async def _answer(self, future: asyncio.Future[Cleared], timeout: float) -> Cleared:
        done, _ = await asyncio.wait([future], timeout=timeout)
        if done:
            return future.result()
        # The DELETE's `cleared` (no id) reaches this socket as one from elsewhere; the socket's own
        # still answers its entry later.
        _, answer = await self._endpoint.request("DELETE", "/v1/playback", {"stream": self.stream}, timeout=timeout)
        fields = json.loads(answer)
        return Cleared(int(fields["played_ms"]), int(fields["flushed_ms"]))

    def pause(self) -> None:
        """Holds the stream where it is (the server's `pause`): nothing of it plays, its queue is kept."""
        self._check()
        self._paused = True
        if self._down_since is None:
            self._outgoing.put_nowait((json.dumps({"type": "pause"}), None))

    def resume(self) -> None:
        """Plays the stream on from where `pause()` held it."""
        self._check()
        self._paused = False
        if self._down_since is None:
            self._outgoing.put_nowait((json.dumps({"type": "resume"}), None))

    async def drained(self) -> None:
        """Returns once everything written so far was heard (or cleared); raises if the connection ends."""
        await self.mark()

    def _check(self) -> None:
        if self._closed is not None:
            raise self._closed
        if self._runner is None:
            raise AudiogateError("not_open", "the playback is not open")
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    # ---- the connection's life

    async def _run(self, socket: Connection) -> None:
        while True:
            error = await self._serve(socket)
            if error is None or self._closing:
                return
            if self._policy.max_attempts == 0 or not retryable(error):
                self._emit(ConnectionLost(error, final=True))
                self._fail(error)
                return
            self._lose(error)
            reopened = await self._reopen(error)
            if reopened is None:
                return
            socket = reopened

    async def _serve(self, socket: Connection) -> AudiogateError | None:
        """Runs one connection until it ends: the error that ended it, None when closed by us."""
        self._socket = socket
        policy = self._policy
        sender = asyncio.ensure_future(self._send_loop(socket))
        beat = asyncio.ensure_future(heartbeat(socket, policy.ping_interval, policy.ping_timeout, self._may_ping))
        try:
            return await self._receive_loop(socket)
        finally:
            sender.cancel()
            beat.cancel()
            await asyncio.gather(sender, beat, return_exceptions=True)

    def _may_ping(self) -> bool:
        # A full stream is not read, pongs included: ping only when the server reads at once.
        return self._idle and not self._sending

    async def _reopen(self, error: AudiogateError) -> Connection | None:
        last, attempts = error, 0
        for delay in self._policy.delays():
            await asyncio.sleep(delay)
            attempts += 1
            try:
                socket = await self._connect()
            except AudiogateError as failure:
                last = failure
                if not retryable(failure):
                    break
                continue
            self._restored(socket, attempts)
            return socket
        self._emit(ConnectionLost(last, final=True))
        self._fail(last)
        return None

    def _lose(self, error: AudiogateError) -> None:
        """The connection ended and a reconnect follows: every waiter learns it now."""
        self._socket = None
        self._down_since = time.monotonic()
        self._unheard_ms = max(0.0, (self.written_ms or 0.0) - self.heard_ms)
        self._end_waiters(error, finished=False)
        self._emit(ConnectionLost(error))

    def _restored(self, socket: Connection, attempts: int) -> None:
        down_since = self._down_since or time.monotonic()
        dropped_ms = 1000 * (self._dropped_bytes // self._frame_bytes) / self._rate if self._frame_bytes else 0.0
        lost_ms = self._unheard_ms + dropped_ms if self._frame_bytes else None
        self._socket = socket
        self._down_since = None
        self._dropped_bytes = 0
        self._unheard_ms = 0.0
        # A new connection (maybe a new server): positions count from 0, as after a clear.
        self._epoch += 1
        self._written_bytes = 0
        self.heard_ms = 0.0
        self._idle = True
        if self._paused:
            self._outgoing.put_nowait((json.dumps({"type": "pause"}), None))
        self._emit(Reconnected(lost_ms, 1000 * (time.monotonic() - down_since), attempts))

    async def _send_loop(self, socket: Connection) -> None:
        while True:
            payload, done = await self._outgoing.get()
            self._sending = True
            try:
                if payload:
                    await socket.send(payload)
            except websockets.exceptions.ConnectionClosed:
                # The receive loop sees the same end and handles it.
                if done is not None and not done.done():
                    done.set_result(False)
                return
            finally:
                self._sending = False
            if done is not None and not done.done():
                done.set_result(True)

    async def _receive_loop(self, socket: Connection) -> AudiogateError | None:
        try:
            async for raw in socket:
                if isinstance(raw, str):
                    message = json.loads(raw)
                    if isinstance(message, dict):
                        self._handle(message)
        except websockets.exceptions.ConnectionClosed as error:
            return closed_error(error)
        if self._closing:
            return None
        code, reason = socket.close_code, socket.close_reason
        detail = f" ({code} {reason})".replace(" )", ")") if code is not None else ""
        return ConnectionLostError(f"the server closed the connection{detail}", code)

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
            clear_id = message.get("id")
            event = Cleared(
                int(message.get("played_ms", 0)), int(message.get("flushed_ms", 0)),
                clear_id if isinstance(clear_id, str) else None,
            )
            # Marks written before our oldest unanswered clear were at the server and are dropped,
            # by it (our own `cleared`, known by its id) or by one from elsewhere (another socket,
            # DELETE); marks written after it are still on their way and stay.
            epoch = self._clears[0][0] if self._clears else self._epoch + 1
            for pending in [m for m in self._marks if m.epoch < epoch]:
                self._marks.remove(pending)
                if not pending.future.done():
                    pending.future.set_result(Mark(pending.name, False, pending.position_ms))
            if self._clears and self._clears[0][1] == event.id:
                _, _, future = self._clears.popleft()
                if not future.done():
                    future.set_result(event)
            self._idle = True
        elif kind == "started":
            event = Started()
        elif kind == "drained":
            event = Drained()
            self._idle = True
        elif kind == "error":
            event = PlaybackError(str(message.get("code", "error")), str(message.get("message", "")))
            if self._on_event is None:
                self._error = AudiogateError(event.code, event.message)
        else:
            return
        self._emit(event)

    def _emit(self, event: PlaybackEvent) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception as error:  # the caller's bug must not stop the stream's bookkeeping
            asyncio.get_running_loop().call_exception_handler(
                {"message": "audiogate: the playback's on_event callback raised", "exception": error}
            )

    def _end_waiters(self, error: AudiogateError, finished: bool) -> None:
        """Fails every mark and clear waiting on the connection; queued messages are dropped
        (their writers told: an error when `finished`, else False: dropped)."""
        while self._marks:
            pending = self._marks.popleft()
            if not pending.future.done():
                pending.future.set_exception(error)
        while self._clears:
            _, _, future = self._clears.popleft()
            if not future.done():
                future.set_exception(error)
        while not self._outgoing.empty():
            _, done = self._outgoing.get_nowait()
            if done is not None and not done.done():
                if finished:
                    done.set_exception(error)
                else:
                    done.set_result(False)

    def _fail(self, error: AudiogateError) -> None:
        """Ends every waiter for good: the playback is closed or cannot reconnect."""
        if self._closed is None:
            self._closed = error
        self._socket = None
        self._end_waiters(error, finished=True)


def _consume(future: asyncio.Future[Any]) -> None:
    """Reads a future's outcome so an unawaited failure is not logged as never retrieved."""
    if not future.cancelled():
        future.exception()
