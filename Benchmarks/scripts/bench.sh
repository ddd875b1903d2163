#!/usr/bin/env bash
# `make bench`: release-built benchmarks; figures (medians, with hypervisor steal) into docs/benchmarks.md,
# and the callgrind performance gate (callgrind_gate.py against Benchmarks/thresholds.json). Expects the
# release server (swift build -c release --product audiogate) and this package (swift build -c release
# --package-path Benchmarks) built. The other benchmarks run even when the gate fails; the exit status
# is the gate's, else the capture latency row's.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/deps-env.sh
source scripts/test-card-env.sh
mkdir -p docs
bench_bin="$(swift build -c release --package-path Benchmarks --show-bin-path)"

{
    echo "## DSP paths (resampler, sample conversion)"
    echo
    echo "\`Benchmarks/Sources/audiogate-bench\`: 10 s of audio processed in 10 ms periods as the device threads do;"
    echo "median of 9 runs. *realtime/core* = seconds of audio per second of thread CPU time."
    echo
    echo '```'
    "$bench_bin/audiogate-bench"
    echo '```'
    echo
    cat <<'TEXT'
The `fastest` rows for 48 to 16 kHz and 24 to 48 kHz are audiogate's polyphase filter
(`PolyphaseFilter`, AVX2 and FMA on this CPU). The `polyphase SSE2` rows are the same filter kept
to the baseline vector unit, which is what a CPU without AVX2 runs (ARM boards run the same code on
NEON). The `speexdsp q5` rows are speexdsp at quality 5, whose inner product already uses SSE.
`medium` and `best` are speexdsp at quality 7 and 10, and 44.1 kHz stays on speexdsp at quality 5
at every quality.
TEXT
} > docs/bench-dsp.md

[[ -x Benchmarks/scripts/bench-capture.sh ]] && Benchmarks/scripts/bench-capture.sh || echo "bench: capture load benchmark failed or missing" >&2
# Capture latency by the click method, beside arecord: a gated row (p50 <= 25 ms, p99 <= 40 ms).
click=0
scripts/test-card.sh start >/dev/null
.venv/bin/python Benchmarks/scripts/bench_click.py --binary .build/release/audiogate --markdown docs/bench-click.md >/dev/null || click=$?
[[ -x Benchmarks/scripts/bench-playback.sh ]] && Benchmarks/scripts/bench-playback.sh || echo "bench: playback load benchmark failed or missing" >&2
.venv/bin/python Tests/EndToEnd/check_churn.py --markdown docs/bench-churn.md >/dev/null || echo "bench: churn soak failed" >&2
[[ -x Benchmarks/scripts/bench-idle.sh ]] && Benchmarks/scripts/bench-idle.sh >/dev/null || echo "bench: idle cost benchmark failed or missing" >&2
[[ -x Benchmarks/scripts/bench-voice.sh ]] && AUDIOGATE_BIN=.build/release/audiogate Benchmarks/scripts/bench-voice.sh >/dev/null || echo "bench: voice processing benchmark failed or missing" >&2
[[ -x Benchmarks/scripts/bench-codecs.sh ]] && AUDIOGATE_BIN=.build/release/audiogate Benchmarks/scripts/bench-codecs.sh >/dev/null || echo "bench: codec benchmark failed or missing" >&2
[[ -x Benchmarks/scripts/bench-encode.sh ]] && AUDIOGATE_BIN=.build/release/audiogate Benchmarks/scripts/bench-encode.sh >/dev/null || echo "bench: encode benchmark failed or missing" >&2

gate=0
python3 Benchmarks/scripts/callgrind_gate.py --binary .build/release/audiogate --markdown docs/bench-gate.md || gate=$?

{
    echo "# Benchmarks"
    echo
    echo "Produced by \`make bench\` on $(nproc) cores ($(uname -m), $(date -u +%Y-%m-%d)). Machines are shared and"
    echo "noisy: every figure is a median, and the hypervisor steal measured over the same interval stands beside it."
    echo
    # bench-timed, bench-snapcast, bench-sendspin, bench-adapters and bench-fuzz are written from test runs (the
    # timed stream, Snapcast and Sendspin sync, framework adapter checks, make fuzz), not by this script: they
    # are kept as they are.
    for part in docs/bench-gate.md docs/bench-dsp.md docs/bench-capture.md docs/bench-click.md docs/bench-playback.md docs/bench-churn.md docs/bench-voice.md docs/bench-idle.md docs/bench-codecs.md docs/bench-timed.md docs/bench-snapcast.md docs/bench-sendspin.md docs/bench-adapters.md docs/bench-fuzz.md docs/bench-encode.md; do
        [[ -f "$part" ]] && { cat "$part"; echo; }
    done
} > docs/benchmarks.md
echo "bench: wrote docs/benchmarks.md"
if ((gate != 0)); then
    echo "bench: the callgrind performance gate failed (see above)" >&2
    exit "$gate"
fi
if ((click != 0)); then
    echo "bench: capture latency (click to client) over its bound (see docs/bench-click.md)" >&2
    exit "$click"
fi
