#!/usr/bin/env bash
# `make bench-sync`: RUNS (default 10) consecutive runs of the Snapcast sync check
# (check_snapcast.py --only sync-only, debug build), each with the hypervisor steal over the run
# from /proc/stat, written as a table to docs/bench-sync-runs.md. Fails when any run fails or
# when any run's 95th percentile of |offset| is above 0.25 ms.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/deps-env.sh
source scripts/test-card-env.sh
if server="$(pactl info 2>/dev/null | sed -n 's/^Server String: //p')" && [[ -n "$server" ]]; then
    export PULSE_SERVER="unix:$server"
fi
runs="${RUNS:-10}"
out="docs/bench-sync-runs.md"
steal() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
rows=()
worst_p95=0
status=0
for i in $(seq 1 "$runs"); do
    started="$(date -u +%H:%M:%S)"
    read -r s0 t0 < <(steal)
    log="$(.venv/bin/python Tests/EndToEnd/check_snapcast.py --only sync-only 2>&1)"
    rc=$?
    read -r s1 t1 < <(steal)
    load="$(cut -d' ' -f1 /proc/loadavg)"
    pct="$(awk -v a="$s0" -v b="$s1" -v c="$t0" -v d="$t1" 'BEGIN{printf "%.2f", (d>c)?100*(b-a)/(d-c):0}')"
    line="$(grep -o "in sync with snapclient over 30 s.*" <<<"$log" | head -1)"
    median="$(sed -n 's/.*median \([-+0-9.]*\) ms.*/\1/p' <<<"$line")"
    p95="$(sed -n 's/.*p95 |offset| \([0-9.]*\) ms.*/\1/p' <<<"$line")"
    worst="$(sed -n 's/.*worst \([0-9.]*\) ms.*/\1/p' <<<"$line")"
    if ((rc != 0)) || [[ -z "$p95" ]]; then
        status=1
        echo "bench-sync: run $i failed (exit $rc, steal $pct %)" >&2
        grep -E "FAIL|offset|retry" <<<"$log" | tail -5 >&2
    elif awk -v p="$p95" 'BEGIN{exit !(p > 0.25)}'; then
        status=1
        # The impulse-by-impulse offsets show whether it was a step, a drift or one outlier.
        grep -F "offsets (s, ms)" <<<"$log" | head -1 >&2
    fi
    echo "run $i at $started: exit $rc, median ${median:-?} ms, p95 ${p95:-?} ms, worst ${worst:-?} ms, steal $pct %, load $load"
    rows+=("| $i | $started | ${median:-failed} ms | ${p95:-} ms | ${worst:-} ms | $pct % | $load |")
done
{
    echo "Ten consecutive runs of \`check_snapcast.py --only sync-only\` by \`make bench-sync\`"
    echo "($(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD), $(nproc) cores), steal from \`/proc/stat\` over each run:"
    echo
    echo "| run | started (UTC) | median | 95th percentile of \\|offset\\| | worst | steal | load (1 min) |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
} > "$out"
echo "bench-sync: wrote $out"
exit "$status"
