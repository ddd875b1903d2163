"""What the examples share: the server's address in any spelling, and one clear line on failure.

`--url` takes the server as http://, https://, ws:// or wss:// (or a bare host:port); the examples
speak WebSocket, so http(s) becomes ws(s). Errors end the program with one line on stderr and a
non-zero status (1 for errors, 130 for Ctrl-C, as shells expect), never a traceback.
"""
import asyncio
import json
import sys
import urllib.parse

import websockets

DEFAULT_URL = "ws://127.0.0.1:8750"
SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}


def websocket_url(base, path, **query):
    """`base` (any of the accepted spellings) joined with `path` and `query` as a ws(s):// URL."""
    if "://" not in base:
        base = "ws://" + base
    parts = urllib.parse.urlsplit(base)
    scheme = SCHEMES.get(parts.scheme.lower())
    if scheme is None or not parts.netloc:
        raise ValueError(f"--url must be http://, https://, ws:// or wss:// and a host, not {base!r}")
    prefix = parts.path.rstrip("/")
    return urllib.parse.urlunsplit((scheme, parts.netloc, prefix + path, urllib.parse.urlencode(query), ""))


def headers(token):
    return {"Authorization": f"Bearer {token}"} if token else {}


def describe(error):
    """One line for what went wrong talking to the server."""
    if isinstance(error, websockets.InvalidStatus):
        response = error.response
        try:
            message = json.loads(response.body)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = (response.body or b"").decode(errors="replace").strip() or response.reason_phrase
        return f"the server refused: HTTP {response.status_code}: {message}"
    if isinstance(error, websockets.ConnectionClosed):
        reason = f" ({error.rcvd.reason})" if error.rcvd and error.rcvd.reason else ""
        return f"the server closed the connection{reason}"
    if isinstance(error, (OSError, asyncio.TimeoutError)):
        return f"cannot reach audiogate: {error or type(error).__name__}"
    return f"{type(error).__name__}: {error}"


def run(name, coroutine):
    """Runs the example's main coroutine; failures and Ctrl-C exit with one line."""
    try:
        asyncio.run(coroutine)
    except KeyboardInterrupt:
        print(f"\n{name}: stopped", file=sys.stderr)
        sys.exit(130)
    except (ValueError, OSError, asyncio.TimeoutError, websockets.WebSocketException) as error:
        print(f"{name}: {describe(error)}", file=sys.stderr)
        sys.exit(1)
