#!/usr/bin/env bash
# Builds WebRTC's audio processing library (webrtc-audio-processing 2.1: the AEC3 echo canceller,
# noise suppression, gain control and the GMM voice detector) from source into .deps/ as a static
# library, so the binary needs no runtime package for it. Debian 12 ships only 0.3, whose canceller
# (AEC2) loses far more of the user's voice in double talk.
# Needs meson, ninja, a C++20 compiler and python3-venv (to fetch the pinned source with pip).
# Package.swift finds the library through the pkg-config file written here, in the folder that
# scripts/deps-env.sh puts on PKG_CONFIG_PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
version=2.1
prefix="$PWD/.deps/webrtc-audio-processing-$version"

# Meson's own file leaves out the include folder of the bundled abseil headers, which the API's
# headers include; this one names both, and only flags SwiftPM takes from a pkg-config file.
write_pkg_config() {
    mkdir -p "$prefix/lib/pkgconfig"
    cat >"$prefix/lib/pkgconfig/webrtc-audio-processing-2.pc" <<PC
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: webrtc-audio-processing-2
Description: WebRTC Audio Processing library (static, built by scripts/build-webrtc-apm.sh)
Version: $version
Libs: -L\${libdir} -lwebrtc-audio-processing-2 -lrt -lpthread
Cflags: -I\${includedir}/webrtc-audio-processing-2 -I\${includedir}
PC
}

if [[ -f "$prefix/lib/libwebrtc-audio-processing-2.a" && -f "$prefix/.complete" ]]; then
    # A checkout that built the library before the file was written here (or was moved) gets it now.
    grep -qs "^prefix=$prefix\$" "$prefix/lib/pkgconfig/webrtc-audio-processing-2.pc" \
        && grep -qs "built by scripts/build-webrtc-apm.sh" "$prefix/lib/pkgconfig/webrtc-audio-processing-2.pc" \
        || write_pkg_config
    exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "building webrtc-audio-processing $version (a few minutes, once)"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --no-binary aec-audio-processing \
    --require-hashes -r scripts/requirements-webrtc-apm.txt -d "$work"
tar -xzf "$work"/aec_audio_processing-*.tar.gz -C "$work"
source="$(echo "$work"/aec_audio_processing-*/webrtc-audio-processing)"
grep -q "version : '$version'" "$source/meson.build" || { echo "build-webrtc-apm: expected version $version" >&2; exit 1; }
rm -rf "$prefix"
meson setup "$work/build" "$source" --prefix="$prefix" --libdir=lib --buildtype=release \
    -Ddefault_library=static --wrap-mode=nodownload >"$work/setup.log" || { cat "$work/setup.log" >&2; exit 1; }
ninja -C "$work/build" >"$work/build.log" || { tail -n 40 "$work/build.log" >&2; exit 1; }
meson install -C "$work/build" >/dev/null
# The voice detector's header is not part of the installed API; the shim calls it.
install -D -m 644 "$source/webrtc/common_audio/vad/include/webrtc_vad.h" \
    "$prefix/include/webrtc-audio-processing-2/common_audio/vad/include/webrtc_vad.h"
write_pkg_config
touch "$prefix/.complete"
