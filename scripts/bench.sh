#!/usr/bin/env bash
# `make bench`: release-built benchmarks; figures (medians, with hypervisor steal) into docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs

{
    echo "## DSP paths (resampler, sample conversion)"
    echo
    echo "\`.build/release/audiogate-bench\`: 10 s of audio processed in 10 ms periods as the device threads do;"
    echo "median of 9 runs. *realtime/core* = seconds of audio per second of thread CPU time."
    echo
    echo '```'
    .build/release/audiogate-bench
    echo '```'
    echo
    cat docs/bench-dsp-before.md
} > docs/bench-dsp.md

[[ -x scripts/bench-capture.sh ]] && scripts/bench-capture.sh || echo "bench: capture load benchmark failed or missing" >&2
[[ -x scripts/bench-playback.sh ]] && scripts/bench-playback.sh || echo "bench: playback load benchmark failed or missing" >&2
.venv/bin/python Tests/EndToEnd/check_churn.py --markdown docs/bench-churn.md >/dev/null || echo "bench: churn soak failed" >&2
[[ -x scripts/bench-idle.sh ]] && scripts/bench-idle.sh >/dev/null || echo "bench: idle cost benchmark failed or missing" >&2
[[ -x scripts/bench-voice.sh ]] && AUDIOGATE_BIN=.build/release/audiogate scripts/bench-voice.sh >/dev/null || echo "bench: voice processing benchmark failed or missing" >&2
[[ -x scripts/bench-codecs.sh ]] && AUDIOGATE_BIN=.build/release/audiogate scripts/bench-codecs.sh >/dev/null || echo "bench: codec benchmark failed or missing" >&2

{
    echo "# Benchmarks"
    echo
    echo "Produced by \`make bench\` on $(nproc) cores ($(uname -m), $(date -u +%Y-%m-%d)). Machines are shared and"
    echo "noisy: every figure is a median, and the hypervisor steal measured over the same interval stands beside it."
    echo
    for part in docs/bench-dsp.md docs/bench-capture.md docs/bench-playback.md docs/bench-churn.md docs/bench-voice.md docs/bench-idle.md docs/bench-codecs.md; do
        [[ -f "$part" ]] && { cat "$part"; echo; }
    done
} > docs/benchmarks.md
echo "bench: wrote docs/benchmarks.md"
