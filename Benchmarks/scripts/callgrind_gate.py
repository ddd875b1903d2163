#!/usr/bin/env python3
"""Performance gate: callgrind instruction counts of the release server against Benchmarks/thresholds.json.

    python3 Benchmarks/scripts/callgrind_gate.py                 measure, compare, exit 1 on a regression
    python3 Benchmarks/scripts/callgrind_gate.py --update        measure and write the thresholds
    python3 Benchmarks/scripts/callgrind_gate.py --markdown docs/bench-gate.md   also write the docs table

Counts instructions, not time, so the figures do not move with the machine's load or the
hypervisor's steal. Each run starts the release server under `valgrind --tool=callgrind` on the
built-in loopback card (no sound card needed) and measures every case on it (see callgrind.py):

- capture period, 0 / 1 / 100 clients: whole process per 10 ms capture period;
- playback period, 1 stream: whole process per 10 ms playback period while one WebSocket stream
  sends 20 ms of 24 kHz s16le in real time;
- playback mix, 1 / 8 streams: the device thread's render of one 10 ms period by the mixer
  (PlaybackMixer.render, inclusive) with N such streams;
- playback message: inclusive instructions of PlaybackFrameHandler.channelRead per call, one
  stream: one message from the socket's frame decoder to its stream's queue;
- timed period, 1 stream: a timed stream rendering one period, on a server of its own whose
  Snapcast client plays a local snapserver's PCM stream: the mixer's render of one period, and
  the whole process per period.

Each count is the median of --runs runs (each on a fresh server); a count more than --tolerance
(5 %) above its threshold fails the gate. Needs valgrind, objcopy, cc, snapserver and python3 (no
packages).
"""
import argparse
import datetime
import json
import pathlib
import statistics
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import callgrind  # noqa: E402

THRESHOLDS = callgrind.BENCHMARKS / "thresholds.json"
CAPTURE_CLIENTS = (0, 1, 100)
PLAYBACK_STREAMS = (1, 8)
MESSAGE_STREAMS = 1

CASES = (
    [(f"capture_period_{n}_clients", f"capture period, {n} client{'s' if n != 1 else ''}") for n in CAPTURE_CLIENTS]
    + [("playback_period_1_stream", "playback period, 1 stream (whole process)")]
    + [(f"playback_mix_{n}_streams", f"playback mix of one period, {n} stream{'s' if n != 1 else ''}") for n in PLAYBACK_STREAMS]
    + [("playback_message", "playback message, socket to queue")]
    + [("timed_mix_1_stream", "timed mix of one period, 1 stream"),
       ("timed_period_1_stream", "timed period, 1 stream (whole process)")]
)

DESCRIPTIONS = {
    **{f"capture_period_{n}_clients":
       f"whole server process per 10 ms capture period (loopback card, devices kept running) with {n} "
       "binary capture clients (16 kHz mono s16le, 20 ms chunks, capture_load.c)" for n in CAPTURE_CLIENTS},
    "playback_period_1_stream":
        "whole server process per 10 ms playback period (loopback card, devices kept running) while one "
        "WebSocket playback stream sends 20 ms of 24 kHz mono s16le in real time (playback_load.c)",
    **{f"playback_mix_{n}_streams":
       f"inclusive instructions of PlaybackMixer.render per call (the device thread's mix of one 10 ms "
       f"period) while {n} WebSocket playback stream(s) with distinct names send 20 ms of 24 kHz mono "
       "s16le in real time (playback_load.c)" for n in PLAYBACK_STREAMS},
    "playback_message":
        "inclusive instructions of PlaybackFrameHandler.channelRead per call, one stream: one 20 ms "
        "binary message (24 kHz s16le) from the WebSocket frame decoder to its stream's queue",
    "timed_mix_1_stream":
        "inclusive instructions of PlaybackMixer.render per call (the device thread's mix of one 10 ms "
        "period) while the Snapcast client's timed stream plays a local snapserver's 48 kHz stereo PCM stream",
    "timed_period_1_stream":
        "whole server process per 10 ms playback period (loopback card, devices kept running) while the "
        "Snapcast client's timed stream plays a local snapserver's 48 kHz stereo PCM stream",
}


def measure_once(binary, seconds):
    server = callgrind.CallgrindServer(binary)
    try:
        capture = callgrind.capture_counts(server, callgrind.capture_loader(), CAPTURE_CLIENTS, seconds)
        playback = callgrind.playback_counts(server, callgrind.playback_loader(), PLAYBACK_STREAMS, seconds)
    finally:
        server.stop()
    counts = {}
    for n in CAPTURE_CLIENTS:
        counts[f"capture_period_{n}_clients"] = capture[n]["instructions_per_period"]
    counts["playback_period_1_stream"] = playback[1]["instructions_per_period"]
    for n in PLAYBACK_STREAMS:
        counts[f"playback_mix_{n}_streams"] = playback[n]["mixer_instructions_per_period"]
    counts["playback_message"] = playback[MESSAGE_STREAMS]["instructions_per_message"]
    timed = callgrind.timed_counts(binary, seconds)
    counts["timed_mix_1_stream"] = timed["mixer_instructions_per_period"]
    counts["timed_period_1_stream"] = timed["instructions_per_period"]
    details = {"capture": capture, "playback": playback, "timed": timed}
    return counts, details


def git_head():
    try:
        return subprocess.run(["git", "-C", str(callgrind.REPO), "log", "-1", "--format=%h %s"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def table(rows, tolerance):
    lines = [
        "| count | threshold | measured (median) | runs | spread | ratio | |",
        "| --- | ---: | ---: | --- | ---: | ---: | --- |",
    ]
    for row in rows:
        threshold = f"{row['threshold']:,}" if row["threshold"] else "none"
        ratio = f"{row['ratio']:.3f}" if row["ratio"] is not None else ""
        verdict = "" if row["ratio"] is None else ("FAIL" if row["ratio"] > 1 + tolerance else "ok")
        runs = " / ".join(f"{v:,}" if v is not None else "n/a" for v in row["runs"])
        lines.append(f"| {row['label']} | {threshold} | {row['measured']:,} | {runs} | {row['spread']:.2%} | {ratio} | {verdict} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=pathlib.Path, default=callgrind.REPO / ".build/release/audiogate")
    parser.add_argument("--thresholds", type=pathlib.Path, default=THRESHOLDS)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10, help="window per case")
    parser.add_argument("--tolerance", type=float, default=None, help="default: the thresholds file's (0.05)")
    parser.add_argument("--update", action="store_true", help="write the measured medians as the thresholds")
    parser.add_argument("--json", type=pathlib.Path, help="write every run's figures here")
    parser.add_argument("--markdown", type=pathlib.Path, help="write the docs table here")
    args = parser.parse_args()
    if not args.binary.exists():
        sys.exit(f"callgrind-gate: no {args.binary}: swift build -c release --product audiogate")

    saved = json.loads(args.thresholds.read_text()) if args.thresholds.exists() else {}
    tolerance = args.tolerance if args.tolerance is not None else saved.get("tolerance", 0.05)
    thresholds = saved.get("counts", {})

    runs, details = [], []
    for index in range(args.runs):
        print(f"callgrind-gate: run {index + 1} of {args.runs}", file=sys.stderr, flush=True)
        counts, detail = measure_once(args.binary, args.seconds)
        print(f"callgrind-gate: {json.dumps(counts)}", file=sys.stderr, flush=True)
        runs.append(counts)
        details.append(detail)

    rows, failed = [], []
    for key, label in CASES:
        values = [run[key] for run in runs]
        known = [v for v in values if v is not None]
        if not known:
            failed.append(key)
            print(f"callgrind-gate: {key}: nothing measured", file=sys.stderr)
            continue
        measured = round(statistics.median(known))
        spread = (max(known) - min(known)) / measured if measured else 0.0
        threshold = thresholds.get(key, {}).get("instructions")
        ratio = measured / threshold if threshold else None
        if args.update:
            ratio = None
        elif ratio is None or ratio > 1 + tolerance:
            failed.append(key)
        rows.append({"key": key, "label": label, "threshold": threshold, "measured": measured,
                     "runs": values, "spread": spread, "ratio": ratio})

    head = git_head()
    print(f"callgrind gate: {head}; median of {args.runs} runs, {args.seconds:g} s per case; "
          f"fails above {1 + tolerance:.2f} x threshold")
    print("\n".join(table(rows, tolerance)))

    if args.json:
        args.json.write_text(json.dumps({"commit": head, "runs": runs, "details": details}, indent=2, default=str))
    if args.update:
        saved = {
            "about": "Instruction counts the callgrind gate (Benchmarks/scripts/callgrind_gate.py, `make bench-gate`) "
                     "holds the release server to: each is the median of 3 runs under valgrind --tool=callgrind on "
                     "the loopback card; a measurement more than `tolerance` above one fails the gate. Rewrite with "
                     "`python3 Benchmarks/scripts/callgrind_gate.py --update`.",
            "measured_on": head,
            "date": datetime.date.today().isoformat(),
            "tolerance": tolerance,
            "counts": {row["key"]: {"instructions": row["measured"], "what": DESCRIPTIONS[row["key"]],
                                    "runs": row["runs"], "spread": round(row["spread"], 4)}
                       for row in rows},
        }
        args.thresholds.write_text(json.dumps(saved, indent=2) + "\n")
        print(f"callgrind gate: wrote {args.thresholds}")
    if args.markdown:
        args.markdown.write_text(markdown(rows, tolerance, args, head, saved) + "\n")
    if failed and not args.update:
        print(f"callgrind gate: FAILED: {', '.join(failed)}")
        return 1
    if not args.update:
        print("callgrind gate: passed")
    return 0


def markdown(rows, tolerance, args, head, saved):
    lines = [
        "## Performance gate (callgrind instruction counts)",
        "",
        "`make bench-gate` (also part of `make bench`, which then fails when it fails) runs",
        "`Benchmarks/scripts/callgrind_gate.py`: the release server under `valgrind --tool=callgrind` on the",
        "built-in loopback card, devices kept running, counters zeroed once a case has settled and dumped",
        f"after {args.seconds:g} s. Instructions do not move with the machine's load or steal the way CPU time",
        f"does, so each count is held to a threshold in `Benchmarks/thresholds.json` (measured on",
        f"{saved.get('measured_on', 'unknown')}): a median of {args.runs} runs more than {tolerance:.0%} above its",
        "threshold fails. `--update` rewrites the thresholds from a measurement.",
        "",
        "- *capture period, N clients*: whole process per 10 ms capture period with N binary capture clients",
        "  (16 kHz mono s16le, 20 ms chunks, `Benchmarks/scripts/capture_load.c`).",
        "- *playback period, 1 stream*: whole process per 10 ms playback period while one WebSocket playback",
        "  stream sends 20 ms of 24 kHz mono s16le in real time (`Benchmarks/scripts/playback_load.c`).",
        "- *playback mix, N streams*: the device thread's mix of one period, the inclusive instructions of",
        "  `PlaybackMixer.render` per call, while N such streams (distinct names) play. Whole-process counts",
        "  per period are not taken for 8 streams: under callgrind the server runs on one core at a fraction",
        "  of its speed, and 8 streams resampled from 24 kHz ask more than it can do in real time, so reads",
        "  pile up and a per-period figure would count the backlog; per-call counts do not depend on that.",
        "- *playback message*: one message from the socket to its stream's queue: the inclusive instructions",
        "  of `PlaybackFrameHandler.channelRead` (the NIO handler after the frame decoder) over its calls, one",
        "  stream.",
        "- *timed mix / timed period, 1 stream*: a timed stream rendering one period: on a server of its own",
        "  whose Snapcast client plays a local snapserver's PCM stream (48 kHz stereo), the inclusive",
        "  instructions of `PlaybackMixer.render` per call and the whole process per 10 ms period.",
        "",
        f"Measured on {head}:",
        "",
    ]
    lines += table(rows, tolerance)
    lines += ["", "*spread*: (largest - smallest run) / median."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
