#!/usr/bin/env bash
# Capture fan-out benchmark: release build, PulseAudio null-sink device, 1 and 100 WebSocket clients
# at 16 kHz / 20 ms (encoding=json) for 30 s each; writes docs/bench-capture.md.
#   Benchmarks/scripts/bench-capture.sh [seconds]
# Needs scripts/install-deps.sh test (PulseAudio, ALSA pulse plugin, .venv with websockets).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/deps-env.sh

seconds="${1:-30}"
python=.venv/bin/python
[[ -x "$python" ]] || { echo "run scripts/install-deps.sh test first" >&2; exit 1; }

scripts/test-card.sh start >/dev/null
swift build -c release --product audiogate >/dev/null
binary="$(swift build -c release --show-bin-path)/audiogate"

. Benchmarks/scripts/bench-server.sh
start_server "$binary" --device pulse

clk_tck="$(getconf CLK_TCK)"
page_kb=$(( $(getconf PAGESIZE) / 1024 ))

# Samples server CPU (% of one core, per second) and RSS (MiB) while the generator runs.
sample_server() {
    local out="$1" prev now ticks
    prev="$(awk '{print $14 + $15}' "/proc/$server/stat")"
    : >"$out"
    while sleep 1; do
        [[ -r "/proc/$server/stat" ]] || break
        now="$(awk '{print $14 + $15}' "/proc/$server/stat")"
        ticks=$((now - prev))
        prev="$now"
        rss_pages="$(awk '{print $2}' "/proc/$server/statm")"
        echo "$(awk -v t="$ticks" -v hz="$clk_tck" 'BEGIN { printf "%.1f", 100 * t / hz }') $((rss_pages * page_kb / 1024))" >>"$out"
    done
}

run() {
    local clients="$1" processes="$2" samples summary
    samples="$(mktemp)"
    sample_server "$samples" &
    local sampler=$!
    summary="$("$python" Benchmarks/scripts/bench_capture.py \
        --url "ws://127.0.0.1:$port/v1/capture?rate=16000&chunk_ms=20&encoding=json" \
        --clients "$clients" --seconds "$seconds" --processes "$processes" \
        --status-url "http://127.0.0.1:$port/v1/status")"
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    local cpu rss
    cpu="$(sort -n -k1 "$samples" | awk '{a[NR]=$1} END { if (NR) print a[int((NR+1)/2)]; else print "n/a" }')"
    rss="$(sort -n -k2 "$samples" | awk 'END { print $2 }')"
    rm -f "$samples"
    "$python" - "$summary" "$cpu" "$rss" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
s["server_cpu_percent_median"] = float(sys.argv[2]) if sys.argv[2] != "n/a" else None
s["server_rss_mib_max"] = int(sys.argv[3]) if sys.argv[3] else None
print(json.dumps(s))
PY
}

one="$(run 1 1)"
hundred="$(run 100 4)"
echo "$one"
echo "$hundred"

"$python" - "$one" "$hundred" "$seconds" <<'PY' >docs/bench-capture.md
import json, platform, subprocess, sys
one, hundred, seconds = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
cores = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
def row(s):
    send = s.get("server_send_delay") or {}
    return (f"| {s['clients']} | {s['processes']} | {s['chunks_min']}/{s['chunks_expected']} | {s['seq_gaps']} | {s['overruns']} | "
            f"{s['server_cpu_percent_median']} | {s['server_rss_mib_max']} | {s['delay_ms_p50']} | {s['delay_ms_p99']} | "
            f"{s['delay_ms_max']} | {send.get('p50_ms')} | {send.get('p99_ms')} | {s['steal_percent']} |")
print(f"""# Capture fan-out benchmark

Release build, capture device `pulse` (PulseAudio null-sink monitor, 48 kHz), WebSocket clients at
16 kHz mono s16le, 20 ms chunks, `encoding=json`, {seconds} s per run. Machine: {cpu}, {cores} CPUs.
Produced by `Benchmarks/scripts/bench-capture.sh` (load generator: `Benchmarks/scripts/bench_capture.py`).

- chunks: fewest chunks any client received / chunks in {seconds} s.
- CPU: server process, median of per-second samples of utime+stime from `/proc/<pid>/stat`, % of one core.
- RSS: largest resident set of the server during the run.
- delay: client arrival time (`time.monotonic()`, CLOCK_MONOTONIC) minus the chunk's last captured
  sample (`timestamp_ms` + 20 ms), over every chunk of every client. It includes the sound server's
  own capture buffering as far as `snd_pcm_delay` reports it, the fan-out, and the client's event loop.
  The clients run in several Python processes (column "procs") so one event loop does not queue them.
- server send delay: the server's own histogram (`/v1/status` `capture.send_delay`) from the read of
  a chunk's last sample on the capture thread to the chunk being handed to the socket.
- steal: hypervisor steal over the run, from `/proc/stat`.

| clients | procs | chunks (min/expected) | seq gaps | overruns | server CPU % (median) | RSS MiB (max) | delay p50 ms | delay p99 ms | delay max ms | server send p50 ms | server send p99 ms | steal % |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
{row(one)}
{row(hundred)}

Targets (100 clients): no client drops a chunk, CPU at most 20 % of one core, RSS at most 80 MB,
delay p99 at most 15 ms.
""")
PY
echo "wrote docs/bench-capture.md"
