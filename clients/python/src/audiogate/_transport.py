"""URLs, HTTP requests and WebSocket connections (any `websockets` >= 12), with keepalive."""
from __future__ import annotations

import asyncio
import contextlib
import enum
import socket
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import websockets

from . import _http
from ._version import __version__
from .errors import (
    AudiogateError,
    AudiogateHTTPError,
    AudiogateTimeoutError,
    ConnectionLostError,
    UnreachableError,
)

__all__ = ["UNSET", "Connection", "Endpoint", "closed_error", "heartbeat"]

# What the server answers a refused upgrade with, by status (its JSON body says the same).
_UPGRADE_CODES = {
    400: "bad_parameter",
    401: "unauthorized",
    403: "forbidden_origin",
    421: "misdirected_request",
    429: "too_many_requests",
    503: "unavailable",
}
_HTTP = {"http": "http", "https": "https", "ws": "http", "wss": "https"}
_WS = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}
_USER_AGENT = f"audiogate-python/{__version__}"

try:  # websockets >= 13: the asyncio implementation (the default one from 14 on)
    from websockets.asyncio.client import ClientConnection as Connection
    from websockets.asyncio.client import connect as _connect

    _HEADERS_ARGUMENT = "additional_headers"
    _LegacyStatus: type[Exception] = type("_NeverRaised", (Exception,), {})
except ImportError:  # websockets 12
    from websockets.legacy.client import WebSocketClientProtocol as Connection  # type: ignore[assignment]
    from websockets.legacy.client import connect as _connect  # type: ignore[assignment]

    _HEADERS_ARGUMENT = "extra_headers"
    _LegacyStatus = websockets.exceptions.InvalidStatusCode  # type: ignore[attr-defined]


class _Unset(enum.Enum):
    UNSET = 0


#: "the endpoint's own timeout" for `Endpoint.request`
UNSET = _Unset.UNSET


class Endpoint:
    """The server's base address (http, https, ws or wss, with or without a path prefix), token and HTTP timeout."""

    def __init__(self, url: str, token: str | None, timeout: float | None = 10.0) -> None:
        if "://" not in url:
            url = "http://" + url
        parts = urllib.parse.urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _HTTP or not parts.netloc:
            raise ValueError(f"the server URL must be http://, https://, ws:// or wss:// and a host, not {url!r}")
        self._scheme = scheme
        self._netloc = parts.netloc
        self._prefix = parts.path.rstrip("/")
        self.token = token
        self.timeout = timeout

    def url(self, path: str, query: Mapping[str, Any] | None = None, websocket: bool = False) -> str:
        """`path` under the base, with `query` (None values left out, booleans as true/false)."""
        scheme = (_WS if websocket else _HTTP)[self._scheme]
        items = {key: _query_value(value) for key, value in (query or {}).items() if value is not None}
        return urllib.parse.urlunsplit(
            (scheme, self._netloc, self._prefix + path, urllib.parse.urlencode(items), "")
        )

    def headers(self) -> dict[str, str]:
        headers = {"User-Agent": _USER_AGENT}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    async def request(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        timeout: float | _Unset | None = UNSET,
    ) -> tuple[int, bytes]:
        """One HTTP request; a non-2xx answer raises AudiogateHTTPError. `timeout` defaults to the endpoint's."""
        headers = self.headers()
        if content_type is not None:
            headers["Content-Type"] = content_type
        limit = self.timeout if timeout is UNSET else timeout
        status, answer = await _http.request(method, self.url(path, query), headers, body, limit)
        if not 200 <= status < 300:
            raise AudiogateError.from_body(status, answer)
        return status, answer

    async def connect(self, path: str, query: Mapping[str, Any], **options: Any) -> Connection:
        """A WebSocket to `path`; a refused upgrade raises AudiogateHTTPError with the server's code."""
        options[_HEADERS_ARGUMENT] = self.headers()
        # Keepalive is the caller's (`heartbeat`): a playback stream that is full reads no pong.
        options.setdefault("ping_interval", None)
        options.setdefault("ping_timeout", None)
        options.setdefault("open_timeout", self.timeout)
        options.setdefault("close_timeout", 2)
        try:
            connection = await _connect(self.url(path, query, websocket=True), **options)
        except websockets.exceptions.InvalidStatus as error:
            response = error.response
            body = bytes(response.body or b"")
            raise AudiogateError.from_body(response.status_code, body, response.reason_phrase) from None
        except _LegacyStatus as error:
            # websockets 12 drops the refusal's body: the code follows from the status alone.
            status = int(getattr(error, "status_code", 0))
            code = _UPGRADE_CODES.get(status, "http_error")
            raise AudiogateHTTPError(code, f"the WebSocket upgrade was refused (HTTP {status})", status) from None
        except asyncio.TimeoutError:
            limit = self.timeout
            raise AudiogateTimeoutError(f"the WebSocket handshake to {path} took longer than {limit} s") from None
        except (OSError, websockets.exceptions.InvalidHandshake) as error:
            raise UnreachableError(f"cannot reach audiogate: {error or type(error).__name__}") from error
        _tune(connection)
        return connection


def _tune(connection: Connection) -> None:
    """TCP keepalive: a peer that vanished is found while the socket is quiet, pings or not.

    No TCP_USER_TIMEOUT: Linux counts a zero window against it, and a full (or paused) playback
    stream keeps its window shut for as long as it is full, answering every probe.
    """
    transport = getattr(connection, "transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 5)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 2)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)


async def heartbeat(connection: Connection, interval: float, timeout: float, may_ping: Callable[[], bool]) -> None:
    """Pings every `interval` s while `may_ping()`; a pong missing after `timeout` s aborts the connection
    (its reader then sees it end). Runs until cancelled or the connection closes."""
    if interval <= 0:
        return
    while True:
        await asyncio.sleep(interval)
        if not may_ping():
            continue
        try:
            pong = await connection.ping()
        except websockets.exceptions.ConnectionClosed:
            return
        done, _ = await asyncio.wait([asyncio.ensure_future(pong)], timeout=timeout)
        if not done:
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.abort()
            return


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def closed_error(error: websockets.exceptions.ConnectionClosed) -> ConnectionLostError:
    """The error for a WebSocket that closed while an answer was awaited."""
    frame = error.rcvd
    reason = f" ({frame.code} {frame.reason})".replace(" )", ")") if frame is not None else ""
    return ConnectionLostError(f"the server closed the connection{reason}", frame.code if frame is not None else None)
