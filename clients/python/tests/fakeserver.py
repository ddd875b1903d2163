"""A fake audiogate server on a local socket: `WS /v1/capture`, `WS /v1/playback` and a few HTTP
routes, speaking the documented messages, with knobs to drop connections and stay silent."""
from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

RATE = 16000
CHUNK_MS = 20


@dataclass
class FakeServer:
    """One server; `url` once started. Capture chunks are numbered per connection from 0, stamped
    from `clock_ms` (which the test moves on to make a gap)."""

    #: chunks each capture connection sends before the server drops it (None: endless)
    capture_chunks: list[int | None] = field(default_factory=lambda: [None])
    #: the capture clock (ms) at the next chunk
    clock_ms: float = 1000.0
    #: what playback sockets received, per connection
    received: list[list[Any]] = field(default_factory=list)
    #: answer `mark` and `clear` (False: take them silently, as a server whose reading is stalled)
    answer: bool = True
    #: HTTP requests: (method, path)
    requests: list[tuple[str, str]] = field(default_factory=list)
    #: HTTP routes: path -> (status, JSON body); anything else is 404
    routes: dict[str, tuple[int, Any]] = field(default_factory=dict)
    connections: int = 0
    server: Server | None = None
    playback_sockets: list[ServerConnection] = field(default_factory=list)

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = next(iter(self.server.sockets)).getsockname()[:2]
        return f"http://{host}:{port}"

    async def start(self, port: int = 0) -> FakeServer:
        self.server = await serve(self._handle, "127.0.0.1", port, process_request=self._http)
        return self

    async def stop(self, code: int = 1001) -> None:
        """Closes every connection with `code` and stops listening."""
        if self.server is not None:
            for connection in list(self.server.connections):
                await connection.close(code)
            self.server.close()
            await self.server.wait_closed()

    def abort_all(self) -> None:
        """Drops every connection without a close frame (a killed server)."""
        assert self.server is not None
        for connection in list(self.server.connections):
            connection.transport.abort()

    def _http(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.headers.get("Upgrade", "").lower() == "websocket":
            if "rate=12345" in request.path:
                return _json(400, {"error": {"code": "bad_parameter", "message": "rate 12345 is not supported"}})
            return None
        method = "GET"  # websockets' parser takes GET only; other methods are tested on the stream server
        path = request.path.split("?")[0]
        self.requests.append((method, request.path))
        status, body = self.routes.get(path, (404, {"error": {"code": "not_found", "message": "no such route"}}))
        return _json(status, body)

    async def _handle(self, connection: ServerConnection) -> None:
        self.connections += 1
        path = connection.request.path if connection.request else ""
        if path.startswith("/v1/capture"):
            await self._capture(connection)
        elif path.startswith("/v1/playback"):
            await self._playback(connection)

    async def _capture(self, connection: ServerConnection) -> None:
        limit = self.capture_chunks.pop(0) if self.capture_chunks else None
        await connection.send(json.dumps(
            {"type": "start", "rate": RATE, "channels": 1, "format": "s16le", "chunk_ms": CHUNK_MS,
             "processing": {"aec": False}}))
        data = base64.b64encode(bytes(RATE * CHUNK_MS // 1000 * 2)).decode()
        seq = 0
        with contextlib.suppress(Exception):
            while limit is None or seq < limit:
                await connection.send(json.dumps(
                    {"type": "audio", "seq": seq, "timestamp_ms": self.clock_ms, "data": data}))
                self.clock_ms += CHUNK_MS
                seq += 1
                await asyncio.sleep(0.002)
            connection.transport.abort()

    async def _playback(self, connection: ServerConnection) -> None:
        messages: list[Any] = []
        self.received.append(messages)
        self.playback_sockets.append(connection)
        written = 0
        with contextlib.suppress(Exception):
            async for raw in connection:
                if isinstance(raw, bytes):
                    written += len(raw)
                    messages.append(len(raw))
                    continue
                message = json.loads(raw)
                messages.append(message)
                if not self.answer:
                    continue
                if message["type"] == "mark":
                    await connection.send(json.dumps({"type": "mark", "name": message["name"]}))
                elif message["type"] == "clear":
                    cleared = {"type": "cleared", "played_ms": 0, "flushed_ms": written // 48}
                    if "id" in message:
                        cleared["id"] = message["id"]
                    await connection.send(json.dumps(cleared))
                    written = 0


def _json(status: int, body: Any) -> Response:
    data = json.dumps(body).encode()
    headers = Headers([("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return Response(status, "OK" if status < 400 else "Error", headers, data)


class HTTPServer:
    """A bare HTTP/1.1 server on asyncio streams: answers `answers[(method, path)]` = (status, body,
    chunked), or stays silent for paths in `silent`."""

    def __init__(self) -> None:
        self.answers: dict[tuple[str, str], tuple[int, bytes, bool]] = {}
        self.silent: set[str] = set()
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def start(self) -> HTTPServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._handlers):
                task.cancel()
            await asyncio.gather(*self._handlers, return_exceptions=True)
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            method, target, _ = head[0].split(" ")
            fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
            body = await reader.readexactly(int(fields.get("content-length", "0")))
            path = target.split("?")[0]
            self.seen.append((method, target, fields, body))
            if path in self.silent:
                with contextlib.suppress(asyncio.CancelledError):
                    # Ended by stop(); a handler task left cancelled is logged by asyncio's streams.
                    await asyncio.sleep(3600)
                return
            status, answer, chunked = self.answers.get(
                (method, path), (404, b'{"error":{"code":"not_found","message":"no such route"}}', False))
            if chunked:
                half = len(answer) // 2
                payload = b"".join(
                    f"{len(part):x}\r\n".encode() + part + b"\r\n" for part in (answer[:half], answer[half:]) if part
                ) + b"0\r\n\r\n"
                headers = "Transfer-Encoding: chunked\r\n"
            else:
                payload, headers = answer, f"Content-Length: {len(answer)}\r\n"
            writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{headers}\r\n".encode() + payload)
            await writer.drain()
        finally:
            self._handlers.discard(task)
            writer.close()
