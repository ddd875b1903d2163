"""Instruction counts of the whole audiogate server under callgrind, on the built-in loopback card.

The server runs under `valgrind --tool=callgrind` with its devices kept running
(AUDIOGATE_DEVICE_IDLE_MS=0), so every count covers the same periods. For each case the load is
started and settles, then the counters are zeroed (`callgrind_control -z`), the case runs for a
window, and they are dumped (`callgrind_control -d`). The window's periods are counted in the dump
itself: the playback device thread renders exactly one period (480 frames, 10 ms at 48 kHz) per
call of the mixer's render, and the loopback card runs capture and playback on one clock. Nothing
else runs in the server during the window (no status read), so a count is the server's own work.
Nothing here needs more than the standard library, valgrind, objcopy and a C compiler.

Used by callgrind_gate.py (the performance gate) and bench_idle.py (the idle benchmark's table).
"""
import json
import math
import os
import pathlib
import re
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

SCRIPTS = pathlib.Path(__file__).resolve().parent
BENCHMARKS = SCRIPTS.parent
REPO = BENCHMARKS.parent
CAPTURE_PATH = "/v1/capture?rate=16000&chunk_ms=20"


def compiled(source, name, libraries=()):
    """`source` built with cc into Benchmarks/.build/NAME, rebuilt when the source is newer."""
    out = BENCHMARKS / ".build" / name
    if not out.exists() or out.stat().st_mtime < source.stat().st_mtime:
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cc", "-O2", "-o", str(out), str(source), *libraries], check=True)
    return out


def capture_loader():
    """scripts/capture_load.c: N binary capture clients in one epoll loop."""
    return compiled(SCRIPTS / "capture_load.c", "capture-load")


def playback_loader():
    """scripts/playback_load.c: N playback streams sending 20 ms of 24 kHz s16le in real time."""
    return compiled(SCRIPTS / "playback_load.c", "playback-load", ["-lm"])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, seconds, interval=0.1):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def start_capture_load(loader, port, clients, warmup, seconds, path=CAPTURE_PATH):
    return subprocess.Popen(
        [str(loader), "127.0.0.1", str(port), path, str(clients), str(warmup), str(seconds)],
        stdout=subprocess.PIPE, text=True)


def start_playback_load(loader, port, streams, seconds):
    return subprocess.Popen([str(loader), "127.0.0.1", str(port), str(streams), str(seconds)],
                            stdout=subprocess.PIPE, text=True)


def connection_limit(binary):
    """`--max-connections` raised for 100 clients, on builds that have the flag (the thresholds'
    own commit may predate it, when there was no limit)."""
    usage = subprocess.run([str(binary), "serve", "--help"], capture_output=True, text=True).stdout
    return ["--max-connections", "2000"] if "--max-connections" in usage else []


class CallgrindServer:
    """The server under callgrind on the loopback card, its devices kept running."""

    def __init__(self, binary, extra=()):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.out_dir = pathlib.Path(tempfile.mkdtemp(prefix="audiogate-callgrind-"))
        # valgrind 3.19 (Debian 12) cannot read the DWARF 5 debug info Swift 6 writes: profile a copy
        # without it (the symbol table stays, so functions keep their names).
        stripped = self.out_dir / "audiogate"
        subprocess.run(["objcopy", "--strip-debug", str(binary), str(stripped)], check=True)
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.out_dir}/callgrind.out.%p",
                str(stripped), "serve", "--device", "loopback",
                "--host", "127.0.0.1", "--port", str(self.port),
                "--log-level", "error", "--max-capture-clients", "1000", *connection_limit(binary),
                "--data-dir", str(self.out_dir), *extra]
        # Devices kept running, so every case counts the same periods; by environment, which builds
        # from before --device-idle-ms existed ignore.
        environment = dict(os.environ, AUDIOGATE_DEVICE_IDLE_MS="0")
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment)
        if not wait_for(self._healthy, 120):
            self.stop()
            raise RuntimeError("server under callgrind did not start")
        time.sleep(3)

    def _healthy(self):
        try:
            with urllib.request.urlopen(self.base + "/healthz", timeout=5):
                return True
        except OSError:
            return False

    def status(self):
        with urllib.request.urlopen(self.base + "/v1/status", timeout=30) as r:
            return json.loads(r.read())

    def window(self, seconds, label):
        """Zeroes the counters, waits `seconds`, dumps them; returns (the dump, periods in the window)."""
        subprocess.run(["callgrind_control", "-z", str(self.process.pid)], check=True, capture_output=True)
        time.sleep(seconds)
        subprocess.run(["callgrind_control", "-d", label, str(self.process.pid)],
                       check=True, capture_output=True, text=True)
        dump = latest_dump(self.out_dir)
        return dump, device_periods(dump)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def latest_dump(out_dir):
    dumps = sorted(pathlib.Path(out_dir).glob("callgrind.out.*"), key=lambda p: p.stat().st_mtime)
    return dumps[-1]


def device_periods(dump):
    """Device periods in a dump's window: calls of the mixer's render, one period each."""
    return per_call(dump, is_mixer_render)[1]


def total_instructions(dump):
    match = re.search(r"^(?:summary|totals):\s*(\d+)", dump.read_text(errors="replace"), re.M)
    return int(match.group(1))


def calls_into(dump, matches):
    """Calls into the functions whose names satisfy `matches`, from a callgrind out file's `calls=`
    lines: {name: (calls, inclusive instructions of those calls)}. Each `calls=` line is followed by
    a cost line whose first event (Ir) is the inclusive cost of those calls."""
    names, result = {}, {}
    positions = 1
    callee = None
    expect_cost = None
    for line in dump.read_text(errors="replace").splitlines():
        if expect_cost is not None:
            fields = line.split()
            if len(fields) > positions:
                ir = int(fields[positions])
                calls, inclusive = result.get(callee, (0, 0))
                result[callee] = (calls + expect_cost, inclusive + ir)
            expect_cost = None
            continue
        if line.startswith("positions:"):
            positions = len(line.split()) - 1
        elif line.startswith("cfn=") or line.startswith("cfunc="):
            spec = line.split("=", 1)[1]
            m = re.match(r"\((\d+)\)(?:\s+(.*))?$", spec)
            if m:
                if m.group(2) is not None:
                    names[m.group(1)] = m.group(2)
                callee = names.get(m.group(1), m.group(1))
            else:
                callee = spec
        elif line.startswith("fn="):
            # Defines names too (compressed ids are shared between fn= and cfn=).
            m = re.match(r"\((\d+)\)\s+(.*)$", line[3:])
            if m:
                names[m.group(1)] = m.group(2)
        elif line.startswith("calls="):
            if callee is not None and matches(callee):
                expect_cost = int(line.split("=", 1)[1].split()[0])
    return result


def per_call(dump, matches):
    """(inclusive instructions per call, calls) of the matching function with the largest inclusive
    cost: a protocol witness thunk and the method it calls have the same calls, the thunk includes
    the method."""
    found = calls_into(dump, matches)
    if not found:
        return None, 0
    calls, inclusive = max(found.values(), key=lambda v: v[1])
    return (inclusive / calls if calls else None), calls


def capture_counts(server, loader, clients_list, seconds):
    """Instructions per capture period with N binary capture clients (16 kHz, 20 ms chunks)."""
    rows = {}
    for clients in clients_list:
        load = start_capture_load(loader, server.port, clients, 0, seconds + 20 + clients / 5) if clients else None
        time.sleep(5 + clients / 5)
        dump, periods = server.window(seconds, f"capture{clients}")
        instructions = total_instructions(dump)
        rows[clients] = {"instructions_per_period": round(instructions / periods) if periods else None,
                         "periods": round(periods)}
        if load:
            load.kill()
            load.wait()
        time.sleep(2)
    return rows


def callgrind_counts(binary, loader, clients_list, seconds):
    """Instructions per capture period (loopback card, 10 ms) with N binary capture clients, on a
    server of its own."""
    server = CallgrindServer(binary)
    try:
        return capture_counts(server, loader, clients_list, seconds)
    finally:
        server.stop()


def is_playback_read(name):
    """The playback socket's NIO handler's channelRead (not channelReadComplete), mangled or not."""
    return "PlaybackFrameHandler" in name and re.search(r"channelRead(?!Complete)", name) is not None


def is_mixer_render(name):
    """The playback mixer's render of one device period (PlaybackMixer.render(into:frames:...))."""
    return "PlaybackMixer" in name and re.search(r"render", name) is not None


def playback_counts(server, loader, streams_list, seconds):
    """Playback with N WebSocket streams (24 kHz s16le, 20 ms messages in real time, distinct stream
    names): per device period, the inclusive instructions of the mixer's render of one period (the
    device thread's work), and with one stream also the whole process per period; per message from
    the socket to the stream's queue, the inclusive instructions of PlaybackFrameHandler.channelRead
    per call.

    Under callgrind the whole server runs on one core at a fraction of its speed: with 8 streams the
    per-message resampling alone asks for about 40 million instructions a second and it falls behind
    (reads pile up, status requests time out), so whole-process counts per period are only taken where
    it keeps real time (1 stream). Per-call counts do not depend on keeping up."""
    rows = {}
    for streams in streams_list:
        load = start_playback_load(loader, server.port, streams, seconds + 20)
        time.sleep(5)
        realtime = streams == 1
        dump, periods = server.window(seconds, f"playback{streams}")
        message, calls = per_call(dump, is_playback_read)
        render, renders = per_call(dump, is_mixer_render)
        row = {"mixer_instructions_per_period": round(render) if render else None, "renders": renders,
               "instructions_per_message": round(message) if message else None, "messages": calls}
        if realtime:
            instructions = total_instructions(dump)
            row.update({"instructions_per_period": round(instructions / periods) if periods else None,
                        "periods": round(periods)})
        rows[streams] = row
        load.kill()
        load.wait()
        time.sleep(3)
    return rows


class SnapServer:
    """snapserver on loopback with one PCM pipe source (48 kHz stereo s16le, a 440 Hz tone written
    by a thread; snapserver's reads pace it), an empty config and a temporary data directory."""

    def __init__(self):
        self.scratch = pathlib.Path(tempfile.mkdtemp(prefix="audiogate-snapserver-"))
        self.fifo = self.scratch / "fifo"
        os.mkfifo(self.fifo)
        (self.scratch / "snapserver.conf").write_text("")
        self.port = free_port()
        self.stopping = threading.Event()
        block = bytearray()
        for frame in range(960):
            value = round(0.3 * 32767 * math.sin(2 * math.pi * 440 * frame / 48000))
            block += value.to_bytes(2, "little", signed=True) * 2
        self.block = bytes(block)
        self.feeder = threading.Thread(target=self._feed, daemon=True)
        self.feeder.start()
        argv = ["snapserver", "-c", str(self.scratch / "snapserver.conf"), f"--server.datadir={self.scratch}",
                "--stream.source", f"pipe://{self.fifo}?name=bench&codec=pcm&sampleformat=48000:16:2",
                "--stream.bind_to_address", "127.0.0.1", "--stream.port", str(self.port),
                "--tcp.enabled", "false", "--http.enabled", "false", "--logging.filter=*:error"]
        self.process = subprocess.Popen(argv, env=dict(os.environ, HOME=str(self.scratch)),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _feed(self):
        # 960 frames of the tone are 20 ms: whole periods of 440 Hz, so blocks join without a step.
        while not self.stopping.is_set():
            fd = os.open(self.fifo, os.O_WRONLY)
            try:
                while not self.stopping.is_set():
                    os.write(fd, self.block)
            except OSError:
                pass
            finally:
                os.close(fd)

    def stop(self):
        self.stopping.set()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        try:
            os.close(os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK))
        except OSError:
            pass
        self.feeder.join(2)


def timed_playing(server):
    """Whether the server's Snapcast stream is listed as a timed stream with audio queued."""
    try:
        streams = server.status()["playback"].get("stream_list", [])
    except (OSError, ValueError, KeyError):
        return False
    return any(s.get("timed") and s.get("queued_ms", 0) > 0 for s in streams)


def timed_counts(binary, seconds):
    """A timed stream (the Snapcast client playing snapserver's PCM stream): per device period, the
    inclusive instructions of the mixer's render of one period, and the whole process per period.
    On a server of its own, since the Snapcast client is configured when the server starts."""
    snapserver = SnapServer()
    try:
        server = CallgrindServer(binary, ["--snapcast-server", f"127.0.0.1:{snapserver.port}"])
        try:
            if not wait_for(lambda: timed_playing(server), 60, interval=1):
                raise RuntimeError("the Snapcast stream did not start playing under callgrind")
            # Past the start: the clock offset settles and the playout locks to the chunks' times.
            time.sleep(5)
            dump, periods = server.window(seconds, "timed1")
            render, renders = per_call(dump, is_mixer_render)
            instructions = total_instructions(dump)
            return {"mixer_instructions_per_period": round(render) if render else None, "renders": renders,
                    "instructions_per_period": round(instructions / periods) if periods else None,
                    "periods": round(periods) if periods else None}
        finally:
            server.stop()
    finally:
        snapserver.stop()
