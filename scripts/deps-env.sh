# Sourced by the scripts that run swift (the Makefile exports the same): the pkg-config file of
# WebRTC's audio processing library, which scripts/build-webrtc-apm.sh builds into .deps/.
audiogate_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PKG_CONFIG_PATH="$audiogate_root/.deps/webrtc-audio-processing-2.1/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
unset audiogate_root
