#!/usr/bin/env python3
"""Idle and per-client cost of audiogate: server CPU, RSS and latency rows, optionally callgrind counts.

    .venv/bin/python Benchmarks/scripts/bench_idle.py --binary .build/release/audiogate --markdown docs/bench-idle.md
    .venv/bin/python Benchmarks/scripts/bench_idle.py --binary ... --callgrind-only   # instruction counts alone

CPU is the server process's utime+stime from /proc/PID/stat over a window, in % of one core; every
figure is the median of --runs windows and has the hypervisor steal of its windows beside it.
Capture clients are one C epoll process (capture_load.c, built into Benchmarks/.build/) that counts the
binary payload each client receives, so its own cost stays far below the server's. Playback senders
and the latency rows reuse bench_playback.py and bench_capture.py (all in Benchmarks/scripts).

The PulseAudio card must be running (scripts/test-card.sh start, or a private one via PULSE_SERVER).
"""
import argparse
import array
import asyncio
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SCRIPTS = pathlib.Path(__file__).resolve().parent
ROOT = SCRIPTS.parents[1]
BENCH_BUILD = SCRIPTS.parent / ".build"
sys.path.insert(0, str(ROOT / "Tests/EndToEnd"))
sys.path.insert(0, str(SCRIPTS))
import e2e  # noqa: E402
import bench_playback  # noqa: E402
from callgrind import callgrind_counts, compiled  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 1e6
CAPTURE_PATH = "/v1/capture?rate=16000&chunk_ms=20"
CAPTURE_BYTES_PER_SECOND = 16000 * 2
# The server's default --device-idle-ms: an idle row starts after it (and a margin) has passed.
DEVICE_IDLE_SECONDS = 5


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def run_nanoseconds(pid):
    """CPU time of all the server's threads so far, in ns (schedstat; the tick counts in /proc/PID/stat
    move in 10 ms steps, 0.05 % of a 20 s window, too coarse for one client's cost)."""
    total = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def switches(pid):
    """Context switches of all the server's threads so far: its wake-ups, repeatable on a noisy machine."""
    total = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def thread_ticks(pid):
    """CPU ticks so far by thread group: device threads (ag-*), NIO event loops, and the rest."""
    groups = {"device": 0, "event_loops": 0, "other": 0}
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        group = "device" if name.startswith("ag-") else "event_loops" if name.startswith("NIO-") else "other"
        groups[group] += int(fields[11]) + int(fields[12])
    return groups


def rss_mb(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE_MB


class Window:
    """Server CPU % of one core, steal % and load average over one measured interval."""

    def __init__(self, pid):
        self.pid = pid
        self.ticks, self.time, self.cpu = cpu_ticks(pid), time.monotonic(), e2e.cpu_sample()
        self.switches = switches(pid)
        self.groups = thread_ticks(pid)

    def close(self):
        elapsed = time.monotonic() - self.time
        groups = thread_ticks(self.pid)
        return {
            "threads": {name: round(100 * (groups[name] - self.groups[name]) / CLK_TCK / elapsed, 2) for name in groups},
            "cpu": 100 * (cpu_ticks(self.pid) - self.ticks) / CLK_TCK / elapsed,
            "steal": e2e.steal_percent(self.cpu, e2e.cpu_sample()),
            "load": os.getloadavg()[0],
            "rss": rss_mb(self.pid),
            "wakeups": (switches(self.pid) - self.switches) / elapsed,
        }


def build_load_generator():
    return compiled(SCRIPTS / "capture_load.c", "capture-load")


WAKEUP_FLOOR_C = r"""
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
int main(int argc, char **argv) {
    int wakes = argc > 1 ? atoi(argv[1]) : 1000;
    struct timespec period = {0, 10000000};
    for (int i = 0; i < wakes; i++) nanosleep(&period, 0);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double us = 1e6 * (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
    printf("%.2f\n", us / wakes);
    return 0;
}
"""


def wakeup_floor(runs):
    """CPU microseconds one bare timer wake-up costs on this machine (a 100 Hz nanosleep loop)."""
    source = BENCH_BUILD / "wakeup-floor.c"
    out = BENCH_BUILD / "wakeup-floor"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("#include <stdlib.h>\n" + WAKEUP_FLOOR_C)
    subprocess.run(["cc", "-O2", "-o", str(out), str(source)], check=True)
    figures, steals = [], []
    for _ in range(runs):
        before = e2e.cpu_sample()
        figures.append(float(subprocess.run([str(out), "1000"], capture_output=True, text=True, check=True).stdout))
        steals.append(e2e.steal_percent(before, e2e.cpu_sample()))
    return {"us_per_wakeup": round(statistics.median(figures), 1), "runs": figures,
            "steal": round(statistics.median(steals), 2)}


def floor_runs(arguments, runs):
    """Median CPU % of `runs` runs of send_floor.c with `arguments`, with the steal beside it."""
    out = compiled(SCRIPTS / "send_floor.c", "send-floor")
    figures, steals = [], []
    for _ in range(runs):
        before = e2e.cpu_sample()
        result = json.loads(subprocess.run([str(out), *arguments], capture_output=True, text=True, check=True).stdout)
        figures.append(result["cpu_percent"])
        steals.append(e2e.steal_percent(before, e2e.cpu_sample()))
    return {"cpu": round(statistics.median(figures), 2), "runs": figures, "steal": round(statistics.median(steals), 2)}


def send_floor(runs, seconds, clients_list):
    """CPU % of one core that a C program spends on the same sends with no server logic (send_floor.c)."""
    return {str(clients): floor_runs([str(clients), str(seconds)], runs) for clients in clients_list}


def receive_floor(runs, seconds):
    """CPU % of one core that a C program spends reading one playback sender's messages (a 20 ms chunk
    of 24 kHz mono s16le in a masked WebSocket frame, 966 bytes) in an epoll loop, with no server logic."""
    return floor_runs(["1", str(seconds), "966", "20", "receive"], runs)


class FloorServer:
    """`nio-floor MODE` (Benchmarks/Sources/nio-floor): a bare swift-nio WebSocket server doing one client's steady
    work with no audio logic, paired like the server's client rows."""

    def __init__(self, binary, mode, port):
        self.process = subprocess.Popen([str(binary), mode, str(port)], stdout=subprocess.PIPE, text=True)
        self.process.stdout.readline()
        self.pid, self.port, self.base = self.process.pid, port, f"http://127.0.0.1:{port}"

    def stop(self):
        self.process.kill()
        self.process.wait()


def nio_floor(binary, loader):
    """One capture client's and one playback sender's own CPU cost on bare swift-nio (paired windows)."""
    result = {}
    for mode, paired in (("capture", lambda server: paired_capture_cost(server, loader)),
                         ("playback", paired_playback_cost)):
        server = FloorServer(binary, mode, e2e.free_port())
        try:
            time.sleep(1)
            result[mode] = paired(server)
        finally:
            server.stop()
    return result


def start_load(binary, port, clients, warmup, seconds, path=CAPTURE_PATH):
    return subprocess.Popen(
        [str(binary), "127.0.0.1", str(port), path, str(clients), str(warmup), str(seconds)],
        stdout=subprocess.PIPE, text=True)


def status(server):
    with urllib.request.urlopen(server.base + "/v1/status", timeout=10) as r:
        return json.loads(r.read())


def median_row(runs, **extra):
    row = {key: round(statistics.median(r[key] for r in runs), 2) for key in ("cpu", "steal", "load", "rss", "wakeups")}
    row["cpu_runs"] = [round(r["cpu"], 2) for r in runs]
    if all("threads" in r for r in runs):
        row["threads"] = {name: round(statistics.median(r["threads"][name] for r in runs), 2)
                          for name in runs[0]["threads"]}
    row.update(extra)
    return row


def idle_row(server, args):
    runs = []
    for _ in range(args.runs):
        window = Window(server.pid)
        time.sleep(args.seconds)
        runs.append(window.close())
    return median_row(runs)


def capture_row(server, args, loader, clients):
    runs, ratios = [], []
    warmup = 3 + clients / 200
    for _ in range(args.runs):
        load = start_load(loader, server.port, clients, warmup, args.seconds)
        time.sleep(warmup)
        window = Window(server.pid)
        time.sleep(args.seconds)
        runs.append(window.close())
        result = json.loads(load.communicate(timeout=60)[0])
        if result["connected"] != clients or result["open_at_end"] != clients:
            print(f"bench-idle: {clients} clients: {result}", file=sys.stderr)
        ratios.append(result["bytes_min"] / (CAPTURE_BYTES_PER_SECOND * result["seconds"]))
        time.sleep(1)
    return median_row(runs, realtime_min=round(min(ratios), 4))


def start_sender(server, name, seconds, seed):
    """A thread streaming a 440 Hz tone at 24 kHz in 20 ms chunks, in real time, to the server's playback."""
    ws_url = server.base.replace("http://", "ws://", 1) + "/v1/playback"
    sender = threading.Thread(target=lambda: asyncio.run(bench_playback.stream_client(
        ws_url, name, 440, 24000, seconds, 20, 0, seed)))
    sender.start()
    return sender


def playback_row(server, args):
    runs = []
    for index in range(args.runs):
        sender = start_sender(server, f"idle{index}", args.seconds + 4, index)
        time.sleep(2)
        window = Window(server.pid)
        time.sleep(args.seconds)
        runs.append(window.close())
        sender.join()
        time.sleep(1)
    return median_row(runs)


PAIRS = 6
PAIR_SECONDS = 10


def paired_cost(server, start_client):
    """One client's own CPU cost: windows without and with the client, alternated PAIRS times on the
    same server, and the median of each pair's difference. Medians of separate rows drift with the
    machine by more than a client costs; neighbouring windows share the drift."""
    def window_percent():
        start, clock = run_nanoseconds(server.pid), time.monotonic()
        time.sleep(PAIR_SECONDS)
        return 100 * (run_nanoseconds(server.pid) - start) / 1e9 / (time.monotonic() - clock)

    differences, steals = [], []
    for index in range(PAIRS):
        before = e2e.cpu_sample()
        without = window_percent()
        finish = start_client(index)
        time.sleep(2)
        with_client = window_percent()
        steals.append(e2e.steal_percent(before, e2e.cpu_sample()))
        finish()
        differences.append(round(with_client - without, 3))
        time.sleep(1)
    return {"cost": round(statistics.median(differences), 3), "pairs": differences,
            "steal": round(statistics.median(steals), 2)}


def paired_capture_cost(server, loader):
    def start(_index):
        load = start_load(loader, server.port, 1, 1, PAIR_SECONDS + 2)
        return lambda: load.communicate(timeout=60)
    return paired_cost(server, start)


def paired_playback_cost(server):
    return paired_cost(server, lambda index: start_sender(server, f"pair{index}", PAIR_SECONDS + 3, index).join)


def click_row(server, args, clients):
    """Capture-to-client delay p99 (bench_capture.py, JSON clients) with `clients` connected in all."""
    p99s, steals = [], []
    probes = min(clients, 5)
    loader = build_load_generator()
    for _ in range(args.runs):
        load = None
        if clients > probes:
            load = start_load(loader, server.port, clients - probes, 1, args.seconds + 8)
            time.sleep(3 + clients / 200)
        before = e2e.cpu_sample()
        out = subprocess.run(
            [sys.executable, str(SCRIPTS / "bench_capture.py"),
             "--url", f"ws://127.0.0.1:{server.port}/v1/capture?rate=16000&chunk_ms=20&encoding=json",
             "--clients", str(probes), "--seconds", str(args.seconds)],
            capture_output=True, text=True, check=True).stdout
        steals.append(e2e.steal_percent(before, e2e.cpu_sample()))
        p99s.append(json.loads(out)["delay_ms_p99"])
        if load:
            load.communicate(timeout=60)
        time.sleep(1)
    return {"p99_ms": round(statistics.median(p99s), 1), "p99_runs": p99s,
            "steal": round(statistics.median(steals), 2)}


def playback_latency_row(server, args):
    results = []
    for _ in range(args.runs):
        out = subprocess.run(
            [sys.executable, str(SCRIPTS / "bench_playback.py"), "--url", server.base,
             "--streams", "8", "--seconds", str(args.seconds), "--posts", "100", "--clears", "0",
             "--server-pid", str(server.pid)],
            capture_output=True, text=True, check=True).stdout
        results.append(json.loads(out))
    latency = [r["post_latency"]["latency"]["p99_ms"] for r in results]
    return {
        "post_p99_ms": round(statistics.median(latency), 1), "post_p99_runs": latency,
        "post_steal": round(statistics.median(r["post_latency"]["steal_percent"] for r in results), 2),
        "underruns": [r["concurrent"]["underruns"] for r in results],
        "xruns": [r["concurrent"]["device_xruns"] for r in results],
        "senders_steal": round(statistics.median(r["concurrent"]["steal_percent"] for r in results), 2),
    }


class MonitorRecorder:
    """parec on the test card's monitor (48 kHz mono s16le), each block noted with its arrival time."""

    RATE = 48000

    def __init__(self):
        self.process = subprocess.Popen(
            ["parec", "--device=speaker.monitor", f"--rate={self.RATE}", "--channels=1", "--format=s16le",
             "--latency-msec=5", "--raw"], stdout=subprocess.PIPE)
        self.blocks = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while True:
            block = self.process.stdout.read1(960)
            if not block:
                return
            self.blocks.append((time.monotonic(), block))

    def onset_after(self, start, threshold=0.05):
        """Arrival time of the first block after `start` holding a sample above `threshold` of full scale."""
        limit = int(threshold * 32768)
        for arrived, block in list(self.blocks):
            if arrived < start:
                continue
            samples = memoryview(block).cast("h") if len(block) % 2 == 0 else memoryview(block[:-1]).cast("h")
            if any(abs(v) > limit for v in samples):
                return arrived
        return None

    def stop(self):
        self.process.terminate()
        self.process.wait()


def first_sound_row(args):
    """Pulse card: POST to the first sound on the card's monitor, with the speaker stopped (idle) and running."""
    tone = array.array("h", (int(16383 * math.sin(2 * math.pi * 1000 * i / 24000)) for i in range(7200))).tobytes()
    extra = ["--log-level", "error"]
    idle, running, steals = [], [], []
    with tempfile.TemporaryDirectory() as data:
        server = e2e.Server(args.binary, device="pulse", data_dir=data, extra=extra)
        if not server.start(seconds=30):
            raise RuntimeError("pulse server did not start")
        recorder = MonitorRecorder()
        try:
            for _ in range(args.runs):
                before = e2e.cpu_sample()
                time.sleep(DEVICE_IDLE_SECONDS + 2)
                for figures in (idle, running):
                    start = time.monotonic()
                    request = urllib.request.Request(
                        server.base + "/v1/playback?rate=24000&channels=1&format=s16le", data=tone, method="POST",
                        headers={"Content-Type": "application/octet-stream"})
                    urllib.request.urlopen(request, timeout=10).read()
                    time.sleep(1)
                    onset = recorder.onset_after(start)
                    figures.append(round(1000 * (onset - start), 1) if onset else None)
                steals.append(e2e.steal_percent(before, e2e.cpu_sample()))
        finally:
            recorder.stop()
            server.stop()
    known = lambda xs: [x for x in xs if x is not None]
    return {"idle_ms": statistics.median(known(idle)) if known(idle) else None, "idle_runs": idle,
            "running_ms": statistics.median(known(running)) if known(running) else None, "running_runs": running,
            "steal": round(statistics.median(steals), 2)}


def markdown(result):
    """The docs/bench-idle.md fragment for one result. Comparisons with earlier code are the
    callgrind gate's (callgrind_gate.py), not a table of earlier figures."""

    def cpu(key, over=None):
        row = result.get(key)
        if not row:
            return "n/a", "n/a"
        figure = f"{row['cpu']:.2f}"
        if "paired" in row:
            paired = row["paired"]
            figure += (f" (+{paired['cost']:.2f} over the same devices with no client: median of"
                       f" {len(paired['pairs'])} paired windows, {' / '.join(f'{v:+.2f}' for v in paired['pairs'])};"
                       f" steal {paired['steal']:.2f})")
        elif over and over.endswith("_open") and result.get(over):
            figure += f" ({row['cpu'] - result[over]['cpu']:+.2f} over the same devices with no client)"
        elif over and result.get(over):
            # Not over the kept-open row: a client on the default server starts only its own
            # device, so that difference would mix two sets of devices. The kept-open client rows
            # give a client's own cost.
            figure += f" ({row['cpu'] - result[over]['cpu']:+.2f} over idle)"
        return figure, f"{row['steal']:.2f} ({row['load']:.1f})"

    lines = [
        "## Idle and per-client cost",
        "",
        f"`Benchmarks/scripts/bench-idle.sh`: release build, server CPU in % of one core (utime+stime from `/proc/PID/stat`),",
        f"median of {result['runs']} windows of {result['seconds']:.0f} s each; steal is the hypervisor's share of the",
        "whole machine over the same windows (`/proc/stat`). Capture clients: 16 kHz mono s16le, 20 ms chunks,",
        "binary WebSocket, from one C epoll process (`Benchmarks/scripts/capture_load.c`); *real time* is the fewest",
        "payload bytes any client received over the window divided by 32000 B/s x window. Playback sender:",
        "24 kHz s16le, 20 ms chunks on a real-time schedule. Device period 10 ms, buffer 40 ms.",
        "",
        "| case | server CPU % (median) | runs | device threads / event loops / other % | same sends (reads) from C % | same path on bare swift-nio % | real time (min client) | wake-ups/s | RSS MB | steal % (load avg) | target |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    floors = result.get("send_floor", {})
    nio_floors = result.get("nio_floor", {})
    floor_clients = {"loopback_capture1": "1", "loopback_open_capture1": "1", "pulse_capture1": "1", "pulse_capture100": "100",
                     "pulse_capture500": "500", "pulse_capture1000": "1000"}
    rows = [
        ("loopback card, no client (devices stopped after 5 s idle, the default)", "loopback_idle", None, "<= 0.2"),
        ("loopback card, devices kept open, no client (`--device-idle-ms 0`)", "loopback_open", None, "<= 0.2"),
        ("loopback + 1 capture client", "loopback_capture1", "loopback_idle", "<= 0.3 over idle"),
        ("loopback + 1 playback sender", "loopback_playback1", "loopback_idle", "<= 0.3 over idle"),
        ("loopback, devices kept open + 1 capture client", "loopback_open_capture1", "loopback_open", "<= 0.3 over idle"),
        ("loopback, devices kept open + 1 playback sender", "loopback_open_playback1", "loopback_open", "<= 0.3 over idle"),
        ("pulse card, no client (devices stopped after 5 s idle, the default)", "pulse_idle", None, ""),
        ("pulse card, devices kept open, no client (`--device-idle-ms 0`)", "pulse_open", None, ""),
        ("pulse + 1 capture client", "pulse_capture1", "pulse_idle", ""),
        ("pulse + 1 playback sender", "pulse_playback1", "pulse_idle", ""),
        ("pulse + 100 capture clients", "pulse_capture100", None, ""),
        ("pulse + 500 capture clients", "pulse_capture500", None, "<= 25 %, <= 100 MB"),
        ("pulse + 1000 capture clients", "pulse_capture1000", None, "<= 50 %, every client >= 97 % real time"),
    ]
    for name, key, over, target in rows:
        row = result.get(key)
        if not row:
            continue
        figure, steal = cpu(key, over)
        realtime = f"{100 * row['realtime_min']:.1f} %" if "realtime_min" in row else ""
        runs = " / ".join(f"{v:.2f}" for v in row["cpu_runs"])
        wakeups = f"{row['wakeups']:.0f}" if "wakeups" in row else ""
        threads = " / ".join(f"{row['threads'][g]:.2f}" for g in ("device", "event_loops", "other")) if "threads" in row else ""
        floor_row = floors.get(floor_clients.get(key, "")) or (result.get("receive_floor") if "playback1" in key else None)
        floor_text = f"{floor_row['cpu']:.2f}" if floor_row else ""
        nio_row = nio_floors.get({"loopback_open_capture1": "capture", "loopback_open_playback1": "playback"}.get(key, ""))
        nio_text = f"+{nio_row['cost']:.2f}" if nio_row else ""
        lines.append(f"| {name} | {figure} | {runs} | {threads} | {floor_text} | {nio_text} | {realtime} | {wakeups} | {row['rss']:.0f} | {steal} | {target} |")
    lines.append("")
    lines += [
        "A client on the default server starts its own device (and only that one), so its rows are over",
        "idle with the devices stopped; the *devices kept open + 1 client* rows add the client to devices",
        "that run anyway, which is that client's own cost. That cost is measured in pairs: "
        f"{PAIR_SECONDS} s without the client, then {PAIR_SECONDS} s",
        f"with it, {PAIRS} times on the same server, each window's CPU time from the threads' schedstat (ns),",
        "and the median of the differences; subtracting the medians of two separate rows mixes in how the",
        "machine drifted between them, which on this VM is as large as a client's cost.",
        "",
    ]
    if result.get("remeasured"):
        remeasured = result["remeasured"]
        kept = ("the other rows and the latency table" if "callgrind" in remeasured
                else "the other rows, the latency table and the instruction counts")
        earlier = result.get("earlier_code", "the code before the fan-out's prefetching")
        lines += [
            f"Re-measured at this stop: {', '.join(f'`{k}`' for k in remeasured)}; {kept}",
            f"are from the run before, on {earlier}.",
            "",
        ]
    floor = result.get("wakeup_floor")
    if floor:
        lines += [
            f"*Floor*: one bare timer wake-up (a C loop of 10 ms `nanosleep`s) costs {floor['us_per_wakeup']} us of CPU",
            f"on this machine (median of {' / '.join(str(v) for v in floor['runs'])}; steal {floor['steal']} %), so",
            f"100 wake-ups a second cost {floor['us_per_wakeup'] / 100:.2f} % of a core before any work is done: a device",
            "thread at a 10 ms period, and an event loop woken for each 20 ms chunk, are most of a client's cost here.",
            "",
        ]
    if floors:
        lines += [
            "*Same sends from C* (`Benchmarks/scripts/send_floor.c`): one thread woken every 20 ms writes a 644-byte message",
            "(a 20 ms chunk and its WebSocket header) to each of N loopback TCP connections that a second process",
            "drains, as the load generator does; no server logic at all. It is the floor under one send per chunk",
            "per client on this machine: "
            + ", ".join(f"{n} connection{'s' if n != '1' else ''} {r['cpu']:.2f} % (runs {' / '.join(f'{v:.2f}' for v in r['runs'])}, steal {r['steal']} %)"
                        for n, r in floors.items()) + ".",
            "",
        ]
    receive = result.get("receive_floor")
    if receive:
        lines += [
            "*Same reads from C* (`send_floor.c ... receive`): the mirror case, the floor under one playback",
            "sender: one process waits in epoll and reads a 966-byte message (a 20 ms chunk of 24 kHz s16le in a",
            f"masked frame) every 20 ms from one loopback connection: {receive['cpu']:.2f} % (runs",
            f"{' / '.join(f'{v:.2f}' for v in receive['runs'])}, steal {receive['steal']} %).",
            "",
        ]
    if nio_floors:
        lines += [
            "*Same path on bare swift-nio* (`Benchmarks/Sources/nio-floor`, built by `make bench`): the server's own networking",
            "with the audio taken out, paired like the kept-open client rows. `nio-floor capture`: a thread woken every",
            "20 ms (as the capture thread is) hands a ready-made 644-byte binary frame to the client's event loop, which",
            "writes and flushes it from the frame encoder's context; `nio-floor playback`: the event loop reads each",
            "frame the sender sends, decoded and unmasked, and drops it. "
            + "; ".join(f"{mode}: +{r['cost']:.2f} % (pairs {' / '.join(f'{v:+.2f}' for v in r['pairs'])}, steal {r['steal']:.2f})"
                        for mode, r in nio_floors.items()) + ".",
            "",
        ]
    lines += [
        "*wake-ups/s*: context switches of all server threads per second (`/proc/PID/task/*/status`),",
        "which unlike CPU time do not depend on what else the machine runs.",
        "",
    ]
    if "click_1" in result:
        lines += [
            "| latency (pulse card) | p99, median of runs | runs | steal % | target |",
            "| --- | --- | --- | --- | --- |",
        ]
        for name, key in (("capture to client, 1 client", "click_1"), ("capture to client, 500 clients", "click_500")):
            row = result.get(key)
            if not row:
                continue
            lines.append(f"| {name} | {row['p99_ms']} ms | {' / '.join(str(v) for v in row['p99_runs'])} | "
                         f"{row['steal']} | <= 30 ms |")
        pb = result.get("playback_latency") or {"post_p99_ms": "n/a", "post_p99_runs": [], "post_steal": "n/a",
                                                "underruns": [], "xruns": [], "senders_steal": "n/a"}
        lines.append(f"| POST first byte to the card (100 uploads) | {pb['post_p99_ms']} ms | "
                     f"{' / '.join(str(v) for v in pb['post_p99_runs'])} | {pb['post_steal']} | <= 60 ms |")
        lines.append(f"| 8 jittered senders (0-15 ms), underruns / device xruns | "
                     f"{sum(pb['underruns'])} / {sum(pb['xruns'])} | {pb['underruns']} | {pb['senders_steal']} | 0 |")
        first = result.get("first_sound")
        if first:
            lines.append(f"| POST to first sound at the monitor, speaker stopped after idle / running (pulse) | "
                         f"{first['idle_ms']} / {first['running_ms']} ms | "
                         f"{' / '.join(str(v) for v in first['idle_runs'])} ; {' / '.join(str(v) for v in first['running_runs'])} | "
                         f"{first['steal']} | |")
        lines += [
            "",
            "Capture to client: `Benchmarks/scripts/bench_capture.py` (JSON clients, up to 5 of them measuring while the C",
            "generator holds the rest), arrival time minus the capture time of a chunk's last sample. POST and",
            "senders: `Benchmarks/scripts/bench_playback.py`.",
            "",
        ]
    if "callgrind" not in result:
        lines += [
            "Instruction counts per capture period (`--callgrind`) are not part of this run: valgrind 3.19",
            "(Debian 12) stops with an internal SIGSEGV on the Swift 6.3 binaries before `main`, with or without",
            "debug info, and the VM exposes no hardware counters to `perf stat`. Wake-ups per second stand in",
            "as the repeatable figure.",
            "",
        ]
    if "callgrind" in result:
        lines += [
            "Instructions per capture period (callgrind, loopback card, 10 ms periods, whole server process:",
            "device threads, event loops and clients' sockets, divided by the periods the card delivered):",
            "",
            "| capture clients | instructions / period | periods counted |",
            "| --- | --- | --- |",
        ]
        for clients, row in sorted(result["callgrind"].items(), key=lambda kv: int(kv[0])):
            lines.append(f"| {clients} | {row['instructions_per_period']:,} | {row['periods']} |")
        lines += ["", "The same counts are held to thresholds by the performance gate (`make bench-gate`).", ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=pathlib.Path, default=ROOT / ".build/release/audiogate")
    parser.add_argument("--nio-floor", type=pathlib.Path, default=ROOT / "Benchmarks/.build/release/nio-floor")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=pathlib.Path, help="write the raw figures here")
    parser.add_argument("--markdown", type=pathlib.Path, help="write the docs fragment here")
    parser.add_argument("--from-json", type=pathlib.Path, help="only render --markdown from saved figures")
    parser.add_argument("--callgrind-seconds", type=float, default=10)
    parser.add_argument("--callgrind-clients", default="0,1,100")
    parser.add_argument("--callgrind", action="store_true",
                        help="also count instructions per capture period (needs a valgrind that runs the binary)")
    parser.add_argument("--rows", default="", help="comma-separated row names to run (default: all)")
    parser.add_argument("--callgrind-only", action="store_true")
    args = parser.parse_args()
    if args.from_json:
        args.markdown.write_text(markdown(json.loads(args.from_json.read_text())))
        return
    loader = build_load_generator()
    rows = set(filter(None, args.rows.split(",")))

    def wanted(name):
        return not rows or name in rows

    result = {"binary": str(args.binary), "seconds": args.seconds, "runs": args.runs,
              "machine": {"cores": os.cpu_count()}}

    if not args.callgrind_only:
        if wanted("wakeup_floor"):
            result["wakeup_floor"] = wakeup_floor(args.runs)
        if wanted("send_floor"):
            result["send_floor"] = send_floor(args.runs, args.seconds, (1, 100, 500, 1000))
        if wanted("receive_floor"):
            result["receive_floor"] = receive_floor(args.runs, args.seconds)
        if wanted("nio_floor"):
            result["nio_floor"] = nio_floor(args.nio_floor, loader)
        extra = ["--max-capture-clients", "1000", "--max-connections", "2000", "--log-level", "error"]
        for device in ("loopback", "pulse"):
            if not any(wanted(name) for name in (f"{device}_open", f"{device}_open_capture1", f"{device}_open_playback1")):
                continue
            # Devices kept running with no client: what every period costs when nobody listens.
            with tempfile.TemporaryDirectory() as data:
                server = e2e.Server(args.binary, device=device, data_dir=data, extra=extra + ["--device-idle-ms", "0"])
                if not server.start(seconds=30):
                    raise RuntimeError(f"{device} server did not start")
                server.pid = server.process.pid
                try:
                    time.sleep(2)
                    result[f"{device}_open"] = idle_row(server, args)
                    if device == "loopback":
                        # One client on devices that run anyway: the client's own cost, nothing else.
                        if wanted("loopback_open_capture1"):
                            result["loopback_open_capture1"] = capture_row(server, args, loader, 1)
                            result["loopback_open_capture1"]["paired"] = paired_capture_cost(server, loader)
                        if wanted("loopback_open_playback1"):
                            result["loopback_open_playback1"] = playback_row(server, args)
                            result["loopback_open_playback1"]["paired"] = paired_playback_cost(server)
                finally:
                    server.stop()
        with tempfile.TemporaryDirectory() as data:
            server = e2e.Server(args.binary, device="loopback", data_dir=data, extra=extra)
            if not server.start(seconds=30):
                raise RuntimeError("loopback server did not start")
            server.pid = server.process.pid
            try:
                # No status reads from here on: a reader starts the capture device.
                time.sleep(DEVICE_IDLE_SECONDS + 2)
                if wanted("loopback_idle"):
                    result["loopback_idle"] = idle_row(server, args)
                if wanted("loopback_capture1"):
                    result["loopback_capture1"] = capture_row(server, args, loader, 1)
                if wanted("loopback_playback1"):
                    result["loopback_playback1"] = playback_row(server, args)
            finally:
                server.stop()
        with tempfile.TemporaryDirectory() as data:
            server = e2e.Server(args.binary, device="pulse", data_dir=data, extra=extra)
            if not server.start(capture=True, seconds=30):
                raise RuntimeError("pulse server did not start")
            server.pid = server.process.pid
            try:
                time.sleep(DEVICE_IDLE_SECONDS + 2)
                if wanted("pulse_idle"):
                    result["pulse_idle"] = idle_row(server, args)
                if wanted("pulse_capture1"):
                    result["pulse_capture1"] = capture_row(server, args, loader, 1)
                if wanted("pulse_playback1"):
                    result["pulse_playback1"] = playback_row(server, args)
                for clients in (100, 500, 1000):
                    if wanted(f"pulse_capture{clients}"):
                        result[f"pulse_capture{clients}"] = capture_row(server, args, loader, clients)
                if wanted("click_1"):
                    result["click_1"] = click_row(server, args, 1)
                if wanted("click_500"):
                    result["click_500"] = click_row(server, args, 500)
                if wanted("playback_latency"):
                    result["playback_latency"] = playback_latency_row(server, args)
            finally:
                server.stop()
        if wanted("first_sound"):
            result["first_sound"] = first_sound_row(args)
        print(json.dumps(result), flush=True)
        if args.json:
            # Saved before the slow callgrind part, so a failure there keeps these rows.
            args.json.write_text(json.dumps(result, indent=2))
    if args.callgrind:
        counts = [int(n) for n in args.callgrind_clients.split(",")]
        try:
            result["callgrind"] = callgrind_counts(args.binary, loader, counts, args.callgrind_seconds)
        except (RuntimeError, subprocess.CalledProcessError) as error:
            print(f"bench-idle: callgrind counts failed: {error}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.markdown:
        args.markdown.write_text(markdown(result))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
