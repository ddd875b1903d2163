#!/usr/bin/env bash
# Encoding cost: CPU per encoded stream (Opus, FLAC, MP3, AAC at 16 kHz mono, from recording exports)
# and 1 vs 100 clients of one shared Opus setting; writes docs/bench-encode.md.
#   Benchmarks/scripts/bench-encode.sh                      release build (as make bench)
#   AUDIOGATE_BIN=path Benchmarks/scripts/bench-encode.sh   an already built binary
# Needs scripts/install-deps.sh bench (ffmpeg, paplay, the test card, .venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/deps-env.sh

python=.venv/bin/python
[[ -x "$python" ]] || { echo "run scripts/install-deps.sh bench first" >&2; exit 1; }
if [[ -z "${AUDIOGATE_BIN:-}" ]]; then
    swift build -c release --product audiogate >/dev/null
    AUDIOGATE_BIN="$(swift build -c release --show-bin-path)/audiogate"
fi

data="$(mktemp -d)"
. Benchmarks/scripts/bench-server.sh
start_server "$AUDIOGATE_BIN" --device pulse --data-dir "$data"
mkdir -p docs
"$python" Benchmarks/scripts/bench_encode.py --port "$port" --pid "$server" "$@" | tee docs/bench-encode.md
rm -rf "$data"
