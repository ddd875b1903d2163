#!/usr/bin/env bash
# Idle and per-client cost: release build, loopback and pulse cards, 0-1000 capture clients, one
# playback sender, the same client paths on bare swift-nio, latency rows and callgrind instruction
# counts per capture period; writes docs/bench-idle.md. All rows in one invocation (about 25 minutes).
#   Benchmarks/scripts/bench-idle.sh [seconds-per-window] [runs]
# Needs scripts/install-deps.sh test (PulseAudio, ALSA pulse plugin, valgrind, cc, .venv with websockets).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/deps-env.sh

seconds="${1:-20}"
runs="${2:-3}"
python=.venv/bin/python
[[ -x "$python" ]] || { echo "run scripts/install-deps.sh test first" >&2; exit 1; }

scripts/test-card.sh start >/dev/null
swift build -c release --product audiogate >/dev/null
swift build -c release --package-path Benchmarks --product nio-floor >/dev/null
binary="$(swift build -c release --show-bin-path)/audiogate"
"$python" Benchmarks/scripts/bench_idle.py --binary "$binary" \
    --nio-floor "$(swift build -c release --package-path Benchmarks --show-bin-path)/nio-floor" \
    --seconds "$seconds" --runs "$runs" --callgrind \
    --json Benchmarks/.build/bench-idle.json --markdown docs/bench-idle.md >/dev/null
echo "wrote docs/bench-idle.md"
