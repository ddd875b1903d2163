"""The exceptions the client raises: `AudiogateError` and its subclasses.

    AudiogateError                      every error of this package (`code`, `message`, `status`)
    ├── AudiogateConnectionError        also a builtin ConnectionError
    │   ├── UnreachableError            no connection could be made (`code` "unreachable")
    │   └── ConnectionLostError         an open connection ended (`code` "connection_closed")
    ├── AudiogateTimeoutError           also a builtin TimeoutError: no answer in time (`code` "timeout")
    ├── AudiogateHTTPError              the server refused a request: its HTTP `status` and `code`
    └── ProtocolError                   the server sent something this client does not understand
"""
from __future__ import annotations

import json
from typing import Any


class AudiogateError(Exception):
    """An error of the audiogate client: the server's snake_case `code` and `message`, and the HTTP `status` if any."""

    default_code = "error"

    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(f"{code}: {message}" if status is None else f"HTTP {status} {code}: {message}")
        #: snake_case code from the server (`unauthorized`, `bad_parameter`, ...), or `unreachable`,
        #: `connection_closed`, `timeout` when no answer came.
        self.code = code
        self.message = message
        #: the HTTP status of the answer, None when the error came over a WebSocket or the network.
        self.status = status

    @classmethod
    def from_body(cls, status: int, body: bytes, reason: str = "") -> AudiogateHTTPError:
        """The error a non-2xx answer carries, falling back to its status when it is not JSON."""
        try:
            error: Any = json.loads(body)["error"]
            return AudiogateHTTPError(str(error["code"]), str(error["message"]), status)
        except (ValueError, KeyError, TypeError):
            text = body.decode(errors="replace").strip() if body else ""
            return AudiogateHTTPError("http_error", text or reason or "no message", status)


class AudiogateConnectionError(AudiogateError, ConnectionError):
    """The server could not be reached, or the connection to it ended."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)


class UnreachableError(AudiogateConnectionError):
    """No connection to the server could be made (refused, no route, name not resolved, TLS failure)."""

    def __init__(self, message: str) -> None:
        super().__init__("unreachable", message)


class ConnectionLostError(AudiogateConnectionError):
    """A connection that was open ended (the server closed it, restarted, or stopped answering pings)."""

    def __init__(self, message: str, close_code: int | None = None) -> None:
        super().__init__("connection_closed", message)
        #: the WebSocket close code, None when the connection ended without a close frame.
        self.close_code = close_code


class AudiogateTimeoutError(AudiogateError, TimeoutError):
    """No answer came in time (an HTTP call, a clear, a WebSocket handshake)."""

    def __init__(self, message: str) -> None:
        super().__init__("timeout", message)


class AudiogateHTTPError(AudiogateError):
    """The server refused a request or a WebSocket upgrade: its HTTP `status` and error `code`."""

    status: int

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(code, message, status)


class ProtocolError(AudiogateError):
    """The server sent something this client does not understand, or an error message on a WebSocket."""


def retryable(error: BaseException) -> bool:
    """Whether a reconnect may succeed later: the server was unreachable, went away, or was busy."""
    if isinstance(error, (AudiogateConnectionError, AudiogateTimeoutError)):
        return True
    return isinstance(error, AudiogateHTTPError) and error.status in (429, 502, 503, 504)
