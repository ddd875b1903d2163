#!/usr/bin/env python3
"""Checks the Debian package (run by `make test`): scripts/build-deb.sh builds it from the release
binary; it installs with apt-get, runs without the Swift toolchain, carries its unit and
configuration, and is purged without a trace.

    .venv/bin/python Tests/EndToEnd/check_deb.py [--binary .build/release/audiogate]

It checks that:
  - the package is named audiogate_VERSION_ARCH.deb, with the binary's --version and this
    machine's architecture, and Depends names the Debian packages of the libraries it links;
  - `apt-get install ./audiogate_*.deb` installs it; /usr/bin/audiogate --version answers;
  - every library the installed binary loads is either its own copy of the Swift runtime in
    /usr/lib/audiogate or from a Debian package (nothing from the toolchain), and it runs with the
    toolchain's folder hidden (as root, in a mount namespace);
  - the installed server serves /healthz and /v1/audiogate.js (built-in loopback card);
  - the unit is /lib/systemd/system/audiogate.service running /usr/bin/audiogate with
    /etc/default/audiogate (a conffile, root's alone: mode 0600, as the token may be in it, and its
    comments say how to pass the token as a credential instead), and installing did not enable it;
  - `apt-get remove --purge` leaves none of the package's files.

Needs root or sudo, dpkg-deb and patchelf (scripts/install-deps.sh test). Refuses to run when an
audiogate package is installed already: the check would replace it. Environment: AUDIOGATE_BINARY
(default .build/release/audiogate, built with `swift build -c release` first when missing).
"""
import argparse
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request

import e2e
from e2e import ROOT, check

DEFAULT_RELEASE = ROOT / ".build/release/audiogate"
SUDO = [] if os.geteuid() == 0 else ["sudo", "-n"]
# Another apt-get on the machine holds the lock for a while; wait for it rather than fail.
APT = SUDO + ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", "DPkg::Lock::Timeout=120", "-y", "-q"]


def run(argv, **kwargs):
    return subprocess.run(argv, capture_output=True, text=True, **kwargs)


def installed(package="audiogate"):
    result = run(["dpkg-query", "-W", "-f=${Status}", package])
    return result.returncode == 0 and "install ok installed" in result.stdout


def package_of(path):
    """The Debian package owning a library (under either spelling usrmerge allows), or None."""
    real = os.path.realpath(path)
    for candidate in [path, real, real.removeprefix("/usr"), "/usr" + real]:
        found = run(["dpkg-query", "-S", candidate])
        if found.returncode == 0:
            return found.stdout.split(":")[0].strip()
    return None


def serves(binary, work):
    """Starts the installed binary on the loopback card; returns what /healthz and the module answer."""
    port = e2e.free_port()
    process = subprocess.Popen([binary, "serve", "--device", "loopback", "--host", "127.0.0.1", "--port", str(port),
                                "--data-dir", str(work / "data"), "--log-level", "warning"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def get(path):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as response:
                    return response.read()
            except OSError:
                return None
        health = e2e.wait_for(lambda: get("/healthz"), 10)
        return health, get("/v1/audiogate.js")
    finally:
        e2e.stop_process(process)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=pathlib.Path,
                        default=pathlib.Path(os.environ.get("AUDIOGATE_BINARY", DEFAULT_RELEASE)),
                        help="the release binary to package (default .build/release/audiogate)")
    args = parser.parse_args()
    for tool in ["dpkg-deb", "patchelf", "apt-get"]:
        if not shutil.which(tool):
            sys.exit(f"check-deb: {tool} is missing (apt-get install -y dpkg-dev patchelf)")
    if SUDO and run(SUDO + ["true"]).returncode != 0:
        sys.exit("check-deb: installing the package needs root or password-less sudo")
    if installed():
        sys.exit("check-deb: an audiogate package is installed already; this check would replace it "
                 "(apt-get remove audiogate first)")
    if not os.access(args.binary, os.X_OK):
        subprocess.run(["swift", "build", "-c", "release", "--product", "audiogate"], cwd=ROOT, check=True)

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="audiogate-deb-") as work:
        work = pathlib.Path(work)
        # The package is world-readable so apt's sandbox user can read it.
        os.chmod(work, 0o755)
        build = run([str(ROOT / "scripts/build-deb.sh"), str(args.binary), str(work)])
        deb = pathlib.Path(build.stdout.strip().splitlines()[-1]) if build.returncode == 0 and build.stdout.strip() else None
        if not check(deb is not None and deb.is_file(), f"scripts/build-deb.sh builds a package ({deb})"):
            print(build.stderr[-2000:])
            e2e.finish()

        version = run([str(args.binary), "--version"]).stdout.strip()
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        field = lambda name: run(["dpkg-deb", "-f", str(deb), name]).stdout.strip()
        size_mb = deb.stat().st_size / 1e6
        print(f"     {deb.name}: {size_mb:.1f} MB; Depends: {field('Depends')}")
        check(deb.name == f"audiogate_{version}_{arch}.deb" and field("Version") == version
              and field("Architecture") == arch, f"named and labelled with version {version} and architecture {arch}")
        depends = {entry.split()[0] for entry in field("Depends").split(",") if entry.strip()}
        contents = run(["dpkg-deb", "-c", str(deb)]).stdout
        check("./usr/lib/audiogate/libswiftCore.so" in contents, "the Swift runtime ships in /usr/lib/audiogate")
        # Every library the binary names itself is shipped or comes from a package in Depends.
        resolved = dict(line.split("=>")[0].split()[:1] + [line.split("=>")[1].split("(")[0].strip()]
                        for line in run(["ldd", str(args.binary)]).stdout.splitlines() if "=>" in line)
        missing = []
        for soname in run(["patchelf", "--print-needed", str(args.binary)]).stdout.split():
            if f"./usr/lib/audiogate/{soname}" in contents or soname.startswith("ld-"):
                continue
            package = package_of(resolved.get(soname, soname))
            if package not in depends:
                missing.append(f"{soname} ({package})")
        check("libasound2" in depends and not missing,
              f"Depends names the package of every library the binary links ({len(depends)} packages)"
              + (f"; missing: {missing}" if missing else ""))

        install = run(APT + ["install", str(deb)])
        if not check(install.returncode == 0 and installed(), "apt-get install ./audiogate_*.deb installs it"):
            print(install.stdout[-1500:], install.stderr[-1500:])
            e2e.finish()
        try:
            files = [line for line in run(["dpkg", "-L", "audiogate"]).stdout.splitlines() if line.strip()]
            answer = run(["/usr/bin/audiogate", "--version"])
            check(answer.returncode == 0 and answer.stdout.strip() == version,
                  f"/usr/bin/audiogate --version answers {answer.stdout.strip()!r}")

            libraries = [line.split("=>")[1].split("(")[0].strip() for line in run(["ldd", "/usr/bin/audiogate"]).stdout.splitlines()
                         if "=>" in line]
            foreign = [path for path in libraries
                       if not path.startswith("/usr/lib/audiogate/") and package_of(path) is None]
            check(libraries and not foreign and "not found" not in " ".join(libraries),
                  f"it loads {len(libraries)} libraries, none from the toolchain" + (f": {foreign}" if foreign else ""))

            # Stronger: the toolchain hidden under an empty tmpfs in a mount namespace of its own,
            # where the machine allows one (root; not every container does).
            swift = shutil.which("swift")
            toolchain = pathlib.Path(os.path.realpath(swift)).parents[2] if swift else None
            if toolchain and toolchain != pathlib.Path("/") and shutil.which("unshare") and not SUDO:
                hidden = run(["unshare", "-m", "sh", "-c",
                              f"mount -t tmpfs none '{toolchain}' && exec /usr/bin/audiogate --version"])
                if "mount" in hidden.stderr and hidden.returncode != 0:
                    print(f"     skip: no mount namespace here to hide {toolchain} ({hidden.stderr.strip()[:120]})")
                else:
                    check(hidden.returncode == 0 and hidden.stdout.strip() == version,
                          f"it runs with the Swift toolchain ({toolchain}) hidden")

            health, module = serves("/usr/bin/audiogate", work)
            check(health is not None and b'"ok"' in health and module is not None and b"export async function capture(" in module,
                  "the installed server serves /healthz and /v1/audiogate.js")

            unit = pathlib.Path("/lib/systemd/system/audiogate.service")
            text = unit.read_text() if unit.exists() else ""
            check("ExecStart=/usr/bin/audiogate serve" in text and "EnvironmentFile=-/etc/default/audiogate" in text,
                  f"the unit {unit} runs /usr/bin/audiogate with /etc/default/audiogate")
            if shutil.which("systemd-analyze"):
                verify = run(["systemd-analyze", "verify", str(unit)])
                problems = [line for line in verify.stderr.splitlines() if "audiogate.service" in line]
                check(not problems, "systemd-analyze verify accepts the unit" + (f": {problems}" if problems else ""))
            conffiles = run(["dpkg-query", "-W", "-f=${Conffiles}", "audiogate"]).stdout
            check("/etc/default/audiogate" in conffiles and pathlib.Path("/etc/default/audiogate").exists(),
                  "/etc/default/audiogate is a conffile")
            settings = pathlib.Path("/etc/default/audiogate")
            info = settings.stat() if settings.exists() else None
            check(info is not None and stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == 0,
                  f"/etc/default/audiogate is root's alone (mode {oct(stat.S_IMODE(info.st_mode)) if info else '-'}, 0o600 wanted)")
            comments = settings.read_text() if settings.exists() else ""
            check("LoadCredential=token:/etc/audiogate/token" in comments and "AUDIOGATE_TOKEN_FILE=%d/token" in comments,
                  "its comments say how to pass the token as a credential")
            check(not pathlib.Path("/etc/systemd/system/multi-user.target.wants/audiogate.service").exists(),
                  "installing does not enable the service")
        finally:
            remove = run(APT + ["remove", "--purge", "audiogate"])
        check(remove.returncode == 0 and not installed(), "apt-get remove --purge removes it")
        # Shared directories (/usr/bin, /lib) stay, of course; the package's own ones must go.
        left = [path for path in files if os.path.lexists(path) and not os.path.isdir(path)
                or path.startswith(("/usr/lib/audiogate", "/usr/share/doc/audiogate")) and os.path.lexists(path)]
        check(files and not left, f"none of its {len(files)} paths is left" + (f": {left}" if left else ""))
    print(f"deb check: {'failed: ' + ', '.join(e2e.failures()) if e2e.failures() else 'passed'} "
          f"in {time.monotonic() - started:.0f} s")
    e2e.finish()


if __name__ == "__main__":
    main()
