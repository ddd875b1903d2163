#!/usr/bin/env bash
# Runs the Swift test suites against the real ALSA library (test card from scripts/test-card.sh),
# then the end-to-end checks in Tests/EndToEnd against the debug server.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps-env.sh
source scripts/test-card-env.sh
export AUDIOGATE_TEST_PYTHON="$PWD/.venv/bin/python"
# Name the test card's sound server outright: libpulse otherwise spends most of a second looking
# for it on every device open.
if server="$(pactl info 2>/dev/null | sed -n 's/^Server String: //p')" && [[ -n "$server" ]]; then
    export PULSE_SERVER="unix:$server"
fi
# The Python client package on its own: unit tests against a fake server, types and lint.
(cd clients/python && ../../.venv/bin/python -m pytest -q && ../../.venv/bin/python -m mypy \
    && ../../.venv/bin/python -m ruff check .)
swift build --build-tests
.venv/bin/python Tests/EndToEnd/check_openapi.py
# Real-time suites share one sound card: run tests one at a time. A failure is repeated after the
# summary line, so the end of the log names what failed.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! swift test --skip-build --no-parallel "$@" 2>&1 | tee "$log"; then
    echo "---- failed Swift tests and their issues ----"
    awk '/^✘/ { print; issue = 1; next } /^↳/ && issue { print; next } { issue = 0 }' "$log" | cut -c1-400 | tail -n 30
    exit 1
fi
.venv/bin/python Tests/EndToEnd/check_abuse.py
.venv/bin/python Tests/EndToEnd/check_shutdown.py
# The Python client package against a live server.
.venv/bin/python Tests/EndToEnd/check_client.py
# The examples against a live server: examples/python and every command in examples/curl.md.
.venv/bin/python Tests/EndToEnd/check_examples.py
# The demo page in headless Chromium; the binary was built above.
AUDIOGATE_NO_BUILD=1 .venv/bin/python Tests/EndToEnd/check_browser.py
PATH="$PWD/.venv/bin:$PATH" .venv/bin/python Tests/EndToEnd/check_deploy.py
.venv/bin/python Tests/EndToEnd/check_wyoming.py
# The Snapcast client against Debian's snapserver and snapclient: sync to the sample, restart, volume, codecs, bad input.
.venv/bin/python Tests/EndToEnd/check_snapcast.py
# The Sendspin player against the sendspin package's own server, inside a private network namespace:
# PCM, FLAC and Opus at the right pitch and level; then the metadata and controller roles against a
# small aiosendspin server (and the music events of a capture WebSocket), and the control panel's music
# row in Chromium; then pairing with a server that requires it (aiosendspin's Pairing PSK method, by the
# token `audiogate sendspin-token` prints; then its static code, behind the pairing window, and its
# dynamic code, with a wrong round retried); then its music ducked under a voice upload; then, in the echo room, the music cancelled from the microphone while speech played into
# the room is still detected; then, on a private avahi-daemon, the waiting player published and dialed by a server
# that found it by mDNS; then two audiogates joined to one server in sync to the sample, dialing it and
# dialed by it, and again after the server restarts; then two audiogates beside two reference players
# (`sendspin daemon`), all heard together and audiogate no later than them.
.venv/bin/python Tests/EndToEnd/check_sendspin.py --only codecs
.venv/bin/python Tests/EndToEnd/check_sendspin.py --only roles
.venv/bin/python Tests/EndToEnd/check_sendspin.py --only panel
.venv/bin/python Tests/EndToEnd/check_sendspin.py --only pairing
.venv/bin/python Tests/EndToEnd/check_sendspin.py --only pairing-code
.venv/bin/python Tests/EndToEnd/check_sendspin.py --only duck
.venv/bin/python Tests/EndToEnd/check_sendspin.py --only aec
.venv/bin/python Tests/EndToEnd/check_sendspin.py --only mdns
.venv/bin/python Tests/EndToEnd/check_sendspin.py --only sync
.venv/bin/python Tests/EndToEnd/check_sendspin.py --only dialed
.venv/bin/python Tests/EndToEnd/check_sendspin.py --only reference
# A hostile snapserver (overflowing and negative numbers, 4 GB and truncated messages): the server
# keeps serving capture and playback without a gap over 60 ms, logs one line per connection, never exits.
.venv/bin/python Tests/EndToEnd/check_hostile_peers.py --only snapcast
# A hostile Sendspin server (messages that do not decrypt, chunk headers and fragments that lie, a 2 GB
# frame and other sizes over the limits, a message flood): the same, each bad connection closed by the
# player with one line saying why (the flood: message_flood), which reconnects and plays again; memory
# flat across the flood. Skipped without Python >= 3.12.
.venv/bin/python Tests/EndToEnd/check_hostile_peers.py --only sendspin
# The agent-framework adapters on a live server: a real Pipecat pipeline, LiveKit Agents' audio I/O.
.venv-pipecat/bin/python Tests/EndToEnd/check_pipecat.py
.venv-livekit/bin/python Tests/EndToEnd/check_livekit.py
# Memory under connection churn, against the release build users run: flat per connection and request.
swift build -c release --product audiogate
# The Debian package: built from the release binary, installed, run without Swift, purged.
.venv/bin/python Tests/EndToEnd/check_deb.py
# No request freezes capture clients: long /v1/say and /v1/voices beside ten capture clients.
.venv/bin/python Tests/EndToEnd/check_speech_load.py --binary .build/release/audiogate
.venv/bin/python Tests/EndToEnd/check_churn.py
