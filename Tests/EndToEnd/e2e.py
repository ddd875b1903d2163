"""What the end-to-end checks share: the pass/fail tally and its closing line, CPU steal and load
from /proc/stat with the retry-once-when-stealing rule, the server under test, a private network
namespace and multicast DNS inside it (enter_namespace, PrivateAvahi), the recorder of
what the test card hears, tone and WAV helpers, the Snapcast wire format of fake servers, and what the agent-framework checks share (the
loudspeaker heard through the audiogate client, tone runs, the voice examples).

A check in this folder imports it as `import e2e` (Python puts a script's own folder on sys.path,
so `python Tests/EndToEnd/check_x.py` works from anywhere); scripts elsewhere add this folder to
sys.path first.
"""
import asyncio
import grp
import json
import os
import pathlib
import pwd
import shlex
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import wave

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The checks that build the server run `swift build`, which finds WebRTC's audio processing library
# through its pkg-config file (as scripts/deps-env.sh sets for the shell scripts).
os.environ["PKG_CONFIG_PATH"] = os.pathsep.join(
    filter(None, [str(ROOT / ".deps/webrtc-audio-processing-2.1/lib/pkgconfig"), os.environ.get("PKG_CONFIG_PATH")])
)
DEFAULT_BINARY = ROOT / ".build/debug/audiogate"
LOG_LEVEL = os.environ.get("AUDIOGATE_LOG_LEVEL", "warning")
RATE = 16000  # what the recorder listens at

# ---- the tally: one line per check, and the closing `N passed, N failed`

_results = []


def check(ok, message):
    """Prints `ok   message` or `FAIL message` and counts it; returns ok."""
    ok = bool(ok)
    print(("ok   " if ok else "FAIL ") + message, flush=True)
    _results.append((ok, message))
    return ok


def failures():
    """The messages of the checks that failed so far."""
    return [message for ok, message in _results if not ok]


def failures_since(point):
    """The messages of the checks that failed since mark() returned `point`."""
    return [message for ok, message in _results[point:] if not ok]


def mark():
    """A point in the tally to go back to when an attempt is run again."""
    return len(_results)


def rewind(to):
    """Forgets the checks counted since `to` (an attempt that earned a second try)."""
    del _results[to:]


def summary():
    """Prints the closing `N passed, N failed` line; returns the exit status (1 if any failed)."""
    failed = len(failures())
    print(f"{len(_results) - failed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


def finish():
    """Prints the closing line and exits with its status."""
    sys.exit(summary())


# ---- /proc/stat: hypervisor steal and CPU load

STEAL_LIMIT = 5  # percent of the CPU taken by the hypervisor that makes a real-time failure suspect
# The hypervisor takes the CPU in bursts: 5 % over a 100 s attempt can be 5 s of nearly all of it,
# enough to bend a real-time figure, so a burst over this share of any STEAL_WINDOW_S counts too.
# 10 % of a 5 s window is a whole CPU-second taken from two CPUs: stolen in bursts, it holds a
# device thread past a playback buffer of tens of milliseconds.
STEAL_WINDOW_S = 5
WINDOW_STEAL_LIMIT = 10


def cpu_sample():
    """(steal, idle + iowait, total) jiffies from the aggregate cpu line of /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (fields[7] if len(fields) > 7 else 0), fields[3] + fields[4], sum(fields[:8])


def steal_percent(before, after):
    """Percent of CPU time the hypervisor took between two cpu_sample()s."""
    total = after[2] - before[2]
    return 100 * (after[0] - before[0]) / total if total > 0 else 0.0


def busy_percent(before, after):
    """Percent of CPU time spent working (neither idle, waiting for I/O nor stolen)."""
    total = after[2] - before[2]
    return 100 - 100 * (after[1] - before[1]) / total - steal_percent(before, after) if total > 0 else 0.0


class Attempt:
    """One run of a real-time check, with the CPU's steal and load over it (measured from its start
    until `steal`, `busy` or `retry()` is first asked, or the attempt ends), and the most stolen
    over any STEAL_WINDOW_S of it (a sampler thread reads /proc/stat twice a second)."""

    SAMPLE_S = 0.5

    def __init__(self, number, busy_limit):
        self.number = number
        self.busy_limit = busy_limit
        self.held = []
        self.before = cpu_sample()
        self.after = None
        self._samples = [self.before]
        self._peak = 0.0
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, name="steal-sampler", daemon=True)
        self._sampler.start()

    def _sample(self):
        span = round(STEAL_WINDOW_S / self.SAMPLE_S)
        while not self._stop.wait(self.SAMPLE_S):
            self._samples.append(cpu_sample())
            self._samples = self._samples[-(span + 1):]
            self._peak = max(self._peak, steal_percent(self._samples[0], self._samples[-1]))

    def _end(self):
        if self.after is None:
            self._stop.set()
            self._sampler.join()
            self.after = cpu_sample()

    @property
    def steal(self):
        self._end()
        return steal_percent(self.before, self.after)

    @property
    def peak_steal(self):
        """The most the hypervisor took over any STEAL_WINDOW_S of the attempt, in percent."""
        self._end()
        return max(self._peak, self.steal)

    @property
    def busy(self):
        self._end()
        return busy_percent(self.before, self.after)

    def describe(self):
        """The attempt's steal, its worst window and the CPUs' load, for a line beside its figures."""
        return (f"{self.steal:.1f} % (at most {self.peak_steal:.0f} % over {STEAL_WINDOW_S} s), "
                f"CPUs busy {self.busy:.0f} %" + "".join(f"; {why}" for why in self.held))

    def loaded(self):
        """Whether the hypervisor stole more than STEAL_LIMIT % of the CPU over the attempt or more
        than WINDOW_STEAL_LIMIT % over a window of it, a real-time thread was held past its buffer
        (`held`), or, with a busy limit, the CPUs were busier than it."""
        return (self.steal > STEAL_LIMIT or self.peak_steal > WINDOW_STEAL_LIMIT or bool(self.held)
                or (self.busy_limit is not None and self.busy > self.busy_limit))

    def retry(self):
        """Whether a failure of this attempt earns a second one: the first attempt, while loaded."""
        return self.number == 1 and self.loaded()


# The attempt running now, which `held` marks.
_attempt = None


def held(why):
    """Marks the running real-time attempt as one in which the machine held a real-time thread past
    its buffer: a playback device underran that the check did not make underrun. The test card's
    daemon runs its sink at real-time priority and, stopped for 50 ms or more, drains every stream
    on it at once when it resumes (each player's 40 ms buffer underruns together); the host taking
    the CPU in a burst does that while a 5 s steal window reads a few percent. A failure then earns
    the retry that steal does."""
    if _attempt is not None:
        _attempt.held.append(why)


def note_underruns(players, before, when):
    """Calls `held` for each (name, server) of `players` whose playback device underran since its
    `before` counts (`Server.playback_counts()`)."""
    for (name, server), counts in zip(players, before):
        now = server.playback_counts()
        if counts is not None and now is not None and now["xruns"] > counts["xruns"]:
            held(f"the {name} playback device underran {now['xruns'] - counts['xruns']} time(s) {when}")


def attempts(busy_limit=None):
    """The attempts of a real-time check: a failure while the CPU was taken away earns one more.

        for attempt in e2e.attempts():
            ...run once...
            if passed or not attempt.retry():
                break
    """
    global _attempt
    for number in (1, 2):
        attempt = Attempt(number, busy_limit)
        _attempt = attempt
        try:
            yield attempt
        finally:
            attempt._end()
            _attempt = None


def real_time(run, scratch, busy_limit=90, report=False):
    """Runs one real-time part through attempts(): `run(directory)` in a fresh folder of `scratch`,
    and once more, its first tally forgotten, when it failed while the CPU was taken away. `report`
    prints each attempt's steal and load, for parts whose figures are read beside them."""
    for attempt in attempts(busy_limit):
        point = mark()
        with tempfile.TemporaryDirectory(dir=scratch) as directory:
            run(directory)
        if report:
            print(f"steal over the attempt: {attempt.describe()}", flush=True)
        if not failures_since(point) or not attempt.retry():
            return
        print(f"retrying: steal {attempt.describe()}", flush=True)
        rewind(point)


# ---- the server under test

# About 3,900 characters for `/v1/say`: minutes of speech, far more than a stream's 60 s queue holds.
LONG_TEXT = " ".join(["The gateway keeps every client served while a long text is being spoken."] * 52)


async def http(port, method, path, body=b"", content_type="application/json", timeout=8):
    """One request on a fresh connection (asyncio): (status, JSON body or raw bytes, seconds to the
    answer); status None when no answer came within `timeout` seconds."""

    async def exchange():
        started = time.monotonic()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
                    f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n")
            writer.write(head.encode() + body)
            await writer.drain()
            response = await reader.read()
        finally:
            writer.close()
        elapsed = time.monotonic() - started
        status_line, _, rest = response.partition(b"\r\n")
        parts = status_line.split()
        if len(parts) < 2:
            return None, None, elapsed
        payload = rest.partition(b"\r\n\r\n")[2]
        try:
            return int(parts[1]), json.loads(payload or b"null"), elapsed
        except ValueError:
            return int(parts[1]), payload[:200], elapsed

    try:
        return await asyncio.wait_for(exchange(), timeout)
    except (asyncio.TimeoutError, OSError):
        return None, None, timeout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(process, seconds=5):
    """Terminates `process` and reaps it, killing it if it outlives `seconds`."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for(predicate, seconds, interval=0.05):
    """The first truthy value of predicate() within `seconds`, or None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None


def add_binary_argument(parser):
    """--binary: the server to test (AUDIOGATE_BINARY, default .build/debug/audiogate)."""
    parser.add_argument("--binary", type=pathlib.Path,
                        default=pathlib.Path(os.environ.get("AUDIOGATE_BINARY", DEFAULT_BINARY)),
                        help="the audiogate binary (AUDIOGATE_BINARY, default .build/debug/audiogate)")


class Server:
    """`audiogate serve` on a free 127.0.0.1 port (or `port`): start() waits until /healthz answers
    (and, with capture=True, until capture runs); stop() ends it with SIGTERM, killing it when it
    does not exit within 5 s. Its output goes to the terminal, or to the file `log`. Without
    `data_dir` its recordings go to a temporary folder removed by stop(), never to the user's home.
    `env` adds variables (`AUDIOGATE_*` settings) to the inherited environment."""

    def __init__(self, binary, device="pulse", *, data_dir=None, port=None, log_level=LOG_LEVEL, log=None,
                 extra=(), env=None):
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        argv = [str(binary), "serve", "--device", device, "--host", "127.0.0.1", "--port", str(self.port)]
        self.scratch = None
        if data_dir is None:
            self.scratch = tempfile.TemporaryDirectory(prefix="audiogate-e2e-")
            data_dir = self.scratch.name
        argv += ["--data-dir", str(data_dir)]
        if log_level:
            argv += ["--log-level", log_level]
        self.argv = argv + list(extra)
        self.env = {**os.environ, **env} if env else None
        self.log = pathlib.Path(log) if log else None
        self.process = None

    def start(self, capture=False, seconds=10):
        """Starts the server; returns True once it answers (and its capture runs, if asked),
        False after stopping it when it exited or did not answer within `seconds`."""
        out = open(self.log, "w") if self.log else None
        try:
            self.process = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT if out else None, env=self.env)
        finally:
            if out:
                out.close()
        ready = wait_for(lambda: self.process.poll() is not None or self._ready(capture), seconds)
        if ready and self.process.poll() is None:
            return True
        self.stop()
        return False

    def _ready(self, capture):
        try:
            if self.get("/healthz").get("status") != "ok":
                return False
            return not capture or self.get("/v1/status")["capture"]["state"] == "running"
        except (OSError, ValueError, KeyError):
            return False

    def running(self):
        return self.process is not None and self.process.poll() is None

    def log_text(self):
        """The server's output so far, when it goes to a file."""
        try:
            return self.log.read_text() if self.log else ""
        except OSError:
            return ""

    # The playback device's lines at debug level: its recoveries and the dating of its clock.
    DEVICE_LINES = ("playback recovered", "playback clock", "playback latency", "playback device")

    def device_lines(self, since=None):
        """The playback device's log lines (the server run at debug level), from the wall-clock
        second `since` (time.time()) on: what a jump in a real-time figure is read beside."""
        lines = [line for line in self.log_text().splitlines() if any(k in line for k in self.DEVICE_LINES)]
        if since is not None:
            # The server's log handler stamps each line in local time, to the second.
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since))
            lines = [line for line in lines if line[:19] >= stamp]
        return lines

    def playback_counts(self):
        """The playback device's xruns and buffers found played out, from /v1/status (None when
        the server does not answer)."""
        try:
            playback = self.get("/v1/status")["playback"]
            return {"xruns": playback["xruns"], "ran_empty": playback["ran_empty"]}
        except (OSError, ValueError, KeyError):
            return None

    def get(self, path):
        with urllib.request.urlopen(self.base + path, timeout=5) as response:
            return json.load(response)

    def request(self, method, path, body, content_type="application/json"):
        """(status, JSON answer) of a request, error answers included; `body` bytes go as they are,
        anything else as JSON."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data, headers={"Content-Type": content_type},
                                         method=method)
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                status, text = response.status, response.read()
        except urllib.error.HTTPError as error:
            with error:
                status, text = error.code, error.read()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text[:200]

    def rss_mb(self):
        """The server process's resident memory in MB (VmRSS)."""
        for line in pathlib.Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def quiet(self, seconds=5):
        """Waits until nothing is queued for playback and the microphone hears silence."""
        def calm():
            status = self.get("/v1/status")
            return status["playback"]["queued_ms"] == 0 and status["level"]["rms_dbfs"] < -60
        return wait_for(calm, seconds)

    def stop(self):
        if self.process is not None:
            stop_process(self.process)
        if self.scratch is not None and (self.process is None or self.process.poll() is not None):
            self.scratch.cleanup()
            self.scratch = None


# ---- multicast DNS inside a private network namespace: avahi-daemon on a D-Bus system bus of its own

def enter_namespace(mark):
    """Runs this script again in a private network namespace and a mount namespace of its own (`unshare
    -nm` as root, `unshare -rnm` otherwise), `mark` set to 1 in its environment; returns in that child,
    with its loopback up and the machine's D-Bus system bus out of sight: an empty tmpfs on /run/dbus
    and no DBUS_SYSTEM_BUS_ADDRESS. A network namespace does not separate unix sockets, so without that
    an audiogate publishing through libavahi-client would reach the machine's avahi-daemon, which
    announces on the real network; here it reaches a PrivateAvahi's bus or none."""
    if os.environ.get(mark) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        if os.path.isdir("/run/dbus"):
            subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "audiogate-no-system-bus", "/run/dbus"],
                           check=True)
        os.environ.pop("DBUS_SYSTEM_BUS_ADDRESS", None)
        return
    unshare = ["unshare", "-nm" if os.geteuid() == 0 else "-rnm", "--propagation", "private"]
    sys.stdout.flush()
    os.execvpe(unshare[0], unshare + [sys.executable, *sys.argv], dict(os.environ, **{mark: "1"}))


class PrivateAvahi:
    """avahi-daemon on a D-Bus system bus of its own, answering on a veth pair made for it, for a check
    that already runs in a private network namespace (enter_namespace()): what audiogate publishes
    through libavahi-client is answered by multicast DNS to browsers in the namespace (python-zeroconf,
    avahi-browse, aiosendspin's server) and to nothing outside it. Its files go to a temporary folder
    in `directory` (the system's temporary folder by default; not under /run).

        with e2e.PrivateAvahi(scratch) as avahi:   # or start() ... stop()
            ...audiogate, avahi-publish, a browser...

    start() refuses (RuntimeError) unless the namespace has no interface but its loopback, then:
    - makes the veth pair INTERFACE/PEER, INTERFACE with ADDRESS and a route for 224.0.0.0/4 (a
      socket that leaves the interface to the kernel, as python-zeroconf's InterfaceChoice.Default
      in aiosendspin's server, joins and sends there; no default route, so anything else still finds
      no network). A veth rather than a dummy: dummy is a module some kernels lack, while container
      runtimes need veth. Multicast sent on INTERFACE loops back to the namespace's sockets; the copy
      that crosses to PEER (up, no address) goes no further;
    - `dbus-daemon --nofork --print-address` with a system-bus configuration in a temporary folder
      (a unix socket there, EXTERNAL authentication, a policy that lets anyone own and call anything);
    - `avahi-daemon --no-drop-root --no-chroot --no-rlimits --debug` with a configuration of its own:
      INTERFACE only, IPv4 only, host name `host_name`, D-Bus on, wide-area, reflector and the host's
      HINFO, workstation and domain records off. The host name's address records stay on: a service's
      SRV record names that host, and a browser resolves it to ADDRESS through its A record. The
      daemon runs in a mount namespace of its own (`unshare -m`) with an empty tmpfs on /run, where it
      writes its pid file and its socket (never on the machine's /run, and a daemon running there
      does not stop it), and one on /etc/avahi/services so no static service of the machine's joins
      in. Under `unshare -r`, where the user avahi has no id, it also sees a passwd and group naming
      avahi root (it wants its runtime folder owned by avahi even with --no-drop-root). It is ready
      once it logs `Server startup complete` (its host name probed on INTERFACE), about 1 s.
    While it runs, DBUS_SYSTEM_BUS_ADDRESS in os.environ names the private bus (libdbus's system bus:
    audiogate, avahi-publish and avahi-browse started from here talk to this daemon); stop() ends
    both daemons, removes the veth pair and puts the variable back. `seconds` is how long start() took;
    log_text() is the daemon's output."""

    INTERFACE = "ag0"
    PEER = "ag1"
    ADDRESS = "10.213.0.1"
    PREFIX = 24
    READY = "Server startup complete."

    def __init__(self, directory=None, host_name="audiogate-e2e"):
        self.directory = directory
        self.host_name = host_name
        self.scratch = None
        self.bus = None
        self.daemon = None
        self.address = None
        self.seconds = None
        self.log = None
        self._interface_made = False
        self._environ_set = False
        self._previous_address = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        started = time.monotonic()
        _refuse_shared_network()
        self.scratch = tempfile.TemporaryDirectory(prefix="audiogate-avahi-", dir=self.directory)
        folder = pathlib.Path(self.scratch.name).resolve()
        try:
            if folder == pathlib.Path("/run") or pathlib.Path("/run") in folder.parents:
                raise RuntimeError(f"PrivateAvahi: {folder} is under /run, which the daemon sees as an empty tmpfs")
            self._make_interface()
            self._start_bus(folder)
            self._start_daemon(folder)
        except BaseException:
            self.stop()
            raise
        self._previous_address = os.environ.get("DBUS_SYSTEM_BUS_ADDRESS")
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = self.address
        self._environ_set = True
        self.seconds = time.monotonic() - started
        return self

    def _make_interface(self):
        # The pair appears in the namespace only once `link add` succeeded; mark it first so a
        # failure halfway (an address, the route) still removes it.
        _ip("link", "add", self.INTERFACE, "type", "veth", "peer", "name", self.PEER)
        self._interface_made = True
        _ip("link", "set", self.PEER, "up")
        _ip("link", "set", self.INTERFACE, "multicast", "on", "up")
        _ip("addr", "add", f"{self.ADDRESS}/{self.PREFIX}", "dev", self.INTERFACE)
        _ip("route", "add", "224.0.0.0/4", "dev", self.INTERFACE)
        # A veth has its carrier once both ends are up: wait for it, so the daemon finds the
        # interface running from its first enumeration.
        if not wait_for(lambda: "LOWER_UP" in _ip("link", "show", "dev", self.INTERFACE), 5):
            raise RuntimeError(f"PrivateAvahi: {self.INTERFACE} has no carrier: "
                               + _ip("link", "show", "dev", self.INTERFACE).strip())

    def _start_bus(self, folder):
        socket_path = folder / "system_bus_socket"
        config = folder / "bus.conf"
        config.write_text(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket_path}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
""")
        out_path, err_path = folder / "bus.out", folder / "bus.log"
        with open(out_path, "w") as out, open(err_path, "w") as err:
            self.bus = subprocess.Popen(["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address"],
                                        stdout=out, stderr=err, stdin=subprocess.DEVNULL)

        def printed():
            text = out_path.read_text()
            return text.partition("\n")[0] if text.endswith("\n") else None

        # The address is printed once the socket listens.
        self.address = wait_for(lambda: self.bus.poll() is not None or printed(), 10) and printed()
        if not self.address:
            raise RuntimeError(f"PrivateAvahi: dbus-daemon did not start (exit status {self.bus.poll()}): "
                               + err_path.read_text().strip())

    def _start_daemon(self, folder):
        config = folder / "avahi-daemon.conf"
        config.write_text(f"""[server]
host-name={self.host_name}
domain-name=local
use-ipv4=yes
use-ipv6=no
allow-interfaces={self.INTERFACE}
enable-dbus=yes

[wide-area]
enable-wide-area=no

[publish]
publish-addresses=yes
publish-hinfo=no
publish-workstation=no
publish-domain=no
publish-aaaa-on-ipv4=no
publish-a-on-ipv6=no

[reflector]
enable-reflector=no
""")
        self.log = folder / "avahi-daemon.log"
        steps = ["mount -t tmpfs -o mode=0755 audiogate-avahi-run /run",
                 ("{ [ ! -d /etc/avahi/services ] || "
                  "mount -t tmpfs -o mode=0755 audiogate-avahi-services /etc/avahi/services; }")]
        if not _avahi_user_mapped():
            # The daemon insists on owning its runtime folder as the user avahi, even with
            # --no-drop-root; under `unshare -r` only root has an id. It sees avahi as root instead.
            passwd, group = folder / "passwd", folder / "group"
            passwd.write_text("root:x:0:0:root:/root:/bin/sh\navahi:x:0:0:avahi:/run/avahi-daemon:/usr/sbin/nologin\n")
            group.write_text("root:x:0:\navahi:x:0:\n")
            steps += [f"mount --bind {shlex.quote(str(passwd))} /etc/passwd",
                      f"mount --bind {shlex.quote(str(group))} /etc/group"]
        argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", " && ".join(steps + ['exec "$@"']), "sh",
                "avahi-daemon", f"--file={config}", "--no-drop-root", "--no-chroot", "--no-rlimits", "--debug"]
        with open(self.log, "w") as out:
            self.daemon = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.address))
        wait_for(lambda: self.daemon.poll() is not None or self.READY in self.log_text(), 15)
        text = self.log_text()
        if self.daemon.poll() is not None or self.READY not in text:
            raise RuntimeError(f"PrivateAvahi: avahi-daemon did not start (exit status {self.daemon.poll()}): "
                               + text.strip())
        if f"interface {self.INTERFACE}.IPv4" not in text:
            raise RuntimeError(f"PrivateAvahi: avahi-daemon does not answer on {self.INTERFACE}: " + text.strip())

    def log_text(self):
        try:
            return self.log.read_text() if self.log else ""
        except OSError:
            return ""

    def stop(self):
        if self.daemon is not None:
            stop_process(self.daemon)
            self.daemon = None
        if self.bus is not None:
            stop_process(self.bus)
            self.bus = None
        if self._interface_made:
            subprocess.run(["ip", "link", "del", self.INTERFACE], capture_output=True, check=False)
            self._interface_made = False
        if self._environ_set:
            if self._previous_address is None:
                os.environ.pop("DBUS_SYSTEM_BUS_ADDRESS", None)
            else:
                os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = self._previous_address
            self._environ_set = False
        if self.scratch is not None:
            self.scratch.cleanup()
            self.scratch = None


def _ip(*args):
    """`ip ARGS`' output; RuntimeError with its complaint when it fails."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def _avahi_user_mapped():
    """Whether the user and group avahi exist and have ids in this user namespace."""
    def mapped(number, table):
        for line in pathlib.Path(f"/proc/self/{table}").read_text().splitlines():
            inside, _, count = (int(field) for field in line.split())
            if inside <= number < inside + count:
                return True
        return False

    try:
        return mapped(pwd.getpwnam("avahi").pw_uid, "uid_map") and mapped(grp.getgrnam("avahi").gr_gid, "gid_map")
    except KeyError:
        return False


def _refuse_shared_network():
    """RuntimeError unless this process's network namespace is a private one: not PID 1's (where
    that can be read) and with no interface but loopback, so nothing announced here leaves it."""
    try:
        shared = os.stat("/proc/self/ns/net").st_ino == os.stat("/proc/1/ns/net").st_ino
    except OSError:  # not ours to read (not root, or PID 1 is a container's init): the interfaces tell
        shared = False
    others = [name for _, name in socket.if_nameindex() if name != "lo"]
    reasons = (["it is PID 1's"] if shared else []) + ([f"it has {', '.join(others)}"] if others else [])
    if reasons:
        raise RuntimeError("PrivateAvahi runs only in a private network namespace with nothing but its loopback "
                           "(unshare -n): " + " and ".join(reasons))


# ---- what the test card hears, and what plays into it

class Listener:
    """The server's own capture over HTTP (16 kHz mono s16le) in the background: what the test
    card's monitor hears. Endless until stop(), or `seconds` long."""

    def __init__(self, server, seconds=None, rate=RATE):
        self.rate = rate
        self.data = bytearray()
        self.done = threading.Event()
        url = f"{server.base}/v1/capture?rate={rate}&channels=1&format=s16le"
        if seconds is not None:
            url += f"&seconds={seconds}"
        self.response = urllib.request.urlopen(url, timeout=10 if seconds is None else seconds + 10)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        wait_for(lambda: len(self.data) >= rate // 25, 3)

    def _read(self):
        try:
            while not self.done.is_set():
                block = self.response.read(self.rate // 25)  # 20 ms
                if not block:
                    break
                self.data += block
        except OSError:  # the stream was closed by stop()
            pass

    def seconds(self):
        return len(self.data) / (2 * self.rate)

    def wait(self, seconds):
        """Waits up to `seconds` for a bounded capture to end."""
        self.thread.join(seconds)

    def stop(self):
        """Ends the capture; returns what it heard as floats."""
        self.done.set()
        self.thread.join(5)
        self.response.close()
        return np.frombuffer(bytes(self.data[:len(self.data) // 2 * 2]), dtype="<i2") / 32768.0


def room(path):
    """Plays a file into the test card, as if someone in the room made the sound."""
    return subprocess.Popen(["paplay", str(path)])


def stop_room(player):
    if player.poll() is None:
        player.terminate()
    player.wait()


class Recorder:
    """The null sink's monitor (48 kHz stereo) with parec, each block stamped with time.monotonic()
    when it was read, so a sample's time is known to within a block."""

    RATE = 48000

    def __init__(self):
        self.process = subprocess.Popen(
            ["parec", "-d", "speaker.monitor", "--raw", "--format=s16le", "--rate=48000", "--channels=2",
             "--latency-msec=10"], stdout=subprocess.PIPE)
        self.blocks = []
        self.first = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        # What is measured from here on must be in the recording: wait for parec's first block.
        if not self.first.wait(5):
            print(f"recorder: parec delivered nothing within 5 s (exit status {self.process.poll()})", flush=True)

    def _read(self):
        while True:
            data = self.process.stdout.read(1920)
            if not data:
                self.first.set()
                return
            self.blocks.append((time.monotonic(), data))
            self.first.set()

    def stop(self):
        self.process.terminate()
        self.process.wait()
        self.thread.join(2)

    def samples(self):
        """(left channel in [-1, 1], monotonic time of sample 0)."""
        data = b"".join(d for _, d in self.blocks)
        x = np.frombuffer(data[: len(data) // 4 * 4], dtype="<i2").reshape(-1, 2)[:, 0] / 32768.0
        # The last block's read time is when its last sample was available.
        last_time = self.blocks[-1][0] if self.blocks else time.monotonic()
        return x, last_time - len(x) / self.RATE


# ---- sync to the sample: players into one sink, a one-sample impulse every 500 ms

PEAK_TOLERANCE = 0.03  # how far a heard peak may be from a player's level (or a sum of levels)


def impulse_clusters(x, t0, peaks, rate, join_s=0.05):
    """[(time, [sample index or None per player])]: for each impulse in `x` (sample 0 at monotonic
    `t0`), where the player of each level in `peaks` put its impulse. Loud samples less than `join_s`
    apart are one impulse; a sample at the sum of several levels is theirs all (they landed on one
    sample). A player's index is None unless exactly one of the impulse's samples holds its level.
    The levels' subset sums must lie more than twice PEAK_TOLERANCE apart, so every peak has one
    reading (levels halving each time, as 0.5, 0.25, 0.125, 0.0625, do)."""
    sums = {(): 0.0}
    for player, peak in enumerate(peaks):
        sums.update({(*members, player): total + peak for members, total in list(sums.items())})
    del sums[()]
    levels = sorted(sums.values())
    if min(np.diff(levels), default=1.0) <= 2 * PEAK_TOLERANCE:
        raise ValueError(f"impulse levels {peaks} cannot be told apart: their sums are {levels}")
    loud = np.flatnonzero(np.abs(x) > 0.04)
    clusters = []
    for i in loud:
        if clusters and i - clusters[-1][-1] < rate * join_s:
            clusters[-1].append(i)
        else:
            clusters.append([i])
    results = []
    for c in clusters:
        heard = [[] for _ in peaks]
        for i in c:
            members = [m for m, total in sums.items() if abs(x[i] - total) < PEAK_TOLERANCE]
            for player in members[0] if members else ():
                heard[player].append(i)
        results.append((t0 + c[0] / rate, [found[0] if len(found) == 1 else None for found in heard]))
    return results


def impulse_offsets(clusters, reference, other, rate):
    """[(time, offset ms or None)] of impulse_clusters(): player `other`'s impulse minus player
    `reference`'s, None when either was not heard once."""
    return [(t, None if at[reference] is None or at[other] is None else (at[other] - at[reference]) * 1000 / rate)
            for t, at in clusters]


def impulse_pairs(x, t0, reference_peak, other_peak, rate):
    """[(time, offset ms or None)]: for each impulse in `x` (sample 0 at monotonic `t0`), the second
    player's peak (height `other_peak`) minus the reference's (`reference_peak`); 0 when they land on
    one sample (their sum), None when the cluster is not one peak of each."""
    return impulse_offsets(impulse_clusters(x, t0, (reference_peak, other_peak), rate), 0, 1, rate)


def sync_figures(pairs, start, end):
    """Count, unpaired, median, 95th percentile of |offset| and worst of the pairs in [start, end)."""
    offsets = [o for t, o in pairs if start <= t < end and o is not None]
    missing = sum(1 for t, o in pairs if start <= t < end and o is None)
    if not offsets:
        return None
    return dict(count=len(offsets), missing=missing, median=float(np.median(offsets)),
                p95=float(np.percentile(np.abs(offsets), 95)), worst=float(np.max(np.abs(offsets))))


def describe_sync(figures):
    if figures is None:
        return "no impulse pairs heard"
    return (f"median {figures['median']:+.3f} ms, p95 |offset| {figures['p95']:.3f} ms, worst {figures['worst']:.3f} ms "
            f"over {figures['count']} impulses ({figures['missing']} unpaired)")


# ---- tones and WAV files

def tone(frequency, seconds, rate, amplitude=0.3, channels=1):
    """A sine with 10 ms fades as int16, `channels` interleaved."""
    t = np.arange(int(seconds * rate)) / rate
    fade = np.minimum(1.0, np.minimum(t, seconds - t) / 0.01)
    mono = np.round(32767 * amplitude * fade * np.sin(2 * np.pi * frequency * t)).astype("<i2")
    return np.repeat(mono, channels)


def write_wav(path, samples, rate, channels=1):
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(np.asarray(samples).astype("<i2").tobytes())


def dbfs(x):
    x = np.asarray(x, dtype=np.float64)
    rms = np.sqrt(np.mean(x * x)) if len(x) else 0.0
    return 20 * np.log10(rms) if rms > 1e-6 else -120.0


def tone_track(x, frequency, rate=RATE, window_ms=20):
    """The level in dBFS (peak amplitude) of `frequency` in each window; `frequency` must be a
    multiple of the window's bin width (50 Hz at 20 ms)."""
    n = rate * window_ms // 1000
    hann = np.hanning(n)
    k = round(frequency * n / rate)
    levels = []
    for start in range(0, len(x) - n + 1, n):
        amplitude = 2 * abs(np.fft.rfft(x[start:start + n] * hann)[k]) / hann.sum()
        levels.append(20 * np.log10(max(amplitude, 1e-6)))
    return np.array(levels)


def tone_seconds(x, frequency, rate=RATE, threshold_db=-30, window_ms=20):
    """How long `frequency` sounds above threshold_db (peak amplitude), in 20 ms windows."""
    return int(np.sum(tone_track(x, frequency, rate, window_ms) > threshold_db)) * window_ms / 1000


# ---- the Snapcast wire format, for fake servers

# The 26-byte base message: type, id, refersTo, sent (sec, usec), received (sec, usec), size.
SNAPCAST_HEADER = struct.Struct("<HHHiiiiI")


def snapcast_message(kind, body, refers_to=0, sent=(0, 0)):
    """A Snapcast message of type `kind` (3 ServerSettings, 1 CodecHeader, 2 WireChunk, 4 Time)."""
    return SNAPCAST_HEADER.pack(kind, 0, refers_to, sent[0], sent[1], 0, 0, len(body)) + body


def snapcast_blob(data):
    """A uint32 length and the bytes."""
    return struct.pack("<I", len(data)) + data


def snapcast_tv(seconds, microseconds):
    """A timestamp as on the wire: two int32."""
    return struct.pack("<ii", seconds, microseconds)


def wav_header(rate, channels, bits):
    """A 44-byte streaming RIFF/WAVE header (sizes unknown), as snapserver's pcm codec header;
    fields that do not fit wrap, so a test can send absurd ones."""
    align = channels * bits // 8
    return (b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, channels & 0xFFFF,
            rate & 0xFFFFFFFF, (rate * align) & 0xFFFFFFFF, align & 0xFFFF, bits & 0xFFFF)
            + b"data" + struct.pack("<I", 0xFFFFFFFF))


# ---- the agent-framework checks: the loudspeaker heard through the audiogate client, tone runs, the
# voice examples (the audiogate package is imported by the caller: only the framework venvs have it)

class SpeakerMonitor:
    """A capture without processing through an `audiogate.Client`: the test card's loudspeaker,
    each sample on the monotonic clock (chunks carry their CLOCK_MONOTONIC capture time)."""

    def __init__(self, client, rate=RATE):
        self.client = client
        self.rate = rate
        self.chunks = []
        self.task = None
        self.capture = None

    async def start(self):
        self.capture = self.client.capture(rate=self.rate, chunk_ms=10, aec=False)
        await self.capture.open()
        self.task = asyncio.create_task(self._read())

    async def _read(self):
        async for chunk in self.capture.chunks():
            self.chunks.append(chunk)

    async def stop(self):
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.capture.close()

    def live(self):
        """Whether the newest chunk is at most 60 ms old (a new capture can take a while to flow)."""
        return bool(self.chunks) and time.monotonic() - self.chunks[-1].timestamp_ms / 1000 < 0.06

    def since(self, start):
        """(time of the first sample, float samples) from the chunk holding `start` on; a gap in the
        capture (a jump in seq) is filled with silence so sample times stay right."""
        chunks = [c for c in self.chunks if c.timestamp_ms / 1000 + c.duration_ms / 1000 > start]
        if not chunks:
            return start, np.zeros(0)
        parts, seq = [], chunks[0].seq
        for c in chunks:
            if c.seq > seq:
                parts.append(np.zeros((c.seq - seq) * c.frames, dtype="<i2"))
            parts.append(np.frombuffer(c.data, dtype="<i2"))
            seq = c.seq + 1
        return chunks[0].timestamp_ms / 1000, np.concatenate(parts) / 32768.0


def runs(present, window_ms=10, bridge_ms=30):
    """[(start s, end s)] of runs of True windows, gaps up to bridge_ms joined."""
    spans = []
    for i, on in enumerate(present):
        if on:
            if spans and (i - spans[-1][1]) * window_ms <= bridge_ms:
                spans[-1][1] = i + 1
            else:
                spans.append([i, i + 1])
    return [(a * window_ms / 1000, b * window_ms / 1000) for a, b in spans]


def dominant(x, rate=RATE):
    """The strongest frequency of `x` (Hz)."""
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2
    spectrum[0] = 0
    return int(np.argmax(spectrum)) * rate / len(x)


def longest_gap_ms(x, rate=RATE, floor=0.01):
    """The longest run of near-zero samples (a sine at 0.3 spends microseconds near zero)."""
    quiet = np.abs(x) < floor
    longest = run = 0
    for q in quiet:
        run = run + 1 if q else 0
        longest = max(longest, run)
    return 1000 * longest / rate


async def wait_until(predicate, seconds, interval=0.02):
    """The first true value of `predicate()` within `seconds` (None if none), without blocking the loop."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(interval)
    return None


async def check_voice_example(server, monitor, folder, script):
    """A framework example (`script --url`) answers speech played into the room, and ends on Ctrl-C."""
    name = script.name
    speech = pathlib.Path(folder) / "speech.wav"
    subprocess.run(["espeak-ng", "-w", str(speech), "hello there, this is a test of the echo"], check=True)
    before = server.get("/v1/status")
    log = open(pathlib.Path(folder) / f"{name}.log", "w")
    # The checkout's client, whichever copy the venv holds.
    env = dict(os.environ, PYTHONPATH=str(ROOT / "clients/python/src"))
    child = subprocess.Popen([sys.executable, str(script), "--url", server.base], env=env, stdout=log, stderr=log)
    try:
        opened = await wait_until(
            lambda: child.poll() is not None
            or server.get("/v1/status")["capture"]["subscribers"] > before["capture"]["subscribers"], 20)
        if not check(opened and child.poll() is None, f"{name}: starts and opens a capture"):
            return
        await asyncio.sleep(0.5)
        await asyncio.get_running_loop().run_in_executor(None, subprocess.run, ["paplay", str(speech)])
        said = time.monotonic()
        await asyncio.sleep(4)
        _, x = monitor.since(said + 0.2)
        n = monitor.rate // 50
        loud = sum(dbfs(x[i:i + n]) > -35 for i in range(0, len(x) - n + 1, n)) * 0.02
        check(loud >= 0.3, f"{name}: says back what it heard ({loud:.2f} s of sound after the speech)")
        child.send_signal(signal.SIGINT)
        try:
            code = await asyncio.get_running_loop().run_in_executor(None, child.wait, 10)
        except subprocess.TimeoutExpired:
            code = None
        check(code == 0, f"{name}: Ctrl-C ends it (exit {code})")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        log.close()
