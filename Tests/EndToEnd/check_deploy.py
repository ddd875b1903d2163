#!/usr/bin/env python3
"""Checks deploy/: Dockerfile stages and instructions, compose settings, the systemd unit."""
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

unit = (DEPLOY / "audiogate.service").read_text()
for option in ["SupplementaryGroups=audio", "ProtectSystem=strict", "NoNewPrivileges=yes", "RestrictAddressFamilies="]:
    check(option in unit, f"unit sets {option}")
check("DynamicUser=yes" in unit or re.search(r"^User=", unit, re.M), "unit runs as a dynamic or dedicated user")
analyze = shutil.which("systemd-analyze")
if analyze:
    with tempfile.TemporaryDirectory() as tmp:
        # verify needs the ExecStart binary to exist; point it at one that does.
        copy = pathlib.Path(tmp) / "audiogate.service"
        copy.write_text(unit.replace("/usr/local/bin/audiogate", "/bin/true"))
        result = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True)
        problems = [line for line in result.stderr.splitlines() if "audiogate.service" in line]
        check(result.returncode == 0 and not problems, "systemd-analyze verify passes " + " ".join(problems))
else:
    print("skip systemd-analyze (not installed)")

print(f"deploy checks: {'failed' if e2e.failures() else 'passed'}")
e2e.finish()
