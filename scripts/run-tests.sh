#!/usr/bin/env bash
# Runs the Swift test suites against the real ALSA library (test card from scripts/test-card.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export AUDIOGATE_TEST_PYTHON="$PWD/.venv/bin/python"
swift build --build-tests
scripts/check-openapi.sh
# Real-time suites share one sound card: run tests one at a time.
swift test --skip-build --no-parallel "$@"
PATH="$PWD/.venv/bin:$PATH" .venv/bin/python scripts/check-deploy.py
