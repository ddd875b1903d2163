#!/usr/bin/env bash
# Decode CPU per compressed playback stream (MP3, Ogg Opus/Vorbis, FLAC, WebM); writes docs/bench-codecs.md.
#   scripts/bench-codecs.sh                      release build (as make bench)
#   AUDIOGATE_BIN=path scripts/bench-codecs.sh   an already built binary
# Needs scripts/install-deps.sh bench (ffmpeg, the test card, .venv).
set -euo pipefail
cd "$(dirname "$0")/.."

python=.venv/bin/python
[[ -x "$python" ]] || { echo "run scripts/install-deps.sh bench first" >&2; exit 1; }
if [[ -z "${AUDIOGATE_BIN:-}" ]]; then
    swift build -c release --product audiogate >/dev/null
    AUDIOGATE_BIN="$(swift build -c release --show-bin-path)/audiogate"
fi

port="$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$AUDIOGATE_BIN" serve --port "$port" --device pulse --log-level warning &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
sleep 1
mkdir -p docs
"$python" scripts/bench_codecs.py --port "$port" --pid "$server" | tee docs/bench-codecs.md
