"""Capture against the fake server: chunks, a dropped connection reopened with the gap reported."""
import asyncio
from typing import Any

import pytest

import audiogate
from fakeserver import CHUNK_MS, FakeServer

FAST = audiogate.ReconnectPolicy(initial_delay=0.01, max_delay=0.05, ping_interval=0)


async def collect(capture: audiogate.Capture, count: int, seconds: float = 5) -> list[Any]:
    items: list[Any] = []

    async def read() -> None:
        async for item in capture:
            items.append(item)
            if len([i for i in items if isinstance(i, audiogate.AudioChunk)]) >= count:
                return

    await asyncio.wait_for(read(), seconds)
    return items


async def test_reconnect_reports_the_gap() -> None:
    server = await FakeServer(capture_chunks=[5, None]).start()
    try:
        client = audiogate.Client(server.url, reconnect=FAST)
        async with client.capture(rate=16000) as capture:
            assert capture.start == audiogate.CaptureStart(16000, 1, "s16le", CHUNK_MS, {"aec": False})
            first = await collect(capture, 5)
            # The server "restarts": its capture clock moved on 500 ms while it was down.
            server.clock_ms += 500
            rest = await collect(capture, 3)
    finally:
        await server.stop()
    chunks = [i for i in first if isinstance(i, audiogate.AudioChunk)]
    assert [c.seq for c in chunks] == [0, 1, 2, 3, 4]
    kinds = [type(i).__name__ for i in rest]
    assert kinds[:3] == ["ConnectionLost", "Reconnected", "AudioChunk"], kinds
    reconnected = rest[1]
    assert reconnected.lost_ms == pytest.approx(500)
    assert reconnected.attempts >= 1 and reconnected.down_ms >= 0
    after = [i for i in rest if isinstance(i, audiogate.AudioChunk)]
    # seq goes on past the 25 chunks lost: still a count of 20 ms periods.
    assert [c.seq for c in after] == [30, 31, 32]
    assert server.connections == 2


async def test_no_reconnect_ends_on_shutdown() -> None:
    server = await FakeServer().start()
    client = audiogate.Client(server.url, reconnect=False)
    capture = await client.capture().open()
    await collect(capture, 2)
    await server.stop(1001)
    with pytest.raises(StopAsyncIteration):
        while True:
            await asyncio.wait_for(capture.__anext__(), 2)
    await capture.close()


async def test_no_reconnect_raises_when_dropped() -> None:
    server = await FakeServer(capture_chunks=[2]).start()
    try:
        capture = await audiogate.Client(server.url, reconnect=False).capture().open()
        with pytest.raises(audiogate.ConnectionLostError):
            async for _ in capture:
                pass
        await capture.close()
    finally:
        await server.stop()


async def test_gives_up_after_its_attempts() -> None:
    server = await FakeServer(capture_chunks=[2]).start()
    policy = audiogate.ReconnectPolicy(initial_delay=0.01, max_delay=0.02, max_attempts=3, ping_interval=0)
    capture = await audiogate.Client(server.url, reconnect=policy).capture().open()
    await collect(capture, 2)
    await server.stop()
    items = []
    with pytest.raises(audiogate.UnreachableError):
        async for item in capture:
            items.append(item)
    assert [type(i).__name__ for i in items] == ["ConnectionLost"]
    await capture.close()


async def test_refused_upgrade_is_an_http_error() -> None:
    server = await FakeServer().start()
    try:
        with pytest.raises(audiogate.AudiogateHTTPError) as caught:
            await audiogate.Client(server.url).capture(rate=12345).open()
        assert (caught.value.status, caught.value.code) == (400, "bad_parameter")
        assert "12345" in caught.value.message
    finally:
        await server.stop()


async def test_heartbeat_aborts_a_silent_connection() -> None:
    from audiogate._transport import heartbeat

    class Transport:
        aborted = False

        def abort(self) -> None:
            self.aborted = True

    class Silent:
        transport = Transport()

        async def ping(self) -> "asyncio.Future[float]":
            return asyncio.get_running_loop().create_future()  # no pong ever

    connection: Any = Silent()
    await asyncio.wait_for(heartbeat(connection, 0.01, 0.05, lambda: True), 2)
    assert connection.transport.aborted
    # Not asked to ping (a full playback stream reads no pong): never aborts.
    quiet: Any = Silent()
    quiet.transport = Transport()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(heartbeat(quiet, 0.01, 0.05, lambda: False), 0.2)
    assert not quiet.transport.aborted
