#!/usr/bin/env bash
# Installs the Debian packages audiogate needs: build (default) or also test.
#   scripts/install-deps.sh           build and run: ALSA and speexdsp headers, and WebRTC's audio processing
#                                     library built from source into .deps/ (scripts/build-webrtc-apm.sh)
#   scripts/install-deps.sh test      also PulseAudio, the ALSA pulse plugin, alsa-utils, sox, Python test tools,
#                                     ffmpeg (codec fixtures), espeak-ng, Chromium and its WebDriver (the demo page check),
#                                     avahi-daemon and dbus-daemon (the Sendspin check's private mDNS)
#   scripts/install-deps.sh bench     the test set without Chromium; both add valgrind for the idle benchmark
#   scripts/install-deps.sh gate      build set and what the callgrind gate needs (valgrind, binutils, cc, python3)
set -euo pipefail

want=(libasound2-dev libspeexdsp-dev g++ pkg-config)
# WebRTC's audio processing 2.1 (the AEC3 canceller) is built from its source: meson, ninja, and
# python3-venv for the pinned download.
want+=(meson ninja-build python3 python3-venv)
# make deb points the binary at the Swift runtime it ships.
want+=(patchelf)
# The Sendspin player's mDNS advertisement goes through the Avahi daemon (libavahi-client).
want+=(libavahi-client-dev)
# The Sendspin static pairing code's CPace (Elligator2 onto Curve25519) comes from libsodium.
want+=(libsodium-dev)
# Compressed playback (libavformat/libavcodec) and /v1/say (espeak-ng and its voice data).
want+=(libavformat-dev libavcodec-dev libavutil-dev libespeak-ng-dev espeak-ng-data)
if [[ "${1:-}" == "test" || "${1:-}" == "bench" ]]; then
    want+=(pulseaudio pulseaudio-utils libasound2-plugins alsa-utils sox curl python3 python3-venv procps espeak-ng ffmpeg)
fi
if [[ "${1:-}" == "test" ]]; then
    want+=(chromium chromium-driver)
fi
# check_sendspin.py's mDNS part runs a D-Bus system bus and avahi-daemon of its own in its private network
# namespace (e2e.PrivateAvahi: dbus-daemon, avahi-daemon, avahi-utils, and ip from iproute2 for its veth pair).
if [[ "${1:-}" == "test" ]]; then
    want+=(avahi-daemon avahi-utils dbus-daemon iproute2)
fi
# The Snapcast client's peers (check_snapcast.py, bench-snapcast.sh): Debian's snapserver and snapclient 0.26.
if [[ "${1:-}" == "test" || "${1:-}" == "bench" ]]; then
    want+=(snapserver snapclient)
fi
# The Sendspin reference player (`sendspin daemon`, check_sendspin.py --only reference) plays through PortAudio.
if [[ "${1:-}" == "test" || "${1:-}" == "bench" ]]; then
    want+=(libportaudio2)
fi
# Instruction counts in the idle benchmark and the callgrind gate: valgrind, and objcopy (binutils) for a
# copy of the binary without the DWARF 5 debug info valgrind 3.19 cannot read.
if [[ "${1:-}" == "test" || "${1:-}" == "bench" ]]; then
    want+=(valgrind binutils)
fi
if [[ "${1:-}" == "gate" ]]; then
    want+=(valgrind binutils gcc libc6-dev python3)
fi

missing=()
for pkg in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    # A machine that gets avahi-daemon here gets it masked first, where systemd runs: its postinst would
    # otherwise start it, announcing the host on the real network (tests run their own, in a namespace;
    # elsewhere nothing starts it: Debian 12's package has no init script). Undo: systemctl unmask
    # avahi-daemon.service avahi-daemon.socket.
    if [[ " ${missing[*]} " == *" avahi-daemon "* && -d /run/systemd/system ]]; then
        $sudo systemctl mask avahi-daemon.service avahi-daemon.socket
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

scripts/build-webrtc-apm.sh

if [[ "${1:-}" == "test" || "${1:-}" == "bench" ]]; then
    # Python clients for the conformance and load tools live in a project-local venv.
    if [[ ! -x .venv/bin/python ]]; then
        python3 -m venv .venv
    fi
    .venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements-test.txt
    # The Python client package (clients/python), as its users install it.
    .venv/bin/python -m pip install -q --disable-pip-version-check ./clients/python
    # wyoming-satellite pins its own wyoming version: it lives in a venv of its own.
    if [[ ! -x .venv-satellite/bin/python ]]; then
        python3 -m venv .venv-satellite
    fi
    .venv-satellite/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements-wyoming-satellite.txt
    # Pipecat and LiveKit Agents bring their own dependency trees: each gets a venv of its own,
    # with the audiogate client and its framework extra.
    for framework in pipecat livekit; do
        if [[ ! -x .venv-$framework/bin/python ]]; then
            python3 -m venv .venv-$framework
        fi
        .venv-$framework/bin/python -m pip install -q --disable-pip-version-check \
            -r scripts/requirements-$framework.txt "./clients/python[$framework]"
    done
    # The Sendspin reference server (check_sendspin.py) needs Python 3.12 or newer: the first such
    # interpreter on PATH, else pyenv's newest 3.12+ (its shims answer only for a selected version).
    sendspin_python=""
    for candidate in python3.13 python3.12 python3; do
        if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            sendspin_python=$candidate
            break
        fi
    done
    if [[ -z $sendspin_python ]] && command -v pyenv >/dev/null; then
        version=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.(1[2-9]|[2-9][0-9])(\.|$)' | sort -V | tail -1)
        [[ -n $version ]] && sendspin_python="$(pyenv root)/versions/$version/bin/python3"
    fi
    if [[ -z $sendspin_python ]]; then
        echo "no Python >= 3.12: check_sendspin.py will be skipped"
    else
        if [[ ! -x .venv-sendspin/bin/python ]]; then
            "$sendspin_python" -m venv .venv-sendspin
        fi
        .venv-sendspin/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements-sendspin.txt
    fi
fi
