"""The exception hierarchy, the reconnect policy, URLs and the version, without a server."""
import pathlib

import pytest
import tomllib

import audiogate
from audiogate._transport import Endpoint
from audiogate.errors import retryable


def test_hierarchy() -> None:
    unreachable = audiogate.UnreachableError("no route")
    lost = audiogate.ConnectionLostError("gone", 1006)
    timeout = audiogate.AudiogateTimeoutError("slow")
    refused = audiogate.AudiogateError.from_body(401, b'{"error":{"code":"unauthorized","message":"a token"}}')
    for error in (unreachable, lost, timeout, refused):
        assert isinstance(error, audiogate.AudiogateError)
    assert isinstance(unreachable, ConnectionError) and isinstance(lost, ConnectionError)
    assert isinstance(unreachable, audiogate.AudiogateConnectionError)
    assert isinstance(timeout, TimeoutError)
    assert isinstance(refused, audiogate.AudiogateHTTPError)
    assert (refused.status, refused.code, refused.message) == (401, "unauthorized", "a token")
    assert (unreachable.code, unreachable.status) == ("unreachable", None)
    assert (lost.code, lost.close_code) == ("connection_closed", 1006)
    assert str(unreachable) == "unreachable: no route"


def test_from_body_without_json() -> None:
    error = audiogate.AudiogateError.from_body(502, b"Bad Gateway", "")
    assert (error.status, error.code, error.message) == (502, "http_error", "Bad Gateway")
    assert audiogate.AudiogateError.from_body(500, b"", "Internal").message == "Internal"


def test_retryable() -> None:
    assert retryable(audiogate.UnreachableError("x"))
    assert retryable(audiogate.ConnectionLostError("x"))
    assert retryable(audiogate.AudiogateTimeoutError("x"))
    assert retryable(audiogate.AudiogateHTTPError("unavailable", "x", 503))
    assert retryable(audiogate.AudiogateHTTPError("too_many_requests", "x", 429))
    assert not retryable(audiogate.AudiogateHTTPError("unauthorized", "x", 401))
    assert not retryable(audiogate.AudiogateHTTPError("bad_parameter", "x", 400))
    assert not retryable(audiogate.ProtocolError("protocol_error", "x"))


def test_backoff_grows_with_jitter_to_its_cap() -> None:
    policy = audiogate.ReconnectPolicy(initial_delay=0.1, factor=2, max_delay=1.0, jitter=0.5, max_attempts=8)
    delays = list(policy.delays())
    assert len(delays) == 8
    nominal = [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0]
    assert all(n * 0.5 <= d <= n for d, n in zip(delays, nominal, strict=True))
    assert list(audiogate.ReconnectPolicy(max_attempts=0).delays()) == []
    # Jitter: two clients of one restarted server do not knock in step.
    runs = {tuple(round(d, 6) for d in audiogate.ReconnectPolicy(max_attempts=5).delays()) for _ in range(5)}
    assert len(runs) > 1


def test_client_reconnect_argument() -> None:
    assert audiogate.Client("http://127.0.0.1:1").reconnect.max_attempts is None
    assert audiogate.Client("http://127.0.0.1:1", reconnect=False).reconnect.max_attempts == 0
    custom = audiogate.ReconnectPolicy(max_delay=5)
    assert audiogate.Client("http://127.0.0.1:1", reconnect=custom).reconnect is custom


def test_urls() -> None:
    endpoint = Endpoint("ws://localhost:8750/prefix/", "t")
    assert endpoint.url("/v1/status") == "http://localhost:8750/prefix/v1/status"
    assert endpoint.url("/v1/capture", {"vad": True, "ns": None, "rate": 16000}, websocket=True) == (
        "ws://localhost:8750/prefix/v1/capture?vad=true&rate=16000"
    )
    assert endpoint.headers()["Authorization"] == "Bearer t"
    assert endpoint.headers()["User-Agent"] == f"audiogate-python/{audiogate.__version__}"
    with pytest.raises(ValueError):
        Endpoint("ftp://host", None)


def test_typed_parameters_make_the_query() -> None:
    client = audiogate.Client("http://127.0.0.1:1")
    capture = client.capture(rate=48000, format="f32le", aec=True, vad=False)
    assert capture._params == {
        "encoding": "json", "rate": 48000, "channels": 1, "format": "f32le", "chunk_ms": 20,
        "aec": True, "ns": None, "agc": None, "vad": False, "levels": None, "music": None,
    }
    playback = client.playback(stream="music", role="music", format="ogg")
    assert playback._params == {"rate": 24000, "channels": 1, "format": "ogg", "stream": "music", "role": "music"}
    assert 44100 in audiogate.RATES and 12345 not in audiogate.RATES


def test_version_in_one_place() -> None:
    root = pathlib.Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert (root / "CHANGELOG.md").read_text().count(f"## {audiogate.__version__}") == 1


def test_music_message_is_a_music_event() -> None:
    capture = audiogate.Client("http://127.0.0.1:1").capture(music=True)
    assert capture._params["music"] is True
    capture.start = audiogate.CaptureStart(16000, 1, "s16le", 20, {})
    metadata = {"title": "Blue in Green", "artist": "Miles Davis", "progress_ms": 61250}
    event = capture._item({"type": "music", "player": "sendspin", "playback_state": "playing",
                           "metadata": metadata, "timestamp_ms": 183224.5})
    assert event == audiogate.MusicEvent("sendspin", "playing", metadata, 183224.5)
    gone = capture._item({"type": "music", "player": "sendspin", "playback_state": None, "metadata": None,
                          "timestamp_ms": 1})
    assert isinstance(gone, audiogate.MusicEvent) and gone.metadata is None
