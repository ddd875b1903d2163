#!/usr/bin/env bash
# Runs the README's test command as a machine that never built or tested audiogate would: a clone
# of the current commit in a temporary folder, a scratch HOME (no ~/.asoundrc, no package caches,
# no virtual environments) and a sound server of its own, stopped afterwards. Uncommitted changes
# are not in the clone: commit first. An argument names another make target to run there
# (default: test).
set -euo pipefail
cd "$(dirname "$0")/.."
commit="$(git rev-parse HEAD)"
target="${1:-test}"
if [[ -n "$(git status --porcelain --untracked-files=no)" ]]; then
    echo "test-fresh: uncommitted changes are not tested; testing $commit" >&2
fi
work="$(mktemp -d)"
mkdir -p "$work/home" "$work/run"
chmod 700 "$work/run"
fresh=(env -u PULSE_SERVER -u PULSE_COOKIE -u PULSE_STATE_PATH HOME="$work/home" XDG_RUNTIME_DIR="$work/run"
    PULSE_RUNTIME_PATH="$work/run/pulse")
# A Python managed by pyenv finds its versions under its root, which defaults to the HOME it had.
if [[ -d "${PYENV_ROOT:-$HOME/.pyenv}" ]]; then
    fresh+=(PYENV_ROOT="${PYENV_ROOT:-$HOME/.pyenv}")
fi
cleanup() {
    "${fresh[@]}" bash -c 'cd "$1" && scripts/test-card.sh stop' _ "$work/audiogate" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
git clone -q --no-hardlinks . "$work/audiogate"
git -C "$work/audiogate" checkout -q "$commit"
started=$(date +%s)
status=0
"${fresh[@]}" make -C "$work/audiogate" "$target" || status=$?
elapsed=$(($(date +%s) - started))
if ((status == 0)); then
    echo "test-fresh: make $target passed in a fresh clone of $commit in ${elapsed} s"
else
    echo "test-fresh: make $target FAILED (exit $status) in a fresh clone of $commit after ${elapsed} s"
fi
exit "$status"
