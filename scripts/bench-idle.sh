#!/usr/bin/env bash
# Idle and per-client cost: release build, loopback and pulse cards, 0-1000 capture clients, one
# playback sender, the same client paths on bare swift-nio, latency rows and callgrind instruction
# counts per capture period; writes docs/bench-idle.md. All rows in one invocation (about 25 minutes).
#   scripts/bench-idle.sh [seconds-per-window] [runs]
# Needs scripts/install-deps.sh test (PulseAudio, ALSA pulse plugin, valgrind, cc, .venv with websockets).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-20}"
runs="${2:-3}"
python=.venv/bin/python
[[ -x "$python" ]] || { echo "run scripts/install-deps.sh test first" >&2; exit 1; }

scripts/test-card.sh start >/dev/null
swift build -c release --product audiogate >/dev/null
swift build -c release --product nio-floor >/dev/null
binary="$(swift build -c release --show-bin-path)/audiogate"
# docs/bench-idle-before.json: the same rows measured on the code before the batched capture fan-out.
# AUDIOGATE_BEFORE_BIN: an earlier build whose instruction counts stand beside these.
before=()
# AUDIOGATE_BEFORE_LABEL says what that build is, for the docs.
[[ -n "${AUDIOGATE_BEFORE_BIN:-}" ]] && before=(--callgrind-before "$AUDIOGATE_BEFORE_BIN" --callgrind-before-label "${AUDIOGATE_BEFORE_LABEL:-}")
"$python" scripts/bench_idle.py --binary "$binary" --nio-floor "$(dirname "$binary")/nio-floor" --seconds "$seconds" --runs "$runs" --callgrind "${before[@]}" \
    --json .build/bench-idle.json --markdown docs/bench-idle.md --before docs/bench-idle-before.json >/dev/null
echo "wrote docs/bench-idle.md"
