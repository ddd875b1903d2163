"""HTTP calls without threads, with timeouts: the asyncio-streams client (and aiohttp when installed)."""
import asyncio
import importlib.util
import socket
import time

import pytest

import audiogate
from audiogate import _http
from fakeserver import HTTPServer

VARIANTS = [False] + ([True] if importlib.util.find_spec("aiohttp") else [])


@pytest.fixture
async def server():
    http = await HTTPServer().start()
    yield http
    await http.stop()


@pytest.mark.parametrize("use_aiohttp", VARIANTS)
@pytest.mark.parametrize("chunked", [False, True])
async def test_json_answer(server: HTTPServer, use_aiohttp: bool, chunked: bool) -> None:
    server.answers[("GET", "/v1/status")] = (200, b'{"capture":{"state":"running"}}', chunked)
    status, body = await _http.request("GET", server.url + "/v1/status?x=1", {"Authorization": "Bearer t"},
                                       use_aiohttp=use_aiohttp)
    assert (status, body) == (200, b'{"capture":{"state":"running"}}')
    method, target, fields, _ = server.seen[-1]
    assert (method, target, fields["authorization"]) == ("GET", "/v1/status?x=1", "Bearer t")


@pytest.mark.parametrize("use_aiohttp", VARIANTS)
async def test_body_and_method(server: HTTPServer, use_aiohttp: bool) -> None:
    server.answers[("DELETE", "/v1/playback")] = (200, b'{"played_ms":120,"flushed_ms":880}', False)
    server.answers[("POST", "/v1/say")] = (200, b'{"duration_ms":500}', False)
    client = audiogate.Client(server.url)
    assert await client.flush("bot") == audiogate.Cleared(120, 880)
    assert server.seen[-1][1] == "/v1/playback?stream=bot"
    assert (await client.say("hello"))["duration_ms"] == 500
    assert server.seen[-1][3] == b'{"text": "hello"}'


async def test_refusal_is_an_http_error(server: HTTPServer) -> None:
    client = audiogate.Client(server.url)
    with pytest.raises(audiogate.AudiogateHTTPError) as caught:
        await client.recording("nope")
    assert (caught.value.status, caught.value.code) == (404, "not_found")


@pytest.mark.parametrize("use_aiohttp", VARIANTS)
async def test_timeout(server: HTTPServer, use_aiohttp: bool) -> None:
    server.silent.add("/v1/status")
    started = time.monotonic()
    with pytest.raises(audiogate.AudiogateTimeoutError):
        await _http.request("GET", server.url + "/v1/status", {}, timeout=0.2, use_aiohttp=use_aiohttp)
    assert time.monotonic() - started < 1.0
    # The client's own timeout applies to every call.
    with pytest.raises(TimeoutError):
        await audiogate.Client(server.url, timeout=0.2).status()


@pytest.mark.parametrize("use_aiohttp", VARIANTS)
async def test_unreachable(use_aiohttp: bool) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(audiogate.UnreachableError) as caught:
        await _http.request("GET", f"http://127.0.0.1:{port}/v1/status", {}, use_aiohttp=use_aiohttp)
    assert isinstance(caught.value, ConnectionError) and caught.value.status is None


async def test_no_thread_is_used(server: HTTPServer) -> None:
    server.answers[("GET", "/v1/info")] = (200, b"{}", False)
    loop = asyncio.get_running_loop()
    calls = []
    original = loop.run_in_executor
    loop.run_in_executor = lambda *a, **k: calls.append(a) or original(*a, **k)  # type: ignore[method-assign]
    try:
        await audiogate.Client(server.url).info()
    finally:
        loop.run_in_executor = original  # type: ignore[method-assign]
    assert calls == []


async def test_sendspin_command_and_now_playing(server: HTTPServer) -> None:
    server.answers[("POST", "/v1/sendspin/command")] = (200, b'{"command":"volume","volume":40}', False)
    server.answers[("GET", "/v1/status")] = (200, b'{"sendspin":{"metadata":{"title":"T","progress_ms":5}}}', False)
    client = audiogate.Client(server.url)
    assert await client.sendspin_command("volume", volume=40) == {"command": "volume", "volume": 40}
    assert server.seen[-1][3] == b'{"command": "volume", "volume": 40}'
    assert await client.now_playing() == {"title": "T", "progress_ms": 5}
    server.answers[("GET", "/v1/status")] = (200, b'{"capture":{}}', False)
    assert await client.now_playing() is None
    server.answers[("POST", "/v1/sendspin/command")] = (
        409, b'{"error":{"code":"conflict","message":"the server does not take \'seek\' now"}}', False)
    with pytest.raises(audiogate.AudiogateHTTPError) as caught:
        await client.sendspin_command("seek", position_ms=0)
    assert (caught.value.status, caught.value.code) == (409, "conflict")
