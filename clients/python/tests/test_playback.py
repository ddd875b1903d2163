"""Playback against the fake server: marks, clears with their timeout, pause, and reconnecting."""
import asyncio
import json
from typing import Any

import pytest

import audiogate
from fakeserver import FakeServer

FAST = audiogate.ReconnectPolicy(initial_delay=0.01, max_delay=0.05, ping_interval=0)
PCM = bytes(4800)  # 100 ms at 24 kHz mono s16le


@pytest.fixture
async def server():
    fake = await FakeServer().start()
    yield fake
    await fake.stop()


async def until(predicate: Any, seconds: float = 3) -> None:
    async def wait() -> None:
        while not predicate():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(wait(), seconds)


async def test_marks_clear_pause(server: FakeServer) -> None:
    events: list[Any] = []
    async with audiogate.Client(server.url).playback(stream="bot", on_event=events.append) as playback:
        await playback.write(PCM)
        mark = await playback.mark("one")
        assert mark == audiogate.Mark("one", True, 100.0) and playback.heard_ms == 100.0
        await playback.write(PCM)
        cleared = await playback.clear()
        assert (cleared.played_ms, cleared.flushed_ms) == (0, 200) and cleared.id
        assert playback.written_ms == 0
        playback.pause()
        playback.resume()
        await playback.mark("two")
    sent = [m for m in server.received[0] if isinstance(m, dict)]
    assert [m["type"] for m in sent] == ["mark", "clear", "pause", "resume", "mark"]
    assert [type(e).__name__ for e in events] == ["Mark", "Cleared", "Mark"]


async def test_clear_falls_back_to_http_when_unanswered(server: FakeServer) -> None:
    server.answer = False
    async with audiogate.Client(server.url).playback(stream="bot") as playback:
        calls: list[Any] = []

        async def request(method: str, path: str, query: Any = None, *args: Any, **kwargs: Any) -> Any:
            calls.append((method, path, query))
            return 200, b'{"played_ms": 40, "flushed_ms": 60}'

        playback._endpoint.request = request  # type: ignore[method-assign]
        await playback.write(PCM)
        pending = playback.mark("cut")
        loop = asyncio.get_running_loop()
        started = loop.time()
        cleared = await playback.clear(timeout=0.1)
        assert loop.time() - started < 0.5
        assert cleared == audiogate.Cleared(40, 60)
        assert calls == [("DELETE", "/v1/playback", {"stream": "bot"})]
        # The DELETE's `cleared` (no id) and the socket's own (late, with the clear's id) both come:
        # a mark placed after the clear survives them.
        later = playback.mark("later")
        clear_id = next(m["id"] for m in server.received[0] if isinstance(m, dict) and m["type"] == "clear")
        for socket in server.playback_sockets:
            await socket.send(json.dumps({"type": "cleared", "played_ms": 40, "flushed_ms": 60}))
            await socket.send(json.dumps({"type": "cleared", "played_ms": 0, "flushed_ms": 0, "id": clear_id}))
        assert (await asyncio.wait_for(pending, 1)).heard is False
        await asyncio.sleep(0.05)
        assert not later.done()
        await playback.close()
        with pytest.raises(audiogate.AudiogateError):
            later.result()


async def test_a_clear_knows_its_own_cleared_from_another_clients(server: FakeServer) -> None:
    server.answer = False
    async with audiogate.Client(server.url).playback(stream="bot") as playback:
        await playback.write(PCM)
        before = playback.mark("before")
        answer = playback.clear_nowait(timeout=None)
        after = playback.mark("after")
        await until(lambda: any(isinstance(m, dict) and m["type"] == "mark" and m["name"] == "after"
                                for m in server.received[0]))
        clear_id = next(m["id"] for m in server.received[0] if isinstance(m, dict) and m["type"] == "clear")
        socket = server.playback_sockets[0]
        # Another socket's clear on the stream reaches this one first, with that socket's id.
        await socket.send(json.dumps({"type": "cleared", "played_ms": 100, "flushed_ms": 0, "id": "other:clear-0"}))
        assert (await asyncio.wait_for(before, 1)).heard is False
        await asyncio.sleep(0.05)
        assert not answer.done() and not after.done()
        await socket.send(json.dumps({"type": "cleared", "played_ms": 0, "flushed_ms": 0, "id": clear_id}))
        assert await asyncio.wait_for(answer, 1) == audiogate.Cleared(0, 0, clear_id)
        assert not after.done()
        await playback.close()


async def test_reconnect_fails_waiters_and_reports_the_loss(server: FakeServer) -> None:
    events: list[Any] = []
    playback = await audiogate.Client(server.url, reconnect=FAST).playback(on_event=events.append).open()
    server.answer = False
    await playback.write(PCM * 3)
    pending = playback.mark("lost")
    await until(lambda: len(server.received[0]) >= 2)
    server.abort_all()
    with pytest.raises(audiogate.ConnectionLostError):
        await asyncio.wait_for(pending, 1)
    await until(lambda: any(isinstance(e, audiogate.Reconnected) for e in events))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["ConnectionLost", "Reconnected"], kinds
    reconnected = events[1]
    assert reconnected.lost_ms == pytest.approx(300) and reconnected.attempts >= 1
    assert playback.connected and playback.written_ms == 0
    server.answer = True
    await playback.write(PCM)
    assert (await asyncio.wait_for(playback.mark("back"), 1)) == audiogate.Mark("back", True, 100.0)
    await playback.close()


async def test_writes_while_down_are_dropped_and_counted() -> None:
    server = await FakeServer().start()
    port = int(server.url.rsplit(":", 1)[1])
    events: list[Any] = []
    playback = await audiogate.Client(server.url, reconnect=FAST).playback(on_event=events.append).open()
    await server.stop()
    await until(lambda: events)
    assert isinstance(events[0], audiogate.ConnectionLost) and not playback.connected
    await playback.write(PCM * 2)  # returns at once: nobody to play it
    with pytest.raises(audiogate.ConnectionLostError):
        await playback.mark()
    with pytest.raises(audiogate.ConnectionLostError):
        await playback.clear()
    again = await FakeServer().start(port)
    try:
        await until(lambda: playback.connected)
        assert events[-1].lost_ms == pytest.approx(200)
        await playback.write(PCM)
        assert (await asyncio.wait_for(playback.mark(), 1)).heard
    finally:
        await playback.close()
        await again.stop()


async def test_pause_is_sent_again_after_a_reconnect(server: FakeServer) -> None:
    playback = await audiogate.Client(server.url, reconnect=FAST).playback().open()
    playback.pause()
    await until(lambda: server.received and server.received[0])
    server.abort_all()
    await until(lambda: len(server.received) == 2 and server.received[1])
    assert server.received[1][0] == {"type": "pause"}
    await playback.close()


async def test_no_reconnect_fails_for_good(server: FakeServer) -> None:
    events: list[Any] = []
    playback = await audiogate.Client(server.url, reconnect=False).playback(on_event=events.append).open()
    server.abort_all()
    await until(lambda: events)
    assert events == [audiogate.ConnectionLost(events[0].error, final=True)]
    with pytest.raises(audiogate.ConnectionLostError):
        await playback.write(PCM)
    await playback.close()


async def test_clear_nowait_goes_out_before_what_follows(server: FakeServer) -> None:
    async with audiogate.Client(server.url).playback() as playback:
        playback.pause()
        cleared = playback.clear_nowait()
        playback.resume()
        playback.mark("after")
        assert (await cleared).flushed_ms == 0
    sent = [m["type"] for m in server.received[0] if isinstance(m, dict)]
    assert sent == ["pause", "clear", "resume", "mark"]
