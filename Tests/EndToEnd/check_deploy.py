#!/usr/bin/env python3
"""Checks deploy/: Dockerfile stages and instructions, compose settings and hardening, the systemd unit."""
import ipaddress
import pathlib
import re
import shutil
import subprocess
import tempfile

import yaml

import e2e
from e2e import ROOT, check

DEPLOY = ROOT / "deploy"

dockerfile = (DEPLOY / "Dockerfile").read_text()
stages = re.findall(r"^FROM\s+(\S+)\s+AS\s+(\w+)", dockerfile, re.M | re.I)
check(len(stages) == 2, f"Dockerfile has a build and a run stage: {stages}")
check(stages and stages[0][0].startswith("swift:"), "build stage uses the official Swift image")
check(len(stages) > 1 and "debian" in stages[1][0] and "slim" in stages[1][0], "run stage is slim Debian")
run_stage = dockerfile.split("AS run", 1)[-1]
check("libasound2" in run_stage and "libspeexdsp1" in run_stage, "run stage installs libasound2 and libspeexdsp1")
check("-dev" not in run_stage, "run stage carries no -dev packages")
check(re.search(r"^USER\s+(?!root)\S+", run_stage, re.M) is not None, "runs as a non-root user")
check("--groups audio" in run_stage, "the user is in the audio group")
check("HEALTHCHECK" in run_stage and "/healthz" in run_stage, "HEALTHCHECK on /healthz")
check("AUDIOGATE_" in run_stage, "configured through AUDIOGATE_* environment")
check(re.search(r"useradd [^\n]*--uid 8750", run_stage) is not None,
      "the image's user has a fixed uid (8750), so a token file can be made readable by it alone")

hadolint = shutil.which("hadolint") or str(ROOT / ".venv/bin/hadolint")
if pathlib.Path(hadolint).exists():
    result = subprocess.run(
        [hadolint, "--config", str(DEPLOY / ".hadolint.yaml"), str(DEPLOY / "Dockerfile")],
        capture_output=True, text=True)
    check(result.returncode == 0, "hadolint passes" + ("" if result.returncode == 0 else ": " + result.stdout))
else:
    print("skip hadolint (not installed)")

compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
service = compose["services"]["audiogate"]
check("/dev/snd:/dev/snd" in service.get("devices", []), "compose passes /dev/snd through")
check("audio" in service.get("group_add", []), "compose adds the audio group")
check(all(str(p).startswith("127.0.0.1:") for p in service.get("ports", [])), "compose publishes on loopback only")

wyoming = yaml.safe_load((DEPLOY / "docker-compose.wyoming.yml").read_text())["services"]
gate, satellite = wyoming["audiogate"], wyoming["satellite"]
gate_env = gate.get("environment", {})
check(gate_env.get("AUDIOGATE_HOST") == "127.0.0.1" and "AUDIOGATE_WYOMING_ALLOW_REMOTE" not in gate_env,
      "Wyoming compose: audiogate's Wyoming ports stay on loopback")
check(gate.get("network_mode") == "host" and satellite.get("network_mode") == "host",
      "Wyoming compose: the satellite reaches audiogate's loopback ports (host network)")
ports = {gate_env.get("AUDIOGATE_WYOMING_MIC_PORT"), gate_env.get("AUDIOGATE_WYOMING_SND_PORT")}
command = " ".join(satellite.get("command", []))
check(all(port and f"tcp://127.0.0.1:{port}" in command for port in ports) and "--mic-uri" in command
      and "--snd-uri" in command, "Wyoming compose: the satellite's --mic-uri and --snd-uri point at audiogate")
check("wyoming-satellite==" in satellite.get("build", {}).get("dockerfile_inline", ""),
      "Wyoming compose: the satellite version is pinned")

snapcast = yaml.safe_load((DEPLOY / "docker-compose.snapcast.yml").read_text())["services"]
snap_gate, snapserver = snapcast["audiogate"], snapcast["snapserver"]
snap_env = snap_gate.get("environment", {})
snap_command = " ".join(snapserver.get("command", []))
check(snap_env.get("AUDIOGATE_SNAPCAST_SERVER") == "127.0.0.1:1704" and snap_gate.get("network_mode") == "host"
      and snapserver.get("network_mode") == "host", "Snapcast compose: audiogate joins the snapserver beside it on 1704")
check("pipe://" in snap_command and "--server.datadir=" in snap_command and "snapserver=0.26" in
      snapserver.get("build", {}).get("dockerfile_inline", ""),
      "Snapcast compose: a pinned snapserver with a pipe source and its own data directory")

sendspin = yaml.safe_load((DEPLOY / "docker-compose.sendspin.yml").read_text())["services"]
spin_gate, spin_server = sendspin["audiogate"], sendspin["sendspin"]
check(spin_gate.get("environment", {}).get("AUDIOGATE_SENDSPIN_SERVER") == "ws://127.0.0.1:8927/sendspin"
      and spin_gate.get("network_mode") == "host" and spin_server.get("network_mode") == "host",
      "Sendspin compose: audiogate joins the sendspin server beside it on 8927")
requirement = (ROOT / "scripts/requirements-sendspin.txt").read_text().split()[0]
check(requirement in spin_server.get("build", {}).get("dockerfile_inline", "")
      and re.search(r"^\s*USER\s+(?!root)\S+", spin_server["build"]["dockerfile_inline"], re.M) is not None,
      f"Sendspin compose: the server is the tested {requirement}, run as a non-root user")

# Every compose example: services without capabilities or privilege gain, read-only where they can
# be, and audiogate's token from a secret file.
SECRET = "/run/secrets/audiogate_token"
LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def interpolated(text):
    """A compose value with ${NAME:-default} taken at its default (no variable set)."""
    return re.sub(r"\$\{(\w+)(?::?-([^}]*))?\}", lambda match: match.group(2) or "", str(text))


def published_host(mapping):
    """The host address a `ports:` entry ("127.0.0.1:1780:1780", "1780:1780", long syntax) binds, or ""."""
    if isinstance(mapping, dict):
        return str(mapping.get("host_ip", ""))
    parts = str(mapping).rsplit(":", 2)
    return parts[0].strip("[]") if len(parts) == 3 else ""


def published_target(mapping):
    if isinstance(mapping, dict):
        return int(str(mapping.get("target")).split("/")[0])
    return int(str(mapping).split(":")[-1].split("/")[0].split("-")[0])


def snapserver_control(service):
    """Where snapserver's JSON-RPC (1705) and HTTP (1780) listen, by its command line: address or "off"."""
    options = {}
    for argument in service.get("command", []):
        if str(argument).startswith("--") and "=" in str(argument):
            name, value = str(argument)[2:].split("=", 1)
            options[name] = value
    answer = {}
    for kind in ("tcp", "http"):
        enabled = options.get(f"{kind}.enabled", "true").lower() not in ("false", "0", "no", "off")
        answer[kind] = options.get(f"{kind}.bind_to_address", "0.0.0.0") if enabled else "off"
    return answer


composes = {path.name: yaml.safe_load(path.read_text()) for path in sorted(DEPLOY.glob("docker-compose*.yml"))}
check(len(composes) == 4, f"four compose examples: {sorted(composes)}")
for file, document in composes.items():
    services = document.get("services", {})
    for name, service in services.items():
        where = f"{file}: {name}"
        check("ALL" in service.get("cap_drop", []), f"{where} drops every capability (cap_drop: [ALL])")
        check("no-new-privileges:true" in service.get("security_opt", []), f"{where} sets no-new-privileges")
        check(service.get("read_only") is True, f"{where} runs on a read-only root file system")
        if service.get("read_only"):
            check("/tmp" in [str(entry).split(":")[0] for entry in service.get("tmpfs", [])], f"{where} has a tmpfs /tmp to write to")
        environment = service.get("environment", {})
        check(not environment.get("AUDIOGATE_TOKEN"), f"{where} puts no token in the environment")
        for mapping in service.get("ports", []):
            check(published_host(mapping) in LOOPBACK, f"{where} publishes {mapping} on loopback only")
    gate = services.get("audiogate", {})
    secrets = [entry if isinstance(entry, str) else entry.get("source") for entry in gate.get("secrets", [])]
    check(gate.get("environment", {}).get("AUDIOGATE_TOKEN_FILE") == SECRET and "audiogate_token" in secrets
          and document.get("secrets", {}).get("audiogate_token", {}).get("file"),
          f"{file}: audiogate reads its token from the secret file {SECRET}")
    for name, service in services.items():
        if "snapserver" not in name:
            continue
        control = snapserver_control(service)
        check(all(address == "off" or address in LOOPBACK for address in control.values()),
              f"{file}: snapserver's JSON-RPC and HTTP listen on loopback or are off: {control}")
        exposed = [m for m in service.get("ports", []) if published_target(m) in (1705, 1780) and published_host(m) not in LOOPBACK]
        check(not exposed, f"{file}: snapserver's 1705 and 1780 are not published beyond loopback {exposed}")

satellite_uri = interpolated(" ".join(map(str, satellite.get("command", []))).split("--uri", 1)[-1].split()[0])
satellite_host = satellite_uri.removeprefix("tcp://").rsplit(":", 1)[0].strip("[]")
wyoming_text = (DEPLOY / "docker-compose.wyoming.yml").read_text()
check("${SATELLITE_ADDRESS" in " ".join(map(str, satellite.get("command", []))) and satellite_host in LOOPBACK
      and re.search(r"^#.*SATELLITE_ADDRESS", wyoming_text, re.M) is not None,
      f"Wyoming compose: the satellite listens on SATELLITE_ADDRESS (documented; unset: {satellite_uri})")


def listening():
    """(address, port) of every listening TCP socket on this machine."""
    sockets = set()
    for table, family in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 6)):
        try:
            lines = pathlib.Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != "0A":
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            # The kernel prints each 32-bit word in host (little-endian) order.
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            sockets.add((str(ipaddress.ip_address(raw)), int(port, 16)))
    return sockets


# The snapserver command line of the Snapcast example, run for real where snapserver is installed and
# its ports are free: the options exist and put 1705 and 1780 on loopback, 1704 on every interface.
snapserver_binary = shutil.which("snapserver")
if snapserver_binary and not {port for _, port in listening()} & {1704, 1705, 1780}:
    with tempfile.TemporaryDirectory() as tmp:
        arguments = [str(argument).replace("/var/lib/snapserver", tmp).replace("/run/snapfifo", tmp)
                     for argument in snapserver.get("command", [])]
        process = subprocess.Popen([snapserver_binary, *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            up = e2e.wait_for(lambda: {p for _, p in listening()} >= {1704, 1705, 1780}, 10)
            sockets = {(address, port) for address, port in listening() if port in (1704, 1705, 1780)}
            check(up and sockets == {("0.0.0.0", 1704), ("127.0.0.1", 1705), ("127.0.0.1", 1780)},
                  f"snapserver as the Snapcast example runs it listens on loopback for 1705 and 1780: {sorted(sockets)}")
        finally:
            e2e.stop_process(process)
else:
    print("skip running snapserver (not installed, or its ports are taken)")

unit = (DEPLOY / "audiogate.service").read_text()
for option in ["SupplementaryGroups=audio", "ProtectSystem=strict", "NoNewPrivileges=yes", "RestrictAddressFamilies=",
               "ProtectProc=invisible", "UMask=0077"]:
    check(option in unit, f"unit sets {option}")
check("DynamicUser=yes" in unit or re.search(r"^User=", unit, re.M), "unit runs as a dynamic or dedicated user")
limits = {name: re.search(rf"^{name}=(\S+)", unit, re.M) for name in ["LimitNOFILE", "TasksMax", "MemoryMax"]}
check(all(limits.values()), f"unit bounds files, tasks and memory: {[m.group(0) for m in limits.values() if m]}")
check(limits["LimitNOFILE"] and 1024 < int(limits["LimitNOFILE"].group(1)) <= 65536,
      "unit's LimitNOFILE is above systemd's 1024 and bounded")
# LoadCredential= is documented as a drop-in; it must verify as written.
credential = re.findall(r"^#\s+(LoadCredential=token:/etc/audiogate/token|Environment=AUDIOGATE_TOKEN_FILE=%d/token)$", unit, re.M)
check(len(credential) == 2, f"unit documents the token as a credential (LoadCredential=, AUDIOGATE_TOKEN_FILE=%d/token): {credential}")
analyze = shutil.which("systemd-analyze")
if analyze:
    with tempfile.TemporaryDirectory() as tmp:
        # verify needs the ExecStart binary to exist; point it at one that does.
        copy = pathlib.Path(tmp) / "audiogate.service"
        for variant, text in [("as shipped", unit), ("with the credential drop-in", unit + "\n[Service]\n" + "\n".join(credential) + "\n")]:
            copy.write_text(text.replace("/usr/local/bin/audiogate", "/bin/true"))
            result = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True)
            problems = [line for line in result.stderr.splitlines() if "audiogate.service" in line]
            check(result.returncode == 0 and not problems, f"systemd-analyze verify passes {variant} " + " ".join(problems))
        copy.write_text(unit.replace("/usr/local/bin/audiogate", "/bin/true"))
        security = subprocess.run([analyze, "security", "--offline=yes", str(copy)], capture_output=True, text=True)
        exposure = re.search(r"Overall exposure level for audiogate.service: ([0-9.]+)", security.stdout)
        if exposure:
            check(float(exposure.group(1)) <= 2.0, f"systemd-analyze security: exposure {exposure.group(1)} (at most 2.0)")
        else:
            print("skip systemd-analyze security (no --offline here)")
else:
    print("skip systemd-analyze (not installed)")

print(f"deploy checks: {'failed' if e2e.failures() else 'passed'}")
e2e.finish()
