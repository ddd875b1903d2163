"""Async Python client for audiogate, the local audio gateway.

    import audiogate

    client = audiogate.Client("http://127.0.0.1:8750", token=None)
    async with client.capture(rate=16000, vad=True) as cap:
        async for item in cap:
            if isinstance(item, audiogate.AudioChunk): ...
"""
from .capture import (
    AudioChunk,
    Capture,
    CaptureEvent,
    CaptureItem,
    CaptureStart,
    DeviceEvent,
    LevelEvent,
    OverrunEvent,
    VadEvent,
)
from .client import Client
from .errors import AudiogateError
from .playback import Cleared, Drained, Mark, Playback, PlaybackError, PlaybackEvent

__version__ = "0.1.0"

__all__ = [
    "AudioChunk",
    "AudiogateError",
    "Capture",
    "CaptureEvent",
    "CaptureItem",
    "CaptureStart",
    "Cleared",
    "Client",
    "DeviceEvent",
    "Drained",
    "LevelEvent",
    "Mark",
    "OverrunEvent",
    "Playback",
    "PlaybackError",
    "PlaybackEvent",
    "VadEvent",
]
