#!/usr/bin/env python3
"""The Sendspin player against the unmodified `sendspin` package (`sendspin serve`, aiosendspin's
reference server) from the Python 3.12 venv .venv-sendspin that `scripts/install-deps.sh test`
makes. `sendspin serve` binds every interface and announces itself by multicast DNS, so the check
runs itself, the server and audiogate inside a private network namespace with only its loopback
up (e2e.enter_namespace: `unshare -nm`/`-rnm`, the machine's D-Bus system bus hidden, so audiogate's
`_sendspin._tcp` reaches only an e2e.PrivateAvahi); PulseAudio's unix socket still reaches the test
card.

- codecs: a 440 Hz file served as PCM 16, FLAC and Opus (audiogate offering that codec first) plays
  at 440 Hz and at the file's level (within 1 dB) in the null sink's monitor, with /v1/status naming
  the codec and the clock converged;
- roles (metadata@v1, controller@v1): against sendspin_roles_server.py, a small aiosendspin server
  that sets a track's metadata and the commands it takes and writes down each command it receives,
  /v1/status shows the track (its progress advancing from where the server set it) and the supported
  commands; POST /v1/sendspin/command reaches the server (`next` lands in its list, a volume comes
  back in its controller state), answers 409 for a command the server does not offer and 400 for a
  bad body; a capture WebSocket with `music=true` gets a `music` message with the track; once the
  server is gone the metadata is cleared (a `music` message with metadata null) and a command answers
  503;
- panel: the control panel in Chromium while sendspin_roles_server.py holds the player: the music row
  shows the track with its progress and length, the controls show with each button enabled for a
  command the server takes, Next lands in the server's list and the page's log, and with the server
  gone the row says not connected and the controls hide;
- pairing: against sendspin_roles_server.py --strict (a server that requires pairing, on aiosendspin's
  own pairing code and trust store): `audiogate sendspin-token` prints the same SP:0 token each time
  and keeps the key and the Pairing PSK owner-only; unpaired, the server activates no role; a token of
  another Pairing PSK is answered unpaired, stores nothing, and audiogate keeps serving; with the
  player's token the server pairs it by the Pairing PSK method (it stores the pairing, re-handshakes
  onto the long-term PSK, and the player then has player@v1 and the server's track, with
  sendspin-pairings.json kept owner-only); restarted and dialing the server itself, it is still paired;
- pairing-code: against sendspin_roles_server.py --strict with aiosendspin's own CPace: the static code
  (AUDIOGATE_SENDSPIN_PAIRING_CODE) waits for the pairing window (the server hears client/pair-pending),
  runs when POST /v1/sendspin/pairing opens it, refuses another code as a mismatch with nothing stored
  and the window still open, and pairs with the right one, which closes the window; then the dynamic
  code: the player shows six digits in /v1/status and its log and says them on its loudspeaker (heard
  in the null sink), six other digits typed in the first round are retried, the shown ones pair, and
  the code is no longer shown;
- duck: while `sendspin serve` plays a 440 Hz file, a 2 s 1 kHz voice uploaded with POST /v1/playback
  lowers the music by the `--duck-db` default (15 dB, within 2 dB) for as long as it sounds, the voice
  itself at its own level (within 2 dB), and 1.5 s after the voice the music is back within 1 dB;
- aec: in the test card's echo room (`scripts/test-card.sh room`: the loudspeaker `spk` reaches
  the microphone `room.monitor` through a 40 ms loopback), `sendspin serve` plays chords through
  audiogate (AudioGateTestSupport's music-like signal) and two espeak-ng utterances are played into the room over them: a capture WebSocket
  with `aec=true&vad=true` removes the music by at least 30 dB from 2 s on (against a raw capture of
  the same microphone), says `speech` never while only music plays and once for each utterance;
- mdns: with e2e.PrivateAvahi (avahi-daemon on a bus and a veth of the namespace's own), audiogate
  waiting with `--sendspin-port 0.0.0.0:PORT` says `advertised` in /v1/status, avahi-browse resolves
  its `_sendspin._tcp` with TXT path and name, and sendspin_roles_server.py --discover (aiosendspin
  browsing as Music Assistant does) finds it and dials it at the published address;
- sync (and dialed: the same with each audiogate waiting on its own `--sendspin-port` and `sendspin
  serve --client` dialing both; each then restarts the server and asks the same bounds over 10 s
  from 5 s after it is back) to the sample: two audiogate processes joined to one `sendspin serve` play into the one null
  sink a file with a one-sample impulse every 500 ms over a 1-LSB dither, the second turned down to
  0.25 (`PUT /v1/volume`) so their impulses can be told apart: over 30 s after 5 s of settling the
  median offset is within +-0.1 ms and the 95th percentile of |offset| at most 0.25 ms. The players
  keep their devices running (`--device-idle-ms 0`) and the server starts 20 s after them: the
  ALSA pulse plugin's delay is libpulse's interpolated timing, milliseconds off for a new stream's
  first 10-40 s, each stream its own way, which no card's delay is (docs/benchmarks.md measures the
  cold start too). Both windows held in 14 runs of 14 (7 each way, p95 0.042-0.168 ms; one
  counted by its retry after both players underran) with the pointer preferred over the delay
  (docs/benchmarks.md has every figure). A playback underrun the check did not cause (the test
  card's daemon held 50 ms or more drains every stream on its sink) counts as the machine taking
  the CPU: it earns the retry that steal does.

- reference: the two audiogates beside two `sendspin daemon`s (the reference player, through
  PortAudio), all four told apart by level: every pair is heard within 200 ms for 90 % of the
  impulses, and audiogate plays no later than the later reference (the daemons trust PortAudio's
  latency and settle 29-34 ms behind audiogate, so "no further apart than two references are" would
  fail a correct player; docs/benchmarks.md has the figures).

Where no Python >= 3.12 exists the check says so in one line and is skipped.

    .venv/bin/python Tests/EndToEnd/check_sendspin.py [--binary .build/debug/audiogate] [--only PART]
"""
import argparse
import base64
import json
import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import wave

import numpy as np
import websockets
from websockets.sync.client import connect

import e2e
from e2e import check

VENV = e2e.ROOT / ".venv-sendspin"
SENDSPIN = VENV / "bin/sendspin"
ROLES_SERVER = pathlib.Path(__file__).with_name("sendspin_roles_server.py")
NAMESPACE_MARK = "AUDIOGATE_SENDSPIN_NAMESPACE"
TONE_HZ = 440
AMPLITUDE = 0.3
RATE = e2e.Recorder.RATE
IMPULSE = 0.5
PERIOD = RATE // 2  # an impulse every 500 ms
QUIET_GAIN = 0.25
# The settling: from the moment both players play the server's stream.
SETTLE_S = 5
# The players' sound-server streams run this long before the server starts: libpulse's interpolated
# timing is milliseconds off, each stream its own way, for the first 10-20 s of a stream, which a
# card's own delay never is (docs/benchmarks.md). The players keep them running
# (`--device-idle-ms 0`), as a music player does between tracks.
WARM_S = 20
# How soon after a server restart the players must be in sync again (the bound).
RESTART_SYNC_S = 5
DUCK_DB = 15  # `audiogate serve --duck-db`'s default
TONE_DB = 20 * np.log10(AMPLITUDE)  # the music's and the voice's peak amplitude, as e2e.tone_track measures it
VOICE_HZ = 1000
VOICE_RATE = 24000
VOICE_S = 2
# The static pairing code the pairing-code and panel parts give audiogate.
PAIRING_CODE = "24681357"


class ServerProcess:
    """A Sendspin server process on `port` (argv() says which), its HOME in `scratch`, its output in
    a log file there."""

    log_name = "server.log"

    def __init__(self, scratch, port=8927):
        self.scratch = pathlib.Path(scratch)
        self.port = port
        self.process = None
        self.log = self.scratch / self.log_name

    def argv(self):
        raise NotImplementedError

    def start(self):
        out = open(self.log, "a")
        self.process = subprocess.Popen(self.argv(), cwd=self.scratch, env=dict(os.environ, HOME=str(self.scratch)),
                                        stdout=out, stderr=subprocess.STDOUT)
        out.close()
        return e2e.wait_for(lambda: self.process.poll() is None and self._listening(), 20)

    def _listening(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    @property
    def url(self):
        return f"ws://127.0.0.1:{self.port}/sendspin"

    def stop(self):
        if self.process:
            e2e.stop_process(self.process)


class SendspinServe(ServerProcess):
    """`sendspin serve FILE`; with `clients` (player URLs) it dials those players (`--client`)."""

    log_name = "sendspin-serve.log"

    def __init__(self, scratch, source, port=8927, clients=()):
        super().__init__(scratch, port)
        self.source = source
        self.clients = list(clients)

    def argv(self):
        dial = [argument for url in self.clients for argument in ("--client", url)]
        return [str(SENDSPIN), "serve", str(self.source), "--port", str(self.port), "--name", "e2e", *dial]


class RolesServer(ServerProcess):
    """sendspin_roles_server.py: a track's metadata and the commands it takes; events() lists the
    controller commands it received (and, `strict`, the players it paired). `dial` a player's URL to
    dial it, `token` its pairing token to pair it on that dial."""

    log_name = "roles-server.log"

    def __init__(self, scratch, port=8927, discover=False, strict=False, dial=None, token=None, code=None,
                 dynamic_code=None, wrong_first=False):
        super().__init__(scratch, port)
        self.events_file = self.scratch / "controller-events.txt"
        self.discover = discover
        self.options = [*(["--strict"] if strict else []), *(["--dial", dial] if dial else []),
                        *(["--token", token] if token else []), *(["--code", code] if code else []),
                        *(["--dynamic-code", dynamic_code] if dynamic_code else []),
                        *(["--wrong-first"] if wrong_first else [])]

    def argv(self):
        return [str(VENV / "bin/python"), str(ROLES_SERVER), "--port", str(self.port),
                "--events", str(self.events_file), *(["--discover"] if self.discover else []), *self.options]

    def events(self):
        try:
            return self.events_file.read_text().splitlines()
        except OSError:
            return []


def start_audiogate(binary, server, scratch, extra=(), device="pulse", data_dir=None, env=None, log_level="info"):
    """audiogate dialing `server`; with `server` a port or `HOST:PORT`, audiogate waiting there for a server to dial it."""
    log = pathlib.Path(scratch) / f"audiogate-{time.monotonic_ns()}.log"
    meet = ["--sendspin-port", str(server)] if isinstance(server, (int, str)) else ["--sendspin-server", server.url]
    return e2e.Server(binary, device, log=log, log_level=log_level, data_dir=data_dir,
                      extra=[*meet, "--sendspin-name", "audiogate-test", *extra], env=env)


def sendspin_status(gate):
    try:
        return gate.get("/v1/status").get("sendspin") or {}
    except (OSError, ValueError):
        return {}


def stop_all(point, gate=None, server=None):
    """Stops `gate` and `server` (either may be None), first printing their logs' ends when a check
    failed since `point`."""
    failed = e2e.failures_since(point)
    if gate:
        if failed:
            print(gate.log_text()[-3000:])
        gate.stop()
    if server:
        server.stop()
        if failed:
            print(server.log.read_text()[-3000:])


def check_codecs(binary, scratch):
    source = pathlib.Path(scratch) / "tone.wav"
    e2e.write_wav(source, e2e.tone(TONE_HZ, 10, RATE, amplitude=AMPLITUDE, channels=2), RATE, channels=2)
    expected_db = 20 * np.log10(AMPLITUDE / np.sqrt(2))
    server = SendspinServe(scratch, source)
    if not check(server.start(), "sendspin serve starts inside the namespace"):
        print(server.log.read_text()[-2000:])
        return
    try:
        # A player must offer pcm or flac: Opus is asked for first, PCM behind it.
        for codec, offered in (("pcm", "pcm"), ("flac", "flac"), ("opus", "opus,pcm")):
            recorder = gate = None
            try:
                gate = start_audiogate(binary, server, scratch, ["--sendspin-codecs", offered])
                if not check(gate.start(), f"{codec}: audiogate starts"):
                    print(gate.log_text()[-3000:])
                    continue
                playing = e2e.wait_for(
                    lambda: (s := sendspin_status(gate)).get("codec") == codec and s.get("queued_ms", 0) > 0 and s, 15)
                if not check(playing, f"{codec}: connects, converges and plays the stream "
                                      f"({sendspin_status(gate)})"):
                    print(gate.log_text()[-3000:])
                    continue
                check(playing["clock_converged"] and playing["connected"],
                      f"{codec}: /v1/status says connected with the clock converged "
                      f"(offset {playing['clock_offset_ms']} ms, error {playing['clock_error_ms']} ms)")
                recorder = e2e.Recorder()
                time.sleep(3)
                x, _ = recorder.samples()
                tail = x[-2 * RATE:]
                if not check(len(tail) == 2 * RATE, f"{codec}: the monitor recorded 2 s ({len(tail) / RATE:.2f} s)"):
                    continue
                pitch = e2e.dominant(tail, RATE)
                level = e2e.dbfs(tail)
                check(abs(pitch - TONE_HZ) <= 2, f"{codec}: the 440 Hz file plays at {pitch:.1f} Hz")
                check(abs(level - expected_db) <= 1.0,
                      f"{codec}: at {level:.2f} dBFS, the file's level {expected_db:.2f} dBFS within 1 dB")
            finally:
                if recorder:
                    recorder.stop()
                if gate:
                    gate.stop()
    finally:
        server.stop()


def send_command(gate, body):
    return gate.request("POST", "/v1/sendspin/command", body)


def error_field(answer, name):
    """`error.code` or `error.message` of an error answer; None when it is not one."""
    error = answer.get("error") if isinstance(answer, dict) else None
    return error.get(name) if isinstance(error, dict) else None


class MusicEvents:
    """A capture WebSocket with `music=true`; its `music` messages collected on a thread."""

    def __init__(self, gate):
        url = gate.base.replace("http://", "ws://") + "/v1/capture?music=true&encoding=json&chunk_ms=200"
        self.socket = connect(url, open_timeout=5)
        self.lock = threading.Lock()
        self.messages = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for message in self.socket:
                if isinstance(message, str) and message.startswith('{"metadata"'):
                    with self.lock:
                        self.messages.append(json.loads(message))
        except websockets.ConnectionClosed:
            pass

    def received(self):
        with self.lock:
            return list(self.messages)

    def close(self):
        self.socket.close()
        self.thread.join(5)


def check_roles(binary, scratch):
    server = RolesServer(scratch)
    if not check(server.start(), "roles: the roles server starts inside the namespace"):
        print(server.log.read_text()[-2000:])
        return
    point = e2e.mark()
    gate = music = None
    try:
        # The server sets the track when audiogate joins, so no earlier than this: the bound on how
        # far its progress can have advanced.
        started = time.monotonic()
        gate = start_audiogate(binary, server, scratch)
        if not check(gate.start(), "roles: audiogate starts"):
            return
        music = MusicEvents(gate)
        metadata = e2e.wait_for(lambda: sendspin_status(gate).get("metadata"), 10)
        read = time.monotonic()
        metadata = metadata or {}
        expected = {"title": "Test Title", "artist": "Test Artist", "album": "Test Album", "album_artist": "Test Band",
                    "year": 2024, "track": 3, "duration_ms": 200000}
        check(all(metadata.get(k) == v for k, v in expected.items()),
              f"roles: within 10 s /v1/status has the server's track as sendspin.metadata ({metadata})")
        progress = metadata.get("progress_ms")
        bound = 1000 + (read - started + 2) * 1000
        check(isinstance(progress, (int, float)) and 1000 <= progress <= bound,
              f"roles: progress_ms {progress} is between 1000 and {bound:.0f} ({read - started:.1f} s after "
              f"audiogate started, at playback speed 1000)")

        heard = e2e.wait_for(lambda: [m for m in music.received() if m.get("type") == "music" and m.get("player")
                                      == "sendspin" and (m.get("metadata") or {}).get("title") == "Test Title"], 5)
        check(heard, f"roles: a capture WebSocket with music=true gets a music message with the track "
                     f"({music.received()[-2:]})")

        commands = e2e.wait_for(lambda: (sendspin_status(gate).get("controller") or {}).get("supported_commands"), 10)
        commands = commands or []
        check("next" in commands, f"roles: sendspin.controller.supported_commands has next ({commands})")

        status, answer = send_command(gate, {"command": "next"})
        check(status == 200 and isinstance(answer, dict) and answer.get("command") == "next",
              f"roles: POST /v1/sendspin/command next answers {status} {answer}")
        landed = e2e.wait_for(lambda: "next" in server.events(), 2)
        check(landed, f"roles: the server gets next within 2 s (its commands: {server.events()})")

        status, answer = send_command(gate, {"command": "seek"})
        check(status == 409 and error_field(answer, "code") == "conflict"
              and "seek" in str(error_field(answer, "message")),
              f"roles: seek, which the server does not offer, answers {status} {answer}")

        status, answer = send_command(gate, {"command": "volume", "volume": 40})
        if "volume" in commands:
            echoed = e2e.wait_for(lambda: (sendspin_status(gate).get("controller") or {}).get("volume") == 40, 2)
            volume = (sendspin_status(gate).get("controller") or {}).get("volume")
            check(status == 200 and echoed,
                  f"roles: volume 40 answers {status} {answer} and sendspin.controller.volume is {volume} within 2 s "
                  f"(the server's commands: {server.events()})")
        else:
            check(status == 409 and error_field(answer, "code") == "conflict",
                  f"roles: volume, which the server offers only with a player that has one, answers {status} {answer}")

        for body in ({"command": "bogus"}, {"command": "volume", "volume": 500}, b"not json"):
            status, answer = send_command(gate, body)
            check(status == 400 and error_field(answer, "code") == "bad_body",
                  f"roles: {body!r} answers {status} {answer}")

        server.stop()
        gone = e2e.wait_for(lambda: (s := sendspin_status(gate)) and s.get("metadata") is None and s, 10)
        check(gone, f"roles: within 10 s of the server stopping sendspin.metadata is gone "
                    f"({sendspin_status(gate).get('metadata')})")
        cleared = e2e.wait_for(lambda: music.received() and music.received()[-1].get("metadata") is None, 5)
        check(cleared, f"roles: the music WebSocket then gets a music message with metadata null "
                       f"({music.received()[-1:]})")
        status, answer = send_command(gate, {"command": "next"})
        check(status == 503 and error_field(answer, "code") == "unavailable",
              f"roles: with no server, next answers {status} {answer}")
    finally:
        if music:
            music.close()
        stop_all(point, gate, server)


def check_panel(binary, scratch):
    """The control panel's music row in Chromium while sendspin_roles_server.py holds the player:
    the track, its controls for the commands the server takes, Next reaching the server; off once
    the server goes. audiogate has a static pairing code, so the pairing row shows its window,
    which the panel's button opens."""
    from selenium.webdriver.common.by import By

    from check_browser import end_browser, open_browser
    scratch = pathlib.Path(scratch)
    server = RolesServer(scratch)
    if not check(server.start(), "panel: the roles server starts inside the namespace"):
        return
    point = e2e.mark()
    gate = driver = service = None
    try:
        gate = start_audiogate(binary, server, scratch, env={"AUDIOGATE_SENDSPIN_PAIRING_CODE": PAIRING_CODE})
        if not check(gate.start(), "panel: audiogate starts"):
            return
        driver, service = open_browser(scratch)
        driver.get(gate.base + "/")

        def row():
            return driver.find_element(By.ID, "st-music").text

        shown = e2e.wait_for(lambda: "Test Title - Test Artist (Test Album)" in row() and "/ 3:20" in row(), 15)
        check(shown, f"panel: the music row shows the server's track with its progress and length ({row()!r})")
        controls = driver.find_element(By.ID, "music-controls")
        enabled = e2e.wait_for(lambda: controls.is_displayed() and {
            b.get_attribute("data-command"): b.is_enabled() for b in controls.find_elements(By.TAG_NAME, "button")}, 5)
        check(enabled == {"previous": True, "play": True, "pause": True, "next": True},
              f"panel: its controls show, each enabled for a command the server takes ({enabled})")
        controls.find_element(By.CSS_SELECTOR, "button[data-command=next]").click()
        landed = e2e.wait_for(lambda: "next" in server.events(), 5)
        logged = e2e.wait_for(lambda: "music: next" in driver.find_element(By.ID, "log").text, 2)
        check(landed and logged, f"panel: Next reaches the server ({server.events()}) and the page logs it")

        def pairing():
            return driver.find_element(By.ID, "st-pairing").text

        closed = e2e.wait_for(lambda: pairing() == "window closed", 5)
        check(closed, f"panel: the pairing row shows the static code's window closed ({pairing()!r})")
        driver.find_element(By.ID, "pairing-open").click()
        opened = e2e.wait_for(lambda: pairing() in ("window open, 5:00 left", "window open, 4:59 left")
                              and "pairing: window open" in driver.find_element(By.ID, "log").text, 5)
        check(opened and (sendspin_status(gate).get("pairing_window") or {}).get("open") is True,
              f"panel: its button opens the window, which the row and /v1/status then show ({pairing()!r})")
        server.stop()
        gone = e2e.wait_for(lambda: row().startswith("not connected") and not controls.is_displayed(), 15)
        check(gone, f"panel: with the server gone the row says not connected and the controls hide ({row()!r})")
    finally:
        end_browser(driver, service)
        stop_all(point, gate, server)


def pairing_token(binary, data_dir):
    """`audiogate sendspin-token`'s output for `data_dir`."""
    done = subprocess.run([str(binary), "sendspin-token", "--data-dir", str(data_dir)], capture_output=True,
                          text=True, timeout=30)
    return done.stdout.strip() if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.strip()[-300:]}"


def forged_token(token):
    """`token`'s player with another Pairing PSK: what a server with a wrong or stale token holds."""
    body = token.removeprefix("SP:0").replace("9", "2")
    client_id = base64.b32decode(body + "=" * (-len(body) % 8))[:32]
    return "SP:0" + base64.b32encode(client_id + os.urandom(32)).decode().rstrip("=").replace("2", "9")


def check_pairing(binary, scratch):
    """A server that requires pairing (sendspin_roles_server.py --strict, aiosendspin's own pairing):
    unpaired, audiogate gets no activity; paired by its token over the Pairing PSK method, it plays
    the server's roles on the long-term PSK; after a restart, dialing the server itself, it is still
    paired."""
    scratch = pathlib.Path(scratch)
    data = scratch / "player-data"
    token = pairing_token(binary, data)
    check(token.startswith("SP:0") and pairing_token(binary, data) == token,
          f"pairing: audiogate sendspin-token prints the same SP:0 token twice ({token[:12]}...)")
    keys = {name: oct((data / name).stat().st_mode & 0o777) if (data / name).exists() else None
            for name in ("sendspin-key", "sendspin-pairing-psk")}
    check(all(mode == "0o600" for mode in keys.values()), f"pairing: the key and the Pairing PSK are owner-only ({keys})")
    port = e2e.free_port()
    url = f"ws://127.0.0.1:{port}/sendspin"
    point = e2e.mark()
    gate = server = None
    try:
        gate = start_audiogate(binary, f"127.0.0.1:{port}", scratch, data_dir=data)
        if not check(gate.start(), "pairing: audiogate starts, waiting for servers"):
            return
        (scratch / "unpaired").mkdir()
        server = RolesServer(scratch / "unpaired", strict=True, dial=url)
        check(server.start(), "pairing: a server that requires pairing starts and dials audiogate")
        unpaired = e2e.wait_for(lambda: (s := sendspin_status(gate)).get("connected") and s, 15) or {}
        check(unpaired.get("roles") == [] and unpaired.get("paired") is False and not unpaired.get("metadata"),
              f"pairing: unpaired, the server activates no role (roles {unpaired.get('roles')}, paired "
              f"{unpaired.get('paired')}, metadata {unpaired.get('metadata')})")
        server.stop()

        (scratch / "forged").mkdir()
        server = RolesServer(scratch / "forged", strict=True, dial=url, token=forged_token(token))
        check(server.start(), "pairing: the server starts with a token of another Pairing PSK")
        refused = e2e.wait_for(lambda: "this player does not hold" in gate.log_text(), 15)
        check(refused and not server.events() and not sendspin_status(gate).get("paired")
              and gate.get("/healthz").get("status") == "ok",
              f"pairing: audiogate answers the unknown Pairing PSK unpaired, no pairing is stored "
              f"({server.events()}), and it keeps serving")
        server.stop()

        (scratch / "paired").mkdir()
        server = RolesServer(scratch / "paired", strict=True, dial=url, token=token)
        check(server.start(), "pairing: the server starts again with the token and dials audiogate")
        stored = e2e.wait_for(lambda: [e for e in server.events() if e.startswith("paired ")], 20)
        check(stored, f"pairing: the server stores a pairing for audiogate within 20 s ({server.events()})")
        paired = e2e.wait_for(lambda: (s := sendspin_status(gate)).get("paired") and s.get("metadata") and s, 15) or {}
        check(paired.get("paired") is True and paired.get("paired_servers") == 1 and "player@v1" in paired.get("roles", [])
              and (paired.get("metadata") or {}).get("title") == "Test Title",
              f"pairing: then audiogate is on the long-term PSK with the player role and the server's track "
              f"(paired {paired.get('paired')}, paired_servers {paired.get('paired_servers')}, roles "
              f"{paired.get('roles')}, title {(paired.get('metadata') or {}).get('title')})")
        records = data / "sendspin-pairings.json"
        kept = json.loads(records.read_text()) if records.exists() else []
        check(len(kept) == 1 and kept[0].get("server_id") == paired.get("server_id")
              and oct(records.stat().st_mode & 0o777) == "0o600",
              f"pairing: sendspin-pairings.json keeps the server, owner-only ({[r.get('server_id') for r in kept]})")
        gate.stop()

        # Restarted and dialing the server: the server names the long-term PSK in its handshake.
        gate = start_audiogate(binary, server, scratch, data_dir=data)
        check(gate.start(), "pairing: audiogate restarts, dialing the server")
        again = e2e.wait_for(lambda: (s := sendspin_status(gate)).get("paired") and s.get("metadata") and s, 15) or {}
        check(again.get("paired") is True and "player@v1" in again.get("roles", []),
              f"pairing: after the restart audiogate is paired without a token (paired {again.get('paired')}, "
              f"roles {again.get('roles')}, last error {sendspin_status(gate).get('last_error')})")
    finally:
        stop_all(point, gate, server)


def check_pairing_code(binary, scratch):
    """The static pairing code against a server that requires pairing (sendspin_roles_server.py
    --strict --code, aiosendspin's own CPace and pairing flow): with no pairing window open the
    player holds the attempt (`client/pair-pending`, which the server hears) and nothing is paired;
    POST /v1/sendspin/pairing opens the window and the waiting attempt pairs; a server typing
    another code is refused with pairing_code_mismatch, stores nothing, and the window stays open
    for the next; the right code pairs, closes the window, and the player then plays the server's
    roles on the long-term PSK."""
    scratch = pathlib.Path(scratch)
    data = scratch / "player-data"
    port = e2e.free_port()
    url = f"ws://127.0.0.1:{port}/sendspin"
    point = e2e.mark()
    gate = server = recorder = None
    try:
        # The code in the environment, as deploy/README.md advises: the process list shows argv.
        gate = start_audiogate(binary, f"127.0.0.1:{port}", scratch, data_dir=data,
                               env={"AUDIOGATE_SENDSPIN_PAIRING_CODE": PAIRING_CODE})
        if not check(gate.start(), "pairing code: audiogate starts with a static pairing code, waiting for servers"):
            return
        window = sendspin_status(gate).get("pairing_window") or {}
        check(window.get("open") is False, f"pairing code: /v1/status shows the pairing window closed ({window})")

        (scratch / "wrong").mkdir()
        server = RolesServer(scratch / "wrong", strict=True, dial=url, code="13572468")
        check(server.start(), "pairing code: a server that requires pairing dials audiogate with another code")
        pending = e2e.wait_for(lambda: [e for e in server.events() if e.startswith("pending ")], 15)
        waiting = (sendspin_status(gate).get("pairing_window") or {}).get("attempt_waiting")
        check(pending and "POST /v1/sendspin/pairing" in pending[0] and waiting is True,
              f"pairing code: with no window open audiogate holds the attempt, and the server hears why "
              f"({pending}; attempt_waiting {waiting})")
        status, opened = gate.request("POST", "/v1/sendspin/pairing", {})
        check(status == 200 and opened.get("open") is True and 290 <= (opened.get("seconds_left") or 0) <= 300,
              f"pairing code: POST /v1/sendspin/pairing opens the window for 300 s ({status} {opened})")
        mismatch = e2e.wait_for(lambda: "does not match" in gate.log_text(), 15)
        window = sendspin_status(gate).get("pairing_window") or {}
        check(mismatch and not [e for e in server.events() if e.startswith("paired ")] and window.get("open") is True
              and not sendspin_status(gate).get("paired") and gate.get("/healthz").get("status") == "ok",
              f"pairing code: the waiting attempt runs, the other code is refused as a mismatch, nothing is paired, "
              f"the window stays open ({window}) and audiogate keeps serving")
        server.stop()

        (scratch / "right").mkdir()
        server = RolesServer(scratch / "right", strict=True, dial=url, code=PAIRING_CODE[:4] + "-" + PAIRING_CODE[4:])
        check(server.start(), "pairing code: another server dials audiogate with the player's code")
        stored = e2e.wait_for(lambda: [e for e in server.events() if e.startswith("paired ")], 20)
        check(stored, f"pairing code: the server stores a pairing for audiogate within 20 s ({server.events()})")
        paired = e2e.wait_for(lambda: (s := sendspin_status(gate)).get("paired") and s.get("metadata") and s, 15) or {}
        check(paired.get("paired") is True and paired.get("paired_servers") == 1 and "player@v1" in paired.get("roles", [])
              and (paired.get("metadata") or {}).get("title") == "Test Title"
              and (paired.get("pairing_window") or {}).get("open") is False,
              f"pairing code: audiogate is then on the long-term PSK with the player role and the server's track, "
              f"and the window closed (paired {paired.get('paired')}, paired_servers {paired.get('paired_servers')}, "
              f"roles {paired.get('roles')}, window {paired.get('pairing_window')})")
        server.stop()

        # The dynamic code: the player shows six digits (and says them on its loudspeaker), the
        # operator types them into the server.
        recorder = e2e.Recorder()
        heard_from = time.monotonic()
        (scratch / "dynamic").mkdir()
        server = RolesServer(scratch / "dynamic", strict=True, dial=url, dynamic_code=gate.base + "/v1/status",
                             wrong_first=True)
        check(server.start(), "pairing code: a third server dials audiogate to pair by the dynamic code")
        stored = e2e.wait_for(lambda: [e for e in server.events() if e.startswith("paired ")], 30)
        typed = [e for e in server.events() if e.startswith("typed ")]
        shown = [line for line in gate.log_text().splitlines() if "pairing code" in line and "type it into the server" in line]
        check(stored and len(typed) == 2 and typed[0] != typed[1] and len(shown) == 2 and typed[1][6:9] in shown[-1],
              f"pairing code: audiogate shows a dynamic code; six other digits are retried in a second round and the "
              f"shown ones pair ({server.events()}; {len(shown)} rounds logged)")
        # After pairing the server re-handshakes onto the new PSK and activates the player again.
        again = e2e.wait_for(lambda: (s := sendspin_status(gate)).get("paired") and s.get("paired_servers") == 2
                             and "player@v1" in s.get("roles", []) and s, 15) or {}
        check(again.get("paired") is True and again.get("paired_servers") == 2 and again.get("pairing_code") is None
              and "player@v1" in again.get("roles", []),
              f"pairing code: audiogate is then paired with that server too, and shows no code any more "
              f"(paired {again.get('paired')}, paired_servers {again.get('paired_servers')}, pairing_code "
              f"{again.get('pairing_code')}, roles {again.get('roles')})")
        # Each of the two rounds says "Pairing code: 3 1 3 5 4 4" on the null sink, 2-3 s of speech.
        spoken = e2e.wait_for(lambda: speech_seconds(recorder, heard_from) >= 2, 15)
        check(spoken and "could not be said" not in gate.log_text(),
              f"pairing code: audiogate says the code on its loudspeaker ({speech_seconds(recorder, heard_from):.1f} s "
              f"above -40 dBFS in the sink)")
    finally:
        if recorder:
            recorder.stop()
        stop_all(point, gate, server)


def speech_seconds(recorder, since):
    """Seconds of the null sink's monitor from `since` (monotonic) whose 100 ms windows are above -40 dBFS."""
    x, t0 = recorder.samples()
    x = x[max(0, int((since - t0) * RATE)):]
    windows = x[: len(x) // 4800 * 4800].reshape(-1, 4800)
    if not len(windows):
        return 0.0
    rms = np.sqrt(np.mean(windows ** 2, axis=1))
    return float(np.sum(20 * np.log10(np.maximum(rms, 1e-9)) > -40)) * 0.1


def tone_level(x, frequency):
    """The mean level in dBFS (peak amplitude) of `frequency` over `x`, in 50 ms windows: 440 Hz and
    1 kHz both fall on a bin there."""
    levels = e2e.tone_track(x, frequency, RATE, window_ms=50)
    return float(np.mean(levels)) if len(levels) else -120.0


def check_duck(binary, scratch):
    source = pathlib.Path(scratch) / "tone-30s.wav"
    # Long enough that the part never hears the server loop back to the file's start.
    e2e.write_wav(source, e2e.tone(TONE_HZ, 30, RATE, amplitude=AMPLITUDE, channels=2), RATE, channels=2)
    voice = e2e.tone(VOICE_HZ, VOICE_S, VOICE_RATE, amplitude=AMPLITUDE).tobytes()
    server = SendspinServe(scratch, source)
    if not check(server.start(), "duck: sendspin serve starts inside the namespace"):
        print(server.log.read_text()[-2000:])
        return
    point = e2e.mark()
    recorder = gate = None
    try:
        gate = start_audiogate(binary, server, scratch)
        if not check(gate.start(), "duck: audiogate starts"):
            return
        playing = e2e.wait_for(lambda: (s := sendspin_status(gate)).get("queued_ms", 0) > 0 and s, 15)
        if not check(playing, "duck: audiogate joins and queues the music "
                              + (f"({playing['queued_ms']} ms queued)" if playing else f"({sendspin_status(gate)})")):
            return
        recorder = e2e.Recorder()

        def music_heard():
            x, _ = recorder.samples()
            return len(x) >= RATE // 5 and tone_level(x[-RATE // 5:], TONE_HZ) > TONE_DB - 6

        heard = e2e.wait_for(music_heard, 10)
        if not check(heard, "duck: the 440 Hz music is heard in the monitor"):
            return
        time.sleep(1.5)
        volume = gate.get("/v1/volume")
        status, answer = gate.request("POST", f"/v1/playback?rate={VOICE_RATE}&channels=1&stream=agent",
                                      voice, "application/octet-stream")
        if not check(status == 200, f"duck: the voice upload answers {status} {answer}"):
            return
        # The voice, the 250 ms hold, the 500 ms climb back, and the second measured after it.
        time.sleep(VOICE_S + 4)
        x, _ = recorder.samples()

        spans = e2e.runs(e2e.tone_track(x, VOICE_HZ, RATE, window_ms=10) > TONE_DB - 30, window_ms=10)
        if not check(spans, "duck: the 1 kHz voice is heard in the monitor"):
            return
        start, end = max(spans, key=lambda span: span[1] - span[0])
        heard_s = end - start
        check(abs(heard_s - VOICE_S) <= 0.1, f"duck: the voice sounds for {heard_s:.2f} s of its {VOICE_S} s")

        def level(frequency, begin, finish):
            return tone_level(x[max(0, round(begin * RATE)):round(finish * RATE)], frequency)

        # The voice's start is known to a 10 ms window or two; ending 50 ms early keeps the first
        # frames of the duck out of "before".
        before = level(TONE_HZ, start - 1.05, start - 0.05)
        during = level(TONE_HZ, start + 0.3, end - 0.2)
        after = level(TONE_HZ, end + 1.5, end + 2.5)
        spoken = level(VOICE_HZ, start + 0.3, end - 0.2)
        after_s = len(x) / RATE - end - 1.5
        print(f"  music at 440 Hz: {before:.2f} dBFS before, {during:.2f} during, {after:.2f} after the voice "
              f"({min(after_s, 1):.2f} s measured); voice at 1 kHz {spoken:.2f} dBFS; volume {volume}")
        check(after_s >= 0.9, f"duck: the recording holds {after_s:.2f} s from 1.5 s after the voice")
        ducked = before - during
        ok = check(abs(ducked - DUCK_DB) <= 2,
                   f"duck: under the voice the music is {ducked:.2f} dB lower ({before:.2f} -> {during:.2f} dBFS), "
                   f"--duck-db's {DUCK_DB} dB within 2 dB")
        ok &= check(abs(after - before) <= 1,
                    f"duck: 1.5 s after the voice the music is back at {after:.2f} dBFS, {before:.2f} before within 1 dB")
        if not ok:
            first = max(0, round((start - 1.05) * RATE))
            track = e2e.tone_track(x[first:], TONE_HZ, RATE, window_ms=50)
            print(f"  440 Hz every 50 ms from {first / RATE - start:+.2f} s (the voice at 0 to {heard_s:.2f} s):",
                  " ".join(f"{v:.1f}" for v in track))
        expected = 20 * np.log10(AMPLITUDE * volume["playback"])
        check(abs(spoken - expected) <= 2,
              f"duck: the voice plays at {spoken:.2f} dBFS, its {expected:.2f} dBFS at volume "
              f"{volume['playback']} within 2 dB")
    finally:
        if recorder:
            recorder.stop()
        stop_all(point, gate, server)


# The echo room of scripts/test-card.sh: audiogate plays into `spk`, the microphone is `room`'s monitor.
ROOM_MICROPHONE = "pulse:room.monitor"
ROOM_SPEAKER = "pulse:spk"
CAPTURE_RATE = 16000
USER_UTTERANCES = (("Please turn the music down a little", "en+f3"), ("What is the weather like tomorrow", "en+m3"))
ERLE_DB = 30  # the canceller's bound on music alone, as for any music through the mixer


def chords(path, seconds, amplitude=0.15, noise_bed=0.1):
    """48 kHz stereo music, the signal of AudioGateTestSupport's MusicLike.chords: a I-vi-IV-V
    progression of four-harmonic notes over a bass line, a plucked chord every 500 ms, over a noise
    bed 20 dB under the peak (chords alone show the canceller only their partials; docs/benchmarks.md)."""
    progression = ((60, 64, 67, 36), (57, 60, 64, 45), (53, 57, 60, 41), (55, 59, 62, 43))
    n = np.arange(round(seconds * RATE))
    beat = RATE // 2
    since = (n % beat) / RATE
    envelope = np.minimum(1, since / 0.01) * (0.55 + 0.45 * np.exp(-since * 4))
    t = n / RATE
    value = np.zeros(len(n))
    for index, chord in enumerate(progression):
        on = (n // beat) % len(progression) == index
        for note in chord:
            frequency = 440 * 2 ** ((note - 69) / 12)
            for harmonic in range(1, 5):
                value[on] += np.sin(2 * np.pi * frequency * harmonic * t[on]) / harmonic ** 2
    noise = noise_bed * np.random.default_rng(0x6d757369).uniform(-1, 1, len(n))
    mono = np.round(32767 * amplitude * (envelope * value / 3.2 + noise)).astype("<i2")
    e2e.write_wav(path, np.repeat(mono, 2), RATE, channels=2)


class CaptureLine:
    """A capture WebSocket (16 kHz, `encoding=json`) read on a thread: its audio placed on the
    server's clock by `timestamp_ms`, and its `vad` events."""

    def __init__(self, gate, query=""):
        url = (gate.base.replace("http://", "ws://")
               + f"/v1/capture?rate={CAPTURE_RATE}&encoding=json&chunk_ms=20{query}")
        self.socket = connect(url, open_timeout=5)
        self.chunks = []  # (timestamp_ms, samples)
        self.events = []  # (timestamp_ms, state)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for text in self.socket:
                message = json.loads(text)
                if message.get("type") == "audio":
                    samples = np.frombuffer(base64.b64decode(message["data"]), dtype="<i2") / 32768.0
                    self.chunks.append((message["timestamp_ms"], samples))
                elif message.get("type") == "vad":
                    self.events.append((message["timestamp_ms"], message["state"]))
        except websockets.ConnectionClosed:
            pass

    def close(self):
        self.socket.close()
        self.thread.join(5)

    def level(self, begin_ms, end_ms):
        """dBFS of the audio captured between two times on the server's clock."""
        parts = []
        for stamp, samples in self.chunks:
            if stamp >= end_ms or stamp + len(samples) * 1000 / CAPTURE_RATE <= begin_ms:
                continue
            times = stamp + np.arange(len(samples)) * 1000 / CAPTURE_RATE
            parts.append(samples[(times >= begin_ms) & (times < end_ms)])
        return e2e.dbfs(np.concatenate(parts)) if parts else -120.0

    def onset(self, after_ms, threshold_db=-50, window_ms=100):
        """Start of the first window after `after_ms` louder than `threshold_db`."""
        if not self.chunks:
            return None
        end = self.chunks[-1][0]
        for begin in np.arange(after_ms, end, window_ms):
            if self.level(begin, begin + window_ms) > threshold_db:
                return begin
        return None


def check_aec(binary, scratch):
    if not check(subprocess.run(["bash", str(e2e.ROOT / "scripts/test-card.sh"), "room"],
                                stdout=subprocess.DEVNULL).returncode == 0, "aec: the echo room is set up"):
        return
    utterances = []
    for index, (text, voice) in enumerate(USER_UTTERANCES):
        path = pathlib.Path(scratch) / f"user-{index}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), text], check=True)
        with wave.open(str(path)) as speech:
            utterances.append((path, speech.getnframes() * 1000 / speech.getframerate()))
    source = pathlib.Path(scratch) / "chords.wav"
    chords(source, 40)
    server = SendspinServe(scratch, source)
    if not check(server.start(), "aec: sendspin serve starts inside the namespace"):
        print(server.log.read_text()[-2000:])
        return
    point = e2e.mark()
    gate = raw = processed = None
    try:
        gate = start_audiogate(binary, server, scratch, ["--playback-device", ROOM_SPEAKER], device=ROOM_MICROPHONE)
        if not check(gate.start(capture=True), "aec: audiogate starts on the room's microphone and loudspeaker"):
            return
        raw = CaptureLine(gate)
        processed = CaptureLine(gate, "&aec=true&vad=true")
        start_ms = time.monotonic() * 1000
        playing = e2e.wait_for(lambda: (s := sendspin_status(gate)).get("queued_ms", 0) > 0 and s, 15)
        if not check(playing, f"aec: audiogate joins and queues the music ({sendspin_status(gate)})"):
            return
        music_ms = e2e.wait_for(lambda: raw.onset(start_ms), 10)
        if not check(music_ms, "aec: the music reaches the microphone"):
            stamps = [stamp for stamp, _ in raw.chunks]
            print(f"  {len(stamps)} raw chunks from {min(stamps, default=0) - start_ms:.0f} ms to "
                  f"{max(stamps, default=0) - start_ms:.0f} ms after the capture started, the last second at "
                  f"{raw.level(max(stamps, default=0) - 1000, max(stamps, default=0)):.1f} dBFS")
            return
        spoken = []
        time.sleep(max(0.0, music_ms / 1000 + 5 - time.monotonic()))
        for path, length_ms in utterances:
            spoken.append((time.monotonic() * 1000, length_ms))
            subprocess.run(["paplay", "--device=room", str(path)], check=True)
            time.sleep(2.5)
        raw.close()
        processed.close()

        def erle(begin, end):
            return raw.level(begin, end) - processed.level(begin, end)

        (first, first_ms), (second, second_ms) = spoken
        last_ms = processed.chunks[-1][0] if processed.chunks else second
        alone = erle(music_ms + 2000, first - 100)
        between = erle(first + first_ms + 400, second - 100)
        music_db = raw.level(music_ms + 2000, first - 100)
        relative = " ".join(f"{state}@{stamp - music_ms:.0f}" for stamp, state in processed.events)
        print(f"  music {music_db:.1f} dBFS at the microphone; ERLE from 2 s {alone:.1f} dB, between the "
              f"utterances {between:.1f} dB; users at {first - music_ms:.0f} and {second - music_ms:.0f} ms; "
              f"vad: {relative}; capture to {last_ms - music_ms:.0f} ms")
        check(music_db > -40, f"aec: the music reaches the microphone at {music_db:.1f} dBFS")
        check(alone >= ERLE_DB, f"aec: the canceller removes the music by {alone:.1f} dB from 2 s (at least {ERLE_DB})")
        check(between >= ERLE_DB,
              f"aec: and by {between:.1f} dB between the two utterances (at least {ERLE_DB})")
        speech = [stamp for stamp, state in processed.events if state == "speech"]
        music_only = [stamp for stamp in speech if music_ms <= stamp < first - 100
                      or first + first_ms + 500 <= stamp < second - 100 or second + second_ms + 500 <= stamp]
        check(not music_only, f"aec: no speech event while only music plays ({relative})")
        for index, (begin, length_ms) in enumerate(spoken):
            over = [stamp for stamp in speech if begin - 100 <= stamp < begin + length_ms + 500]
            check(len(over) == 1, f"aec: one speech event over utterance {index + 1} ({len(over)}; {relative})")
        if e2e.failures_since(point):
            for stamp in speech:
                windows = np.arange(stamp - 500, stamp + 500, 100)
                print(f"  dBFS every 100 ms around the speech event at {stamp - music_ms:.0f} ms: raw",
                      " ".join(f"{raw.level(b, b + 100):.0f}" for b in windows), "| processed",
                      " ".join(f"{processed.level(b, b + 100):.0f}" for b in windows))
    finally:
        for line in (raw, processed):
            if line:
                line.close()
        stop_all(point, gate, server)


def impulse_file(path, seconds=60):
    """48 kHz stereo: 1-LSB dither with a one-sample impulse every 500 ms. Long enough that the
    measurement never spans the server's loop back to the start: `sendspin serve` reopens the file
    there, and with a 10 s file both players got late chunks and resynced at that seam."""
    rng = np.random.default_rng(7)
    x = rng.integers(-1, 2, size=seconds * RATE).astype(np.float64)
    x[::PERIOD] = IMPULSE * 32767
    e2e.write_wav(path, np.repeat(np.round(x).astype("<i2"), 2), RATE, channels=2)


def set_master_volume(gate, gain):
    status, answer = gate.request("PUT", "/v1/volume", {"playback": gain})
    check(status == 200, f"{gate.base}: master volume {gain} set ({answer})")
    return answer


def check_restart(server, gates, recorder, direction):
    """The server restarts (a new process with a new key, the file from its start, its clock the
    host's CLOCK_MONOTONIC_RAW as before): from 5 s after it listens again, the two players are back
    in sync within the same bounds, over 10 s. Each player's first time burst finds the restarted
    server on the clock it had learnt, and carries its estimate on (its debug log says so)."""
    before = [sendspin_status(g).get("connections", 0) for g in gates]
    counts = [g.playback_counts() for g in gates]
    stopped_wall = time.time()
    server.stop()
    if not check(server.start(), f"restart: sendspin serve ({direction}) starts again"):
        return
    restarted = time.monotonic()
    back = e2e.wait_for(lambda: all(sendspin_status(g).get("connections", 0) > n and sendspin_status(g).get("queued_ms", 0) > 0
                                    for g, n in zip(gates, before)), 5)
    check(back, f"restart: both players ({direction}) are connected and playing again within 5 s")
    # Each player's clock and playout through the window, printed when it fails: a drift estimate
    # or a clock offset moving shows here, a device clock moving does not.
    trace = []
    while time.monotonic() < restarted + RESTART_SYNC_S + 10.5:
        row = [f"{time.monotonic() - restarted:.1f}"]
        for gate in gates:
            status = sendspin_status(gate)
            row.append(f"{status.get('clock_offset_ms')}/{status.get('clock_drift_ppm')}/{status.get('play_offset_ms')}")
        trace.append(" ".join(row))
        time.sleep(0.5)
    pairs, figures, ok = sync_window(recorder, restarted + RESTART_SYNC_S, 10)
    if not check(ok, f"restart: {RESTART_SYNC_S} s after the server ({direction}) is back, the two players are in sync "
                     f"again over 10 s: {e2e.describe_sync(figures)}"):
        print("  s after the restart, each player's clock offset ms/drift ppm/play offset ms:\n    " + "\n    ".join(trace))
        for name, gate in zip(("loud", "quiet"), gates):
            print(f"  {name} player's playback device since the server stopped:\n    "
                  + "\n    ".join(gate.device_lines(since=stopped_wall)[-20:]))
    carried = ["the last connection's estimate, which carries on" in gate.log_text() for gate in gates]
    check(all(carried), f"restart: each player ({direction}) found the restarted server on the clock it had learnt "
                        f"and carried its estimate on ({carried})")
    print("  offsets after the restart (s, ms):", describe_offsets(pairs, restarted, since=restarted - 1))
    print("  each player's playback device after the restart:", [g.playback_counts() for g in gates])
    e2e.note_underruns(zip(("loud player's", "quiet player's"), gates), counts, "around the restart")


def sync_window(recorder, start, seconds):
    """The quiet player's impulses against the loud one's heard so far, their figures over `seconds`
    from `start` (monotonic), and whether those hold the issue's bounds: nine in ten impulses paired,
    median within +-0.1 ms, 95th percentile of |offset| at most 0.25 ms."""
    x, t0 = recorder.samples()
    pairs = e2e.impulse_pairs(x, t0, IMPULSE, IMPULSE * QUIET_GAIN, RATE)
    figures = e2e.sync_figures(pairs, start, start + seconds)
    ok = (figures is not None and figures["count"] >= 0.9 * seconds * RATE / PERIOD
          and abs(figures["median"]) <= 0.1 and figures["p95"] <= 0.25)
    return pairs, figures, ok


def describe_offsets(pairs, origin, since=None):
    """`s:ms` for each impulse pair from `since`, its time counted from `origin`; `-` when unpaired."""
    return " ".join(f"{t - origin:.1f}:{o:+.2f}" if o is not None else f"{t - origin:.1f}:-"
                    for t, o in pairs if since is None or t >= since)


def check_sync(binary, scratch, dialed=False):
    """Two audiogate players in sync: dialing `sendspin serve`, or (`dialed`) waiting on their own
    ports for `sendspin serve --client` to dial them."""
    direction = "dialed by the server" if dialed else "dialing the server"
    source = pathlib.Path(scratch) / "impulses.wav"
    impulse_file(source)
    ports = [e2e.free_port(), e2e.free_port()] if dialed else []
    server = SendspinServe(scratch, source, clients=[f"ws://127.0.0.1:{port}/sendspin" for port in ports])
    recorder = None
    gates = []
    try:
        # Listening from before the players join: a stream joining the null sink later moves its
        # timing for tens of seconds (docs/benchmarks.md), which the players would follow mid-window.
        recorder = e2e.Recorder()
        for index, name in enumerate(("audiogate-loud", "audiogate-quiet")):
            # At debug level, whose one line at a reconnect says whether the clock estimate carried on.
            gate = start_audiogate(binary, ports[index] if dialed else server, scratch,
                                   ["--sendspin-codecs", "pcm", "--sendspin-name", name, "--device-idle-ms", "0"],
                                   log_level="debug")
            gates.append(gate)
            if not check(gate.start(), f"{name} starts"):
                return
        counts = [g.playback_counts() for g in gates]
        time.sleep(WARM_S)
        if not check(server.start(), f"sendspin serve{' --client' if dialed else ''} starts inside the namespace"):
            return
        playing = e2e.wait_for(lambda: all(sendspin_status(g).get("queued_ms", 0) > 0 for g in gates), 20)
        if dialed:
            check(all(sendspin_status(g).get("server", "").startswith("ws://127.0.0.1:") for g in gates),
                  f"each player shows the server that dialed it: {[sendspin_status(g).get('server') for g in gates]}")
        if not check(playing, f"both players ({direction}) join the server's group and play"):
            for gate in gates:
                print(gate.log_text()[-2000:])
            return
        set_master_volume(gates[1], QUIET_GAIN)
        started = time.monotonic()
        time.sleep(SETTLE_S + 31)
        pairs, figures, ok = sync_window(recorder, started + SETTLE_S, 30)
        if not check(ok, f"two audiogate players {direction} in sync over 30 s after {SETTLE_S} s: "
                         f"{e2e.describe_sync(figures)}"):
            for gate in gates:
                print("\n".join(line for line in gate.log_text().splitlines() if "sendspin" in line or "timed" in line)[-3000:])
            print(server.log.read_text()[-3000:])
        print("  offsets (s, ms):", describe_offsets(pairs, started))
        for name, gate in zip(("loud", "quiet"), gates):
            status = sendspin_status(gate)
            print(f"  {name}: clock offset {status.get('clock_offset_ms')} ms, error "
                  f"{status.get('clock_error_ms')} ms, drift {status.get('clock_drift_ppm')} ppm, play offset {status.get('play_offset_ms')} ms, "
                  f"late chunks {status.get('late_chunks')}, resyncs {status.get('resyncs')}, "
                  f"playback {gate.playback_counts()}")
        e2e.note_underruns(zip(("loud player's", "quiet player's"), gates), counts, "before the restart")
        check_restart(server, gates, recorder, direction)
    finally:
        if recorder:
            recorder.stop()
        for gate in gates:
            gate.stop()
        server.stop()


# The reference part: the two `sendspin daemon`s, each its name and its own volume (0-100, which it
# scales by (volume / 100) ** 1.5: 63 plays at 0.500, 25 at 0.125), so that with audiogate at 1 and at
# QUIET_GAIN the four impulse levels halve each time and every sum of them has one reading. The
# daemons slew at their 0.2 % limit for 20-30 s after joining; the window starts once they are done.
REFERENCE_VOLUMES = (("reference-1", 63), ("reference-2", 25))
REFERENCE_SETTLE_S = 30
REFERENCE_WINDOW_S = 30
# Loud samples this close are one impulse: offsets up to 200 ms are measured (impulses are 500 ms
# apart); a player further off is heard unpaired.
REFERENCE_JOIN_S = 0.2
# The daemon does not correct a sync error within 2 ms (its _CORRECTION_DEADBAND_US).
REFERENCE_DEADBAND_MS = 2.0


class ReferencePlayer:
    """`sendspin daemon`, the reference Python player, joined to `server` by its URL (so it neither
    listens nor announces itself by multicast DNS) and playing into the test card through PortAudio's
    ALSA `pulse` device. Its HOME, settings, identity (so its client id) and log are in a folder of its
    own under `scratch`; `volume` (0-100) is its own software volume, written to its settings file:
    it scales by (volume / 100) ** 1.5, so 63 plays at 0.500 and 25 at 0.125."""

    def __init__(self, scratch, server, name, volume):
        self.name = name
        self.server = server
        self.volume = volume
        self.home = pathlib.Path(scratch) / name
        self.settings = self.home / ".config/sendspin"
        self.log = self.home / "daemon.log"
        self.process = None

    @property
    def gain(self):
        return (self.volume / 100) ** 1.5

    def start(self):
        self.settings.mkdir(parents=True)
        # No hardware volume: with PulseAudio reachable the daemon would set the whole null sink's.
        (self.settings / "settings-daemon.json").write_text(
            json.dumps({"player_volume": self.volume, "use_hardware_volume": False}))
        argv = [str(SENDSPIN), "daemon", "--url", self.server.url, "--name", self.name, "--audio-device", "pulse",
                "--settings-dir", str(self.settings), "--hardware-volume", "false", "--disable-mpris"]
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(argv, cwd=self.home, env=dict(os.environ, HOME=str(self.home)),
                                            stdout=out, stderr=subprocess.STDOUT)

    def log_text(self):
        try:
            return self.log.read_text()
        except OSError:
            return ""

    def playing(self):
        """Whether its output stream has started (its log says so)."""
        return self.process is not None and self.process.poll() is None and "Stream STARTED" in self.log_text()

    def stop(self):
        if self.process:
            e2e.stop_process(self.process)


def check_reference(binary, scratch):
    """`--only reference` (not in scripts/run-tests.sh): audiogate against the reference Python player.
    Two audiogate processes (at 1 and QUIET_GAIN) and two `sendspin daemon`s (ReferencePlayer, at 0.5 and
    0.125 by their own volume) join one `sendspin serve` of the impulse file and play into the one null
    sink, their impulses told apart by level (e2e.impulse_clusters). Over REFERENCE_WINDOW_S after
    REFERENCE_SETTLE_S it prints the offsets (median, 95th percentile of |offset|) reference-2 minus
    reference-1, audiogate minus each reference, and the quiet audiogate minus the loud one, then checks
    that every pair was heard within REFERENCE_JOIN_S of each other for 90 % of the impulses, and that
    audiogate plays no later than the later reference player: audiogate minus the earlier reference at
    most the two references' distance plus the daemon's 2 ms deadband.

    Why not |audiogate - reference| <= |reference - reference|: the daemons date their output by
    PortAudio's latency estimate, which through the ALSA pulse plugin falls short, so both settle
    behind the server's timeline by tens of ms and often within a few ms of each other; audiogate,
    on the timeline, then leads both by more than they are apart. The check therefore catches
    audiogate playing later than the references (by more than they are apart) or off by more than
    REFERENCE_JOIN_S; an early error smaller than the references' own lag goes unseen."""
    source = pathlib.Path(scratch) / "impulses.wav"
    # Long enough that the recording never reaches the server's loop back to the file's start.
    impulse_file(source, seconds=120)
    server = SendspinServe(scratch, source)
    recorder = None
    gates, references = [], []
    try:
        if not check(server.start(), "reference: sendspin serve starts inside the namespace"):
            return
        for name in ("audiogate-loud", "audiogate-quiet"):
            gate = start_audiogate(binary, server, scratch, ["--sendspin-codecs", "pcm", "--sendspin-name", name])
            gates.append(gate)
            if not check(gate.start(), f"reference: {name} starts"):
                return
        for name, volume in REFERENCE_VOLUMES:
            reference = ReferencePlayer(scratch, server, name, volume)
            references.append(reference)
            reference.start()
        playing = e2e.wait_for(lambda: all(sendspin_status(g).get("queued_ms", 0) > 0 for g in gates)
                               and all(r.playing() for r in references), 30)
        if not check(playing, "reference: both audiogate players and both sendspin daemons join and play"):
            for gate in gates:
                print(gate.log_text()[-2000:])
            for reference in references:
                print(f"{reference.name}:\n{reference.log_text()[-3000:]}")
            return
        set_master_volume(gates[1], QUIET_GAIN)
        recorder = e2e.Recorder()
        started = time.monotonic()
        time.sleep(REFERENCE_SETTLE_S + REFERENCE_WINDOW_S + 1)
        x, t0 = recorder.samples()
        levels = {"audiogate-loud": IMPULSE, references[0].name: IMPULSE * references[0].gain,
                  "audiogate-quiet": IMPULSE * QUIET_GAIN, references[1].name: IMPULSE * references[1].gain}
        names = list(levels)
        clusters = e2e.impulse_clusters(x, t0, list(levels.values()), RATE, join_s=REFERENCE_JOIN_S)
        window = (started + REFERENCE_SETTLE_S, started + REFERENCE_SETTLE_S + REFERENCE_WINDOW_S)

        def offsets(reference, other):
            return e2e.impulse_offsets(clusters, names.index(reference), names.index(other), RATE)

        first, second = (r.name for r in references)
        pairs = {(first, second): offsets(first, second),
                 (first, "audiogate-loud"): offsets(first, "audiogate-loud"),
                 (second, "audiogate-loud"): offsets(second, "audiogate-loud"),
                 ("audiogate-loud", "audiogate-quiet"): offsets("audiogate-loud", "audiogate-quiet")}
        figures = {pair: e2e.sync_figures(found, *window) for pair, found in pairs.items()}
        print(f"  over {REFERENCE_WINDOW_S} s after {REFERENCE_SETTLE_S} s (offset = the second's impulse minus the first's):")
        for (reference, other), found in figures.items():
            print(f"  {other} - {reference}: {e2e.describe_sync(found)}")
        print("  every 2 s (s: reference-2 - reference-1, audiogate - reference-1, audiogate - reference-2, "
              "audiogate-quiet - audiogate-loud, ms):")
        rows = zip([t for t, _ in clusters], *([o for _, o in found] for found in pairs.values()))
        print("   ", " ".join(f"{t - started:.0f}:" + ",".join("-" if o is None else f"{o:+.2f}" for o in row)
                              for t, *row in rows if round((t - started) * 2) % 4 == 0))
        expected = REFERENCE_WINDOW_S * 2
        counts = {f"{other} - {reference}": f["count"] if f else 0 for (reference, other), f in figures.items()}
        if not check(all(count >= 0.9 * expected for count in counts.values()),
                     f"reference: every pair heard within {REFERENCE_JOIN_S * 1000:.0f} ms of each other for at "
                     f"least 90 % of the {expected} impulses ({counts}; a daemon's underflow re-anchors it "
                     f"far off, its log below says so)"):
            return
        # Both daemons lag the timeline (see above): audiogate must be no later than the later one.
        apart = figures[(first, second)]["median"]
        behind = {name: figures[(name, "audiogate-loud")]["median"] for name in (first, second)}
        earlier, later = sorted(behind, key=behind.get, reverse=True)
        check(behind[earlier] <= abs(apart) + REFERENCE_DEADBAND_MS,
              f"reference: audiogate plays no later than the later reference player: audiogate - {earlier} "
              f"{behind[earlier]:+.3f} ms <= the reference players' distance {abs(apart):.3f} ms + the daemon's "
              f"{REFERENCE_DEADBAND_MS:.0f} ms deadband (audiogate - {later} {behind[later]:+.3f} ms)")
    finally:
        if recorder:
            recorder.stop()
        for reference in references:
            reference.stop()
        for gate in gates:
            gate.stop()
        server.stop()
        for reference in references:
            print(f"  {reference.name}:", " | ".join(
                line.split(":", 2)[-1] for line in reference.log_text().splitlines()
                if any(word in line for word in ("Audio stream configured", "Stream STARTED", "reanchor", "underflow",
                                                  "Traceback", "Error"))))


def check_mdns(binary, scratch):
    """A player waiting on `--sendspin-port` is published through the Avahi daemon and found and
    dialed by an aiosendspin server browsing `_sendspin._tcp`, as Music Assistant finds players."""
    port = e2e.free_port()
    gate = server = None
    point = e2e.mark()
    # Before audiogate: it reaches the daemon through the bus address the rig exports.
    with e2e.PrivateAvahi(scratch) as avahi:
        try:
            gate = start_audiogate(binary, f"0.0.0.0:{port}", scratch, ["--sendspin-name", "audiogate-mdns"])
            if not check(gate.start(), "mdns: audiogate starts, waiting for servers on all interfaces"):
                return
            advertised = e2e.wait_for(lambda: sendspin_status(gate).get("advertised") is True, 10)
            check(advertised, f"mdns: /v1/status says advertised ({sendspin_status(gate)})")
            browse = subprocess.run(["avahi-browse", "-rpt", "_sendspin._tcp"], capture_output=True, text=True,
                                    timeout=20).stdout
            resolved = [line for line in browse.splitlines() if line.startswith("=") and f";{port};" in line]
            check(any("audiogate-mdns" in line and '"path=/sendspin"' in line and '"name=audiogate-mdns"' in line
                      and f";{avahi.ADDRESS};" in line for line in resolved),
                  f"mdns: avahi-browse resolves _sendspin._tcp 'audiogate-mdns' at {avahi.ADDRESS}:{port} with "
                  f"TXT path=/sendspin and name ({resolved or browse[-400:]})")
            server = RolesServer(scratch, discover=True)
            if not check(server.start(), "mdns: an aiosendspin server browsing _sendspin._tcp starts"):
                return
            joined = e2e.wait_for(lambda: (s := sendspin_status(gate)).get("connected")
                                  and s.get("server_name") == "audiogate roles e2e" and s, 20)
            check(joined, "mdns: the server found the player by mDNS and dialed it: connected to "
                          f"{(joined or sendspin_status(gate)).get('server')}")
            check(bool(joined) and joined.get("server", "").startswith(f"ws://{avahi.ADDRESS}:"),
                  f"mdns: it dialed the published address {avahi.ADDRESS}")
        finally:
            if e2e.failures_since(point):
                if gate:
                    print(gate.log_text()[-3000:])
                if server:
                    print(server.log.read_text()[-2000:])
                print(avahi.log_text()[-2000:])
            if gate:
                gate.stop()
            if server:
                server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    e2e.add_binary_argument(parser)
    parser.add_argument("--only", choices=["codecs", "roles", "panel", "pairing", "pairing-code", "duck", "aec", "sync", "dialed", "mdns", "reference"], help="run one part")
    args = parser.parse_args()
    if not SENDSPIN.exists():
        if shutil.which("python3.12") is None and shutil.which("python3.13") is None:
            print("skipped: no Python >= 3.12 here for the sendspin package, so no Sendspin server to test against")
            e2e.finish()
        check(False, f"{VENV.name} holds no sendspin: run scripts/install-deps.sh test")
        e2e.finish()
    e2e.enter_namespace(NAMESPACE_MARK)
    with tempfile.TemporaryDirectory(prefix="audiogate-sendspin-") as scratch:
        if args.only in (None, "codecs"):
            e2e.real_time(lambda directory: check_codecs(args.binary, directory), scratch)
        if args.only in (None, "roles"):
            with tempfile.TemporaryDirectory(dir=scratch) as directory:
                check_roles(args.binary, directory)
        if args.only in (None, "panel"):
            with tempfile.TemporaryDirectory(dir=scratch) as directory:
                check_panel(args.binary, directory)
        if args.only in (None, "pairing"):
            with tempfile.TemporaryDirectory(dir=scratch) as directory:
                check_pairing(args.binary, directory)
        if args.only in (None, "pairing-code"):
            with tempfile.TemporaryDirectory(dir=scratch) as directory:
                check_pairing_code(args.binary, directory)
        if args.only in (None, "duck"):
            e2e.real_time(lambda directory: check_duck(args.binary, directory), scratch)
        if args.only in (None, "aec"):
            e2e.real_time(lambda directory: check_aec(args.binary, directory), scratch)
        if args.only in (None, "sync"):
            e2e.real_time(lambda directory: check_sync(args.binary, directory), scratch, report=True)
        if args.only in (None, "mdns"):
            with tempfile.TemporaryDirectory(dir=scratch) as directory:
                check_mdns(args.binary, directory)
        if args.only in (None, "dialed"):
            e2e.real_time(lambda directory: check_sync(args.binary, directory, dialed=True), scratch, report=True)
        if args.only == "reference":
            e2e.real_time(lambda directory: check_reference(args.binary, directory), scratch, report=True)
    e2e.finish()


if __name__ == "__main__":
    main()
