"""URLs, HTTP through the standard library, and WebSocket connections over any `websockets` >= 12."""
from __future__ import annotations

import asyncio
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Mapping

import websockets

from .errors import AudiogateError

__all__ = ["Connection", "Endpoint", "closed_error"]

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


class Endpoint:
    """The server's base address (http, https, ws or wss, with or without a path prefix) and token."""

    def __init__(self, url: str, token: str | None) -> None:
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

    def url(self, path: str, query: Mapping[str, Any] | None = None, websocket: bool = False) -> str:
        """`path` under the base, with `query` (None values left out, booleans as true/false)."""
        scheme = (_WS if websocket else _HTTP)[self._scheme]
        items = {key: _query_value(value) for key, value in (query or {}).items() if value is not None}
        return urllib.parse.urlunsplit(
            (scheme, self._netloc, self._prefix + path, urllib.parse.urlencode(items), "")
        )

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    async def request(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> tuple[int, bytes]:
        """One HTTP request (in a worker thread); a non-2xx answer raises AudiogateError."""
        headers = self.headers()
        if content_type is not None:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.url(path, query), data=body, method=method, headers=headers)
        return await asyncio.to_thread(_send, request)

    async def connect(self, path: str, query: Mapping[str, Any], **options: Any) -> Connection:
        """A WebSocket to `path`; a refused upgrade raises AudiogateError with the server's code."""
        options[_HEADERS_ARGUMENT] = self.headers()
        try:
            return await _connect(self.url(path, query, websocket=True), **options)
        except websockets.exceptions.InvalidStatus as error:
            response = error.response
            body = bytes(response.body or b"")
            raise AudiogateError.from_body(response.status_code, body, response.reason_phrase) from None
        except _LegacyStatus as error:
            # websockets 12 drops the refusal's body: the code follows from the status alone.
            status = int(getattr(error, "status_code", 0))
            code = _UPGRADE_CODES.get(status, "http_error")
            raise AudiogateError(code, f"the WebSocket upgrade was refused (HTTP {status})", status) from None
        except (OSError, asyncio.TimeoutError, websockets.exceptions.InvalidHandshake) as error:
            raise AudiogateError("unreachable", f"cannot reach audiogate: {error or type(error).__name__}") from error


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _send(request: urllib.request.Request) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        with error:
            raise AudiogateError.from_body(error.code, error.read(), str(error.reason)) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise AudiogateError("unreachable", f"cannot reach audiogate: {reason}") from error


def closed_error(error: websockets.exceptions.ConnectionClosed) -> AudiogateError:
    """The AudiogateError for a WebSocket that closed while an answer was awaited."""
    frame = error.rcvd
    reason = f" ({frame.code} {frame.reason})" if frame is not None else ""
    return AudiogateError("connection_closed", f"the server closed the connection{reason}")
