#!/usr/bin/env bash
# Runs the Swift test suites against the real ALSA library (test card from scripts/test-card.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export AUDIOGATE_TEST_PYTHON="$PWD/.venv/bin/python"
swift build --build-tests
swift test --skip-build --parallel --num-workers 1 "$@"
