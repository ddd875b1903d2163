#!/usr/bin/env bash
# Builds a Debian package from a release binary, for this machine's architecture:
#   scripts/build-deb.sh [BINARY] [OUTPUT-DIR]     (defaults: .build/release/audiogate, the checkout)
# It holds /usr/bin/audiogate, the Swift runtime libraries the binary links (in /usr/lib/audiogate,
# found through the binary's RUNPATH, so the machine it is installed on needs no Swift), the
# systemd unit and /etc/default/audiogate. Depends: the Debian packages of every other shared
# library the binary loads. Needs dpkg-deb and patchelf; `make deb` builds the binary first.
set -euo pipefail
cd "$(dirname "$0")/.."

binary="${1:-.build/release/audiogate}"
out="${2:-$PWD}"
for tool in dpkg-deb patchelf ldd; do
    command -v "$tool" >/dev/null || { echo "build-deb: $tool is missing (apt-get install dpkg-dev patchelf)" >&2; exit 1; }
done
[[ -x "$binary" ]] || { echo "build-deb: no binary at $binary (swift build -c release --product audiogate)" >&2; exit 1; }

version="$("$binary" --version | tr -d '[:space:]')"
[[ "$version" =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || { echo "build-deb: '$binary --version' printed no version: '$version'" >&2; exit 1; }
arch="$(dpkg --print-architecture)"
libdir=/usr/lib/audiogate

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
install -d "$root/DEBIAN" "$root/usr/bin" "$root$libdir" "$root/lib/systemd/system" "$root/etc/default" \
    "$root/usr/share/doc/audiogate"

# The Debian package owning a library path; usrmerge lets ldd and dpkg spell /lib and /usr/lib apart.
owner() {
    local path candidates=("$1" "$(realpath "$1")")
    for path in "${candidates[@]}"; do
        candidates+=("${path#/usr}" "/usr${path}")
    done
    for path in "${candidates[@]}"; do
        dpkg-query -S "$path" 2>/dev/null | head -n1 | cut -d: -f1 && return 0
    done
    return 1
}

# The dependency a package's shlibs file states for a soname ("libasound2 (>= 1.0.16)"), else the name.
dependency() {
    local package="$1" soname="$2" name version shlibs
    name="${soname%%.so*}"
    version="${soname#*.so.}"
    shlibs="$(ls /var/lib/dpkg/info/"$package".shlibs /var/lib/dpkg/info/"$package":*.shlibs 2>/dev/null | head -n1 || true)"
    if [[ -n "$shlibs" ]]; then
        awk -v name="$name" -v version="$version" '$1 == name && $2 == version { $1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }' "$shlibs" \
            | grep . && return 0
    fi
    echo "$package"
}

# ldd resolves every library loaded, the Swift runtime's own dependencies included: those from no
# Debian package (the toolchain's runtime) are shipped alongside.
declare -A paths
while read -r soname path; do
    paths[$soname]="$path"
    owner "$path" >/dev/null || install -m 644 "$path" "$root$libdir/$soname"
done < <(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')
if ldd "$binary" | grep -q "not found"; then
    echo "build-deb: $binary links libraries this machine lacks:" >&2
    ldd "$binary" | grep "not found" >&2
    exit 1
fi
# Depends: the packages of the libraries the binary and the shipped runtime name themselves
# (DT_NEEDED); what those need in turn comes with their packages' own Depends.
depends=()
for soname in $(patchelf --print-needed "$binary" "$root$libdir"/*.so* | sort -u); do
    [[ -e "$root$libdir/$soname" ]] && continue
    # The dynamic loader comes with libc6, which libc.so.6 already names.
    [[ "$soname" == ld-*.so* || "$soname" == ld64.so* ]] && continue
    path="${paths[$soname]:-}"
    [[ -n "$path" ]] || { echo "build-deb: ldd did not resolve $soname" >&2; exit 1; }
    package="$(owner "$path")"
    depends+=("$(dependency "$package" "$soname")")
done

install -m 755 "$binary" "$root/usr/bin/audiogate"
# Debug info is most of the binary's size; the symbol table stays for backtraces.
if command -v strip >/dev/null; then
    strip --strip-debug "$root/usr/bin/audiogate" "$root$libdir"/*.so* 2>/dev/null || true
fi
patchelf --set-rpath "$libdir" "$root/usr/bin/audiogate"
# The runtime's libraries find each other in their own folder.
for library in "$root$libdir"/*.so*; do
    [[ -e "$library" ]] && patchelf --set-rpath '$ORIGIN' "$library"
done

sed -e 's#/usr/local/bin/audiogate#/usr/bin/audiogate#g' \
    -e '1,/^\[Unit\]/{/^#/d}' deploy/audiogate.service >"$root/lib/systemd/system/audiogate.service"
chmod 644 "$root/lib/systemd/system/audiogate.service"

cat >"$root/etc/default/audiogate" <<'EOF'
# audiogate settings, read by audiogate.service: `systemctl restart audiogate` after a change.
# Each AUDIOGATE_* variable is a flag of `audiogate serve` (see `audiogate serve --help`); lists
# (AUDIOGATE_ALLOW_ORIGIN, AUDIOGATE_ALLOW_HOST) are comma-separated. Values set here override the unit's.
# This file is root's alone (mode 0600): the token may go here, as AUDIOGATE_TOKEN=. Better, put it
# in /etc/audiogate/token (root, 0600) and hand it to the service as a credential, outside any
# environment, with `systemctl edit audiogate`:
#   [Service]
#   LoadCredential=token:/etc/audiogate/token
#   Environment=AUDIOGATE_TOKEN_FILE=%d/token
# A --host other than loopback without a token refuses to start (AUDIOGATE_INSECURE_NO_TOKEN=1 serves
# a trusted network without one).
#AUDIOGATE_HOST=127.0.0.1
#AUDIOGATE_PORT=8750
#AUDIOGATE_DEVICE=auto
#AUDIOGATE_TOKEN=
#AUDIOGATE_ALLOW_ORIGIN=
#AUDIOGATE_ALLOW_HOST=
#AUDIOGATE_RETENTION_HOURS=24
# The Sendspin player's static pairing code (8 digits), for a server that requires pairing; it is a
# secret, so here rather than on a command line. POST /v1/sendspin/pairing opens its window.
#AUDIOGATE_SENDSPIN_PAIRING_CODE=
EOF
# The token may be in it: readable by root (systemd reads it for the unit) and nobody else.
chmod 600 "$root/etc/default/audiogate"
echo /etc/default/audiogate >"$root/DEBIAN/conffiles"

cat >"$root/usr/share/doc/audiogate/README.Debian" <<'EOF'
audiogate for Debian
--------------------

The service is installed but not enabled: the server takes the sound card over, so starting it is
a choice. Settings are in /etc/default/audiogate (root only: the token may go there, or better in
/etc/audiogate/token as a systemd credential, as its comments show); then

    systemctl enable --now audiogate
    curl http://127.0.0.1:8750/healthz

The Swift runtime libraries the binary needs are in /usr/lib/audiogate.
EOF
chmod 644 "$root/usr/share/doc/audiogate/README.Debian"

# Maintainer scripts: only when systemd runs (never in a container or chroot without it), and the
# unit is never enabled or started by installing.
cat >"$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
# A settings file kept from a version that installed it world-readable may hold the token.
if [ "$1" = configure ] && [ -f /etc/default/audiogate ]; then chmod go-rwx /etc/default/audiogate; fi
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
    # An upgrade restarts a service the administrator runs, so it uses the new binary.
    if [ -n "$2" ]; then systemctl try-restart audiogate.service || true; fi
fi
exit 0
EOF
cat >"$root/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
    systemctl disable --now audiogate.service || true
fi
exit 0
EOF
cat >"$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = remove ] || [ "$1" = purge ]; then
    # An enablement made while systemd was not running leaves only this link behind.
    rm -f /etc/systemd/system/multi-user.target.wants/audiogate.service
    if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
fi
if [ "$1" = purge ]; then
    # The recordings (StateDirectory= with DynamicUser= keeps them under /var/lib/private).
    rm -rf /var/lib/private/audiogate /var/lib/audiogate
fi
exit 0
EOF
chmod 755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

# One entry per package: a versioned one wins over the bare name.
depends_line="$(printf '%s\n' "${depends[@]}" | sort -u | awk '{ name = $1; line[name] = (name in line && index(line[name], "(")) ? line[name] : $0 }
    END { for (name in line) print line[name] }' | sort | paste -sd, - | sed 's/,/, /g')"
size="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
cat >"$root/DEBIAN/control" <<EOF
Package: audiogate
Version: $version
Architecture: $arch
Maintainer: audiogate developers <audiogate@users.noreply.github.com>
Installed-Size: $size
Depends: $depends_line
Section: sound
Priority: optional
Homepage: https://github.com/audiogate/audiogate
Description: local audio gateway: the sound card as an HTTP and WebSocket API
 One server process owns the sound card (ALSA) and gives programs on the machine
 a documented HTTP and WebSocket API to it: live capture resampled to what the
 client asks for, gapless mixed playback with marks and barge-in, recordings,
 text to speech and a browser control panel.
EOF

mkdir -p "$out"
deb="$out/audiogate_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
