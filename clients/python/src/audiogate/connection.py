"""The reconnect policy every WebSocket of the client follows, and the events that report it."""
from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import AudiogateError

__all__ = ["ConnectionLost", "ReconnectPolicy", "Reconnected"]


@dataclass(frozen=True)
class ReconnectPolicy:
    """How a lost WebSocket is reopened: exponential back-off with jitter, as `async for ws in connect()` does.

    The n-th attempt waits `min(max_delay, initial_delay * factor**n)`, scaled by a random factor
    in [1 - jitter, 1] so that many clients of one restarted server do not all knock at once.
    With `max_attempts` None the client retries until it is closed. Failures that cannot heal
    (a refused parameter, a wrong token) end it at once.
    """

    initial_delay: float = 0.1
    factor: float = 1.618
    max_delay: float = 2.0
    jitter: float = 0.5
    max_attempts: int | None = None
    #: pings (seconds apart) that find a half-open connection; one unanswered for `ping_timeout` ends it
    ping_interval: float = 5.0
    ping_timeout: float = 5.0

    def delays(self) -> Iterator[float]:
        """The waits before each attempt."""
        delay, attempt = self.initial_delay, 0
        while self.max_attempts is None or attempt < self.max_attempts:
            yield delay * (1 - self.jitter * random.random())
            delay = min(self.max_delay, delay * self.factor)
            attempt += 1


@dataclass(frozen=True)
class ConnectionLost:
    """The connection to the server ended; the client reconnects (a `Reconnected` follows) unless `final`."""

    error: AudiogateError
    #: no reconnect follows (reconnecting is off, or the error cannot heal)
    final: bool = False


@dataclass(frozen=True)
class Reconnected:
    """The connection is back after `down_ms`, at the `attempts`-th try.

    `lost_ms` is the audio lost with it: for a capture, the gap in the microphone's audio (from the
    capture timestamps on both sides, None when they are not known); for a playback, the audio
    written that was not yet heard when the connection ended plus what was written while it was
    down (at most what was dropped: a server that did not restart may still have played some).
    """

    lost_ms: float | None
    down_ms: float
    attempts: int


def policy_of(reconnect: ReconnectPolicy | bool | None, default: ReconnectPolicy) -> ReconnectPolicy:
    """A `reconnect=` argument as a policy: True the default one, False no reconnects (pings kept)."""
    if reconnect is None or reconnect is True:
        return default
    if reconnect is False:
        return ReconnectPolicy(
            max_attempts=0, ping_interval=default.ping_interval, ping_timeout=default.ping_timeout
        )
    return reconnect
