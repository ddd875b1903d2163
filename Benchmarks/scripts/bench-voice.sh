#!/usr/bin/env bash
# Voice processing benchmark on the echo room (scripts/test-card.sh room): ERLE of audiogate's
# canceller beside PulseAudio's module-echo-cancel (aec_method=webrtc) on the same room, alone and in
# double talk at echo-to-user ratios of -10, 0 and +10 dB, CPU of each processing setting at 16 kHz,
# the latency processing adds, and the cost of 100 clients sharing aec=true against 100 plain
# clients; writes docs/bench-voice.md.
#   Benchmarks/scripts/bench-voice.sh              release build (as make bench)
#   AUDIOGATE_BIN=path Benchmarks/scripts/bench-voice.sh   an already built binary
# Needs scripts/install-deps.sh bench (PulseAudio, espeak-ng, .venv with websockets).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/deps-env.sh

python=.venv/bin/python
[[ -x "$python" ]] || { echo "run scripts/install-deps.sh bench first" >&2; exit 1; }
scripts/test-card.sh room >/dev/null
# The room at unity gain, as the speech is scaled for: an analog gain control on the microphone (as
# PulseAudio's echo canceller runs by default) leaves its volume turned after it is gone.
pactl set-source-volume room.monitor 100%
if [[ -z "${AUDIOGATE_BIN:-}" ]]; then
    swift build -c release --product audiogate >/dev/null
    AUDIOGATE_BIN="$(swift build -c release --show-bin-path)/audiogate"
fi

. Benchmarks/scripts/bench-server.sh
start_server "$AUDIOGATE_BIN" --capture-device pulse:room.monitor --playback-device pulse:spk
mkdir -p docs
"$python" Benchmarks/scripts/bench_voice.py --port "$port" --pid "$server" --binary "$AUDIOGATE_BIN" | tee docs/bench-voice.md
