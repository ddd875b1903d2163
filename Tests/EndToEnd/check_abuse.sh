#!/usr/bin/env bash
# Starts the debug server on the test card and runs Tests/EndToEnd/check_abuse.py against it: 500 hostile
# connections while one well-behaved capture client must receive every chunk.
set -euo pipefail
cd "$(dirname "$0")/../.."
port="$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
ulimit -n 8192 2>/dev/null || true
.build/debug/audiogate serve --device "${AUDIOGATE_TEST_DEVICE:-pulse}" --port "$port" --log-level warning &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$port/v1/status" 2>/dev/null |
        .venv/bin/python -c 'import json,sys; sys.exit(json.load(sys.stdin)["capture"]["state"] != "running")' 2>/dev/null && break
    sleep 0.1
done
summary="$(.venv/bin/python Tests/EndToEnd/check_abuse.py --port "$port" --connections 500 --seconds 15)" && status=0 || status=$?
echo "check-abuse: $summary"
if ((status != 0)); then
    echo "check-abuse: the well-behaved client was disturbed" >&2
    exit 1
fi
echo "check-abuse: a well-behaved client got every chunk while 500 hostile connections ran"
