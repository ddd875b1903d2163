"""What the examples share: the client for `--url`/`--token`, events printed as the server sends
them, and one clear line on failure.

The examples use the `audiogate` package (`pip install ./clients/python`); run from a checkout
without it, they load it from clients/python/src. Errors end the program with one line on stderr
and a non-zero status (1 for errors, 130 for Ctrl-C, as shells expect), never a traceback.
"""
import asyncio
import pathlib
import sys

try:
    import audiogate
except ImportError:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "clients" / "python" / "src"))
    import audiogate

DEFAULT_URL = "ws://127.0.0.1:8750"


def client(args):
    """The client for `--url` (http://, https://, ws:// or wss://) and `--token`."""
    try:
        return audiogate.Client(args.url, token=args.token)
    except ValueError:
        raise ValueError(f"--url must be http://, https://, ws:// or wss:// and a host, not {args.url!r}") from None


def message(event):
    """A client event as the JSON message the server sent, for printing."""
    if isinstance(event, audiogate.Mark):
        return {"type": "mark", "name": event.name}
    if isinstance(event, audiogate.Cleared):
        return {"type": "cleared", "played_ms": event.played_ms, "flushed_ms": event.flushed_ms}
    if isinstance(event, audiogate.Drained):
        return {"type": "drained"}
    if isinstance(event, audiogate.PlaybackError):
        return {"type": "error", "code": event.code, "message": event.message}
    if isinstance(event, audiogate.CaptureStart):
        return {"type": "start", "rate": event.rate, "channels": event.channels, "format": event.format,
                "chunk_ms": event.chunk_ms, "processing": event.processing}
    if isinstance(event, audiogate.OverrunEvent):
        return {"type": "overrun", "dropped_ms": event.dropped_ms}
    if isinstance(event, audiogate.DeviceEvent):
        return {"type": "device", "state": event.state}
    if isinstance(event, audiogate.VadEvent):
        return {"type": "vad", "state": event.state, "timestamp_ms": event.timestamp_ms}
    return {"type": type(event).__name__}


def describe(error):
    """One line for what went wrong talking to the server."""
    if isinstance(error, audiogate.AudiogateError):
        if error.status is not None:
            return f"the server refused: HTTP {error.status}: {error.message}"
        return error.message
    if isinstance(error, ValueError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def run(name, coroutine):
    """Runs the example's main coroutine; failures and Ctrl-C exit with one line."""
    try:
        asyncio.run(coroutine)
    except KeyboardInterrupt:
        print(f"\n{name}: stopped", file=sys.stderr)
        sys.exit(130)
    except (ValueError, OSError, asyncio.TimeoutError, audiogate.AudiogateError) as error:
        print(f"{name}: {describe(error)}", file=sys.stderr)
        sys.exit(1)
