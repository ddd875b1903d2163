"""HTTP/1.1 requests without threads: through aiohttp when it is installed (the agent frameworks
bring it), else through a small client on asyncio streams. Both bound the whole exchange by a timeout."""
from __future__ import annotations

import asyncio
import contextlib
import importlib
import ssl
import urllib.parse
from collections.abc import Mapping
from typing import Any

from .errors import AudiogateTimeoutError, ConnectionLostError, ProtocolError, UnreachableError

__all__ = ["request"]

try:
    _aiohttp: Any = importlib.import_module("aiohttp")
except ImportError:
    _aiohttp = None

# An answer's status line and headers; larger ones are not the server's.
_MAX_HEAD = 64 * 1024


async def request(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes | None = None,
    timeout: float | None = 10.0,
    use_aiohttp: bool | None = None,
) -> tuple[int, bytes]:
    """(status, body) of one request; `timeout` bounds connecting, sending and reading the whole answer.

    Raises UnreachableError when no connection could be made, ConnectionLostError when it broke
    before the answer was complete, AudiogateTimeoutError when the answer took longer than `timeout`.
    """
    aiohttp = use_aiohttp if use_aiohttp is not None else _aiohttp is not None
    exchange = _with_aiohttp(method, url, headers, body) if aiohttp else _with_streams(method, url, headers, body)
    try:
        return await asyncio.wait_for(exchange, timeout)
    except asyncio.TimeoutError:
        raise AudiogateTimeoutError(f"{method} {_path(url)} got no answer within {timeout} s") from None


async def _with_aiohttp(method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> tuple[int, bytes]:
    try:
        async with _aiohttp.ClientSession(auto_decompress=True) as session:
            async with session.request(method, url, headers=dict(headers), data=body, allow_redirects=False) as answer:
                return int(answer.status), bytes(await answer.read())
    except _aiohttp.ClientConnectorError as error:
        raise UnreachableError(f"cannot reach audiogate: {error}") from error
    except _aiohttp.ClientError as error:
        raise ConnectionLostError(f"the connection broke during {method} {_path(url)}: {error}") from error


async def _with_streams(method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> tuple[int, bytes]:
    parts = urllib.parse.urlsplit(url)
    secure = parts.scheme == "https"
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if secure else 80)
    try:
        reader, writer = await asyncio.open_connection(
            host, port, ssl=ssl.create_default_context() if secure else None, limit=_MAX_HEAD
        )
    except OSError as error:
        raise UnreachableError(f"cannot reach audiogate at {host}:{port}: {error.strerror or error}") from error
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        netloc = parts.netloc.rpartition("@")[2]
        lines = [f"{method} {target} HTTP/1.1", f"Host: {netloc}", "Connection: close", "Accept: */*"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b""))
        await writer.drain()
        status, fields = await _head(reader)
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return status, b""
        if "chunked" in fields.get("transfer-encoding", "").lower():
            return status, await _chunked(reader)
        if "content-length" in fields:
            return status, await reader.readexactly(int(fields["content-length"]))
        return status, await reader.read()
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as error:
        raise ConnectionLostError(f"the connection broke during {method} {target}: {error}") from error
    except ValueError as error:
        raise ProtocolError("protocol_error", f"not an HTTP answer: {error}") from error
    finally:
        writer.close()
        with contextlib.suppress(OSError, asyncio.CancelledError):
            await writer.wait_closed()


async def _head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    status_line = (await reader.readuntil(b"\r\n")).decode("latin-1")
    version, _, rest = status_line.partition(" ")
    if not version.startswith("HTTP/1."):
        raise ValueError(f"status line {status_line.strip()!r}")
    status = int(rest.split(" ", 1)[0])
    fields: dict[str, str] = {}
    while True:
        line = (await reader.readuntil(b"\r\n")).decode("latin-1").rstrip("\r\n")
        if not line:
            return status, fields
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
        if size == 0:
            # Trailers up to the empty line.
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)


def _path(url: str) -> str:
    return urllib.parse.urlsplit(url).path or "/"
