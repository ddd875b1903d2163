"""Async Python client for audiogate, the local audio gateway.

    import audiogate

    client = audiogate.Client("http://127.0.0.1:8750", token=None)
    async with client.capture(rate=16000, vad=True) as cap:
        async for item in cap:
            if isinstance(item, audiogate.AudioChunk): ...
"""
from ._version import __version__
from .capture import (
    AudioChunk,
    Capture,
    CaptureEvent,
    CaptureItem,
    CaptureStart,
    DeviceEvent,
    LevelEvent,
    MusicEvent,
    OverrunEvent,
    VadEvent,
)
from .client import RATES, CaptureFormat, Client, PlaybackFormat, Role
from .connection import ConnectionLost, Reconnected, ReconnectPolicy
from .errors import (
    AudiogateConnectionError,
    AudiogateError,
    AudiogateHTTPError,
    AudiogateTimeoutError,
    ConnectionLostError,
    ProtocolError,
    UnreachableError,
)
from .playback import Cleared, Drained, Mark, Playback, PlaybackError, PlaybackEvent, Started

__all__ = [
    "AudioChunk",
    "AudiogateConnectionError",
    "AudiogateError",
    "AudiogateHTTPError",
    "AudiogateTimeoutError",
    "Capture",
    "CaptureFormat",
    "CaptureEvent",
    "CaptureItem",
    "CaptureStart",
    "Cleared",
    "Client",
    "ConnectionLost",
    "ConnectionLostError",
    "DeviceEvent",
    "Drained",
    "LevelEvent",
    "MusicEvent",
    "Mark",
    "OverrunEvent",
    "Playback",
    "PlaybackError",
    "PlaybackEvent",
    "PlaybackFormat",
    "ProtocolError",
    "RATES",
    "ReconnectPolicy",
    "Started",
    "Reconnected",
    "Role",
    "UnreachableError",
    "VadEvent",
    "__version__",
]
