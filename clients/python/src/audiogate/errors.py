"""The one exception type the client raises."""
from __future__ import annotations

from typing import Any


class AudiogateError(Exception):
    """The server refused a request (its JSON error code and message) or could not be reached."""

    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(f"{code}: {message}" if status is None else f"HTTP {status} {code}: {message}")
        #: snake_case code from the server (`unauthorized`, `bad_parameter`, ...), or
        #: `unreachable` / `connection_closed` when no answer came.
        self.code = code
        self.message = message
        #: the HTTP status of the answer, None when the error came over a WebSocket or the network.
        self.status = status

    @classmethod
    def from_body(cls, status: int, body: bytes, reason: str = "") -> AudiogateError:
        """The error a non-2xx answer carries, falling back to its status when it is not JSON."""
        import json

        try:
            error: Any = json.loads(body)["error"]
            return cls(str(error["code"]), str(error["message"]), status)
        except (ValueError, KeyError, TypeError):
            text = body.decode(errors="replace").strip() if body else ""
            return cls("http_error", text or reason or "no message", status)
