#!/usr/bin/env bash
# Decode CPU per compressed playback stream (MP3, Ogg Opus/Vorbis, FLAC, WebM); writes docs/bench-codecs.md.
#   Benchmarks/scripts/bench-codecs.sh                      release build (as make bench)
#   AUDIOGATE_BIN=path Benchmarks/scripts/bench-codecs.sh   an already built binary
# Needs scripts/install-deps.sh bench (ffmpeg, the test card, .venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/deps-env.sh

python=.venv/bin/python
[[ -x "$python" ]] || { echo "run scripts/install-deps.sh bench first" >&2; exit 1; }
if [[ -z "${AUDIOGATE_BIN:-}" ]]; then
    swift build -c release --product audiogate >/dev/null
    AUDIOGATE_BIN="$(swift build -c release --show-bin-path)/audiogate"
fi

. Benchmarks/scripts/bench-server.sh
start_server "$AUDIOGATE_BIN" --device pulse
mkdir -p docs
"$python" Benchmarks/scripts/bench_codecs.py --port "$port" --pid "$server" | tee docs/bench-codecs.md
