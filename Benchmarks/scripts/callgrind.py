"""Instruction counts of the whole audiogate server under callgrind, on the built-in loopback card.

The server runs under `valgrind --tool=callgrind` with its devices kept running
(AUDIOGATE_DEVICE_IDLE_MS=0), so every count covers the same periods. For each case the load is
started and settles, then the counters are zeroed (`callgrind_control -z`), the case runs for a
window, and they are dumped (`callgrind_control -d`); the dump's total is divided by the periods
the card ran in the window (frames from /v1/status over the period of 480 frames, 10 ms at 48 kHz).
Nothing here needs more than the standard library, valgrind, objcopy and a C compiler.

Used by bench_idle.py (the idle benchmark's table).
"""
import json
import os
import pathlib
import re
import socket
import subprocess
import tempfile
import time
import urllib.request

SCRIPTS = pathlib.Path(__file__).resolve().parent
BENCHMARKS = SCRIPTS.parent
REPO = BENCHMARKS.parent
CAPTURE_PATH = "/v1/capture?rate=16000&chunk_ms=20"
# The loopback card's period: 480 frames at 48 kHz (10 ms), capture and playback.
PERIOD_FRAMES = 480


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


class CallgrindServer:
    """The server under callgrind on the loopback card, its devices kept running."""

    def __init__(self, binary):
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
                "--log-level", "error", "--max-capture-clients", "1000", "--data-dir", str(self.out_dir)]
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

    def window(self, seconds, label, frames):
        """Zeroes the counters, waits `seconds`, dumps them; returns (the dump, periods in the window).
        `frames(status)` is the frame counter the periods are counted by."""
        subprocess.run(["callgrind_control", "-z", str(self.process.pid)], check=True, capture_output=True)
        first = frames(self.status())
        time.sleep(seconds)
        last = frames(self.status())
        subprocess.run(["callgrind_control", "-d", label, str(self.process.pid)],
                       check=True, capture_output=True, text=True)
        return latest_dump(self.out_dir), (last - first) / PERIOD_FRAMES

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def capture_frames(status):
    return status["capture"]["frames"]


def latest_dump(out_dir):
    dumps = sorted(pathlib.Path(out_dir).glob("callgrind.out.*"), key=lambda p: p.stat().st_mtime)
    return dumps[-1]


def total_instructions(dump):
    match = re.search(r"^(?:summary|totals):\s*(\d+)", dump.read_text(errors="replace"), re.M)
    return int(match.group(1))


def capture_counts(server, loader, clients_list, seconds):
    """Instructions per capture period with N binary capture clients (16 kHz, 20 ms chunks)."""
    rows = {}
    for clients in clients_list:
        load = start_capture_load(loader, server.port, clients, 0, seconds + 20 + clients / 5) if clients else None
        time.sleep(5 + clients / 5)
        dump, periods = server.window(seconds, f"capture{clients}", capture_frames)
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

