#!/usr/bin/env bash
# Voice processing benchmark on the echo room (scripts/test-card.sh room): ERLE of audiogate's
# canceller beside PulseAudio's module-echo-cancel (aec_method=webrtc) on the same room, CPU of each
# processing setting at 16 kHz, the latency processing adds, and the cost of 100 clients sharing
# aec=true against 100 plain clients; writes docs/bench-voice.md.
#   scripts/bench-voice.sh              release build (as make bench)
#   AUDIOGATE_BIN=path scripts/bench-voice.sh   an already built binary
# Needs scripts/install-deps.sh bench (PulseAudio, espeak-ng, .venv with websockets).
set -euo pipefail
cd "$(dirname "$0")/.."

python=.venv/bin/python
[[ -x "$python" ]] || { echo "run scripts/install-deps.sh bench first" >&2; exit 1; }
scripts/test-card.sh room >/dev/null
if [[ -z "${AUDIOGATE_BIN:-}" ]]; then
    swift build -c release --product audiogate >/dev/null
    AUDIOGATE_BIN="$(swift build -c release --show-bin-path)/audiogate"
fi

port="$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$AUDIOGATE_BIN" serve --port "$port" --capture-device room_mic --playback-device room_spk --log-level warning &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
sleep 1
mkdir -p docs
"$python" scripts/bench_voice.py --port "$port" --pid "$server" --binary "$AUDIOGATE_BIN" | tee docs/bench-voice.md
