"""The entry point: `Client(url, token)` opens captures and playbacks and calls the HTTP API."""
from __future__ import annotations

import json
import pathlib
from collections.abc import Callable
from typing import Any, Literal, cast

from ._transport import UNSET, Endpoint, _Unset
from .capture import Capture
from .connection import ReconnectPolicy, policy_of
from .playback import Cleared, Playback, PlaybackEvent

#: The sample rates the server takes for capture and playback (any other is answered 400).
RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000)
#: What a capture delivers: PCM, or G.711 (`mulaw`, `alaw`: 8 kHz mono, a byte a sample).
CaptureFormat = Literal["s16le", "f32le", "mulaw", "alaw"]
#: What a playback takes: those, or a compressed file's container.
PlaybackFormat = Literal["s16le", "f32le", "mulaw", "alaw", "mp3", "ogg", "flac", "webm"]
#: A playback stream's role: music is lowered while a voice is heard.
Role = Literal["voice", "music"]


class Client:
    """An audiogate server at `url` (http://, https://, ws:// or wss://), with its `--token` if it has one.

    `reconnect`: how captures and playbacks reopen a lost connection (a `ReconnectPolicy`; True for
    the default one, False for none). `timeout`: seconds an HTTP call or a WebSocket handshake may
    take (None: no limit); calls with `wait=True` have no limit unless given one.
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:8750",
        token: str | None = None,
        *,
        reconnect: ReconnectPolicy | bool = True,
        timeout: float | None = 10.0,
    ) -> None:
        self._endpoint = Endpoint(url, token, timeout)
        self._policy = policy_of(reconnect, ReconnectPolicy())

    @property
    def reconnect(self) -> ReconnectPolicy:
        """The reconnect policy of this client's captures and playbacks."""
        return self._policy

    # ---- WebSockets

    def capture(
        self,
        rate: int = 16000,
        channels: int = 1,
        format: CaptureFormat = "s16le",
        chunk_ms: int = 20,
        *,
        aec: bool | None = None,
        ns: bool | None = None,
        agc: bool | None = None,
        vad: bool | None = None,
        levels: bool | None = None,
        music: bool | None = None,
        reconnect: ReconnectPolicy | bool | None = None,
    ) -> Capture:
        """Live microphone audio (`WS /v1/capture`): `rate` one of `RATES`, `channels` 1 or 2, `chunk_ms`
        10-200; `aec`, `ns`, `agc` the voice processing (None: the server's default), `vad` speech
        events, `levels` level events, `music` what the Sendspin player plays (`MusicEvent`)."""
        query: dict[str, object] = dict(rate=rate, channels=channels, format=format, chunk_ms=chunk_ms)
        query.update(aec=aec, ns=ns, agc=agc, vad=vad, levels=levels, music=music)
        return Capture(self._endpoint, query, policy_of(reconnect, self._policy))

    def playback(
        self,
        rate: int = 24000,
        channels: int = 1,
        format: PlaybackFormat = "s16le",
        stream: str = "default",
        on_event: Callable[[PlaybackEvent], object] | None = None,
        *,
        role: Role | None = None,
        reconnect: ReconnectPolicy | bool | None = None,
    ) -> Playback:
        """A playback stream (`WS /v1/playback`): `rate` one of `RATES`, `channels` 1 or 2, `role` "voice"
        (the default) or "music" (lowered while a voice is heard). `on_event` gets Mark, Started, Cleared,
        Drained, PlaybackError, ConnectionLost, Reconnected."""
        query = dict(rate=rate, channels=channels, format=format, stream=stream, role=role)
        return Playback(self._endpoint, query, on_event, policy_of(reconnect, self._policy))

    # ---- HTTP

    async def _json(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None = None,
        body: Any = None,
        timeout: float | _Unset | None = UNSET,
    ) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        _, answer = await self._endpoint.request(
            method, path, query, data, "application/json" if data is not None else None, timeout
        )
        return cast(dict[str, Any], json.loads(answer)) if answer else {}

    async def info(self) -> dict[str, Any]:
        """`GET /v1/info`: version, devices and their hardware formats, limits."""
        return await self._json("GET", "/v1/info")

    async def status(self) -> dict[str, Any]:
        """`GET /v1/status`: capture and playback state, clients, counters."""
        return await self._json("GET", "/v1/status")

    async def devices(self) -> list[dict[str, Any]]:
        """`GET /v1/devices`: the ALSA PCMs."""
        return cast(list[dict[str, Any]], (await self._json("GET", "/v1/devices"))["devices"])

    async def voices(self) -> list[dict[str, Any]]:
        """`GET /v1/voices`: the system voices `say` can use."""
        return cast(list[dict[str, Any]], (await self._json("GET", "/v1/voices"))["voices"])

    async def say(
        self,
        text: str,
        voice: str | None = None,
        rate: float | None = None,
        stream: str | None = None,
        wait: bool = False,
        timeout: float | _Unset | None = UNSET,
    ) -> dict[str, Any]:
        """Speaks `text` with the system voice; with `wait` returns once it was heard."""
        fields = dict(text=text, voice=voice, rate=rate, stream=stream)
        body = {key: value for key, value in fields.items() if value is not None}
        return await self._json("POST", "/v1/say", {"wait": wait or None}, body, _limit(timeout, wait))

    async def play(
        self,
        audio: bytes,
        content_type: str | None = None,
        stream: str | None = None,
        wait: bool = False,
        timeout: float | _Unset | None = UNSET,
        *,
        rate: int | None = None,
        channels: int | None = None,
        format: PlaybackFormat | None = None,
        role: Role | None = None,
    ) -> dict[str, Any]:
        """`POST /v1/playback`: a WAV or compressed file, or raw PCM described by rate/channels/format."""
        query = dict(stream=stream, wait=wait or None, rate=rate, channels=channels, format=format, role=role)
        _, answer = await self._endpoint.request(
            "POST", "/v1/playback", query, audio, content_type, _limit(timeout, wait)
        )
        return cast(dict[str, Any], json.loads(answer))

    async def flush(self, stream: str | None = None) -> Cleared:
        """`DELETE /v1/playback`: flushes one stream or all of them (barge-in)."""
        answer = await self._json("DELETE", "/v1/playback", {"stream": stream})
        return Cleared(int(answer["played_ms"]), int(answer["flushed_ms"]))

    async def volume(self) -> dict[str, Any]:
        """`GET /v1/volume`: `{"playback": 0.0..1.0, "muted": bool}`."""
        return await self._json("GET", "/v1/volume")

    async def set_volume(self, playback: float | None = None, muted: bool | None = None) -> dict[str, Any]:
        """`PUT /v1/volume`; a field left None keeps its value."""
        body = {key: value for key, value in dict(playback=playback, muted=muted).items() if value is not None}
        return await self._json("PUT", "/v1/volume", body=body)

    # ---- music

    async def now_playing(self) -> dict[str, Any] | None:
        """What the Sendspin server says is playing (title, artist, album, progress_ms, ...), from
        `GET /v1/status`; None when the player is off or the server said nothing."""
        sendspin = (await self.status()).get("sendspin") or {}
        return cast("dict[str, Any] | None", sendspin.get("metadata"))

    async def sendspin_command(
        self, command: str, *, volume: int | None = None, mute: bool | None = None,
        position_ms: int | None = None, offset_ms: int | None = None,
    ) -> dict[str, Any]:
        """`POST /v1/sendspin/command`: `next`, `previous`, `play`, `pause`, `stop`, `volume` (0-100),
        `mute`, ... for the Sendspin server's music. A command the server does not take now raises
        `AudiogateHTTPError` with `code == "conflict"` (HTTP 409)."""
        body: dict[str, Any] = {"command": command}
        for key, value in dict(volume=volume, mute=mute, position_ms=position_ms, offset_ms=offset_ms).items():
            if value is not None:
                body[key] = value
        return await self._json("POST", "/v1/sendspin/command", body=body)

    # ---- recordings

    async def start_recording(self, **fields: Any) -> dict[str, Any]:
        """`POST /v1/recordings` (rate, channels, format, segment_seconds, max_seconds, name, aec, ns, agc, codec,
        bitrate)."""
        return await self._json("POST", "/v1/recordings", body=fields)

    async def stop_recording(self, recording_id: str) -> dict[str, Any]:
        """Stops a recording; answers its final state."""
        return await self._json("POST", f"/v1/recordings/{_id(recording_id)}/stop")

    async def recordings(self) -> list[dict[str, Any]]:
        """Every recording, oldest first (without segment lists)."""
        return cast(list[dict[str, Any]], (await self._json("GET", "/v1/recordings"))["recordings"])

    async def recording(self, recording_id: str) -> dict[str, Any]:
        """One recording with its segments and gaps."""
        return await self._json("GET", f"/v1/recordings/{_id(recording_id)}")

    async def delete_recording(self, recording_id: str) -> None:
        """Removes a recording and its files (stopping it first if it runs)."""
        await self._endpoint.request("DELETE", f"/v1/recordings/{_id(recording_id)}")

    async def download_segment(self, recording_id: str, index: int) -> bytes:
        """One segment as a WAV file (a running segment: the frames written so far)."""
        _, answer = await self._endpoint.request("GET", f"/v1/recordings/{_id(recording_id)}/segments/{int(index)}.wav")
        return answer

    async def download_recording(self, recording_id: str, directory: str | pathlib.Path) -> list[pathlib.Path]:
        """Saves every segment into `directory` as `<id>-<n>.wav`; returns the files in order."""
        folder = pathlib.Path(directory)
        # A folder and a few WAV files on a local disk: brief, and the caller's own to place.
        folder.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240
        files = []
        for segment in (await self.recording(recording_id)).get("segments", []):
            path = folder / f"{recording_id}-{int(segment['index']):05d}.wav"
            path.write_bytes(await self.download_segment(recording_id, int(segment["index"])))
            files.append(path)
        return files


def _limit(timeout: float | _Unset | None, wait: bool) -> float | _Unset | None:
    """A call that waits until its audio was heard takes as long as the audio: no limit unless given."""
    return None if wait and timeout is UNSET else timeout


def _id(recording_id: str) -> str:
    # Ids are 1-64 of 0-9, a-z and '-' on the server; refuse anything that could change the path.
    if not recording_id or any(c not in "0123456789abcdefghijklmnopqrstuvwxyz-" for c in recording_id):
        raise ValueError(f"not a recording id: {recording_id!r}")
    return recording_id
