#!/usr/bin/env bash
# CPU of the Snapcast client (FLAC, 48 kHz stereo) beside snapclient's on the same snapserver stream,
# same run: release build, pulse card; prints a table row for docs/benchmarks.md.
#   Benchmarks/scripts/bench-snapcast.sh [seconds-per-window] [runs]
# Needs scripts/install-deps.sh test (snapserver, snapclient, PulseAudio, .venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/deps-env.sh

seconds="${1:-20}"
runs="${2:-5}"
python=.venv/bin/python
[[ -x "$python" ]] || { echo "run scripts/install-deps.sh test first" >&2; exit 1; }

scripts/test-card.sh start >/dev/null
swift build -c release --product audiogate >/dev/null
"$python" Benchmarks/scripts/bench_snapcast.py --binary "$(swift build -c release --show-bin-path)/audiogate" \
    --seconds "$seconds" --runs "$runs"
