#!/usr/bin/env python3
"""Hostile clients against audiogate, while one well-behaved capture client listens.

    .venv/bin/python Tests/EndToEnd/check_abuse.py [--binary .build/debug/audiogate] [--device pulse]
    .venv/bin/python Tests/EndToEnd/check_abuse.py --port 8750 [--connections 500] [--seconds 15]

Starts the server on the test card (AUDIOGATE_TEST_DEVICE, default pulse), or with --port uses one
already running there. The abusers: WebSockets that send garbage text, binary junk and half frames,
messages of 10 MB, playback sockets that never read, raw TCP that sends half an HTTP request and
stalls, and plain HTTP garbage. The well-behaved client (16 kHz, 20 ms chunks, encoding=json) must
receive every chunk: no seq gap, no overrun, and at least 98% of real time's chunk count in the
window. Prints a JSON summary; exits 1 if the good client was disturbed or the server stopped
answering.

Then the limits, each on a server of its own (skipped with --port): a million marks on one playback
socket behind 20 s of audio (RSS grows < 5 MB, one `too_many_marks` error, no underrun on a stream
fed in real time beside it); `--max-connections 20` on a server allowed 256 files, with 100 idle sockets (the
rest get 503 `too_many_connections` with `Connection: close`, a capture client connected before
misses no chunk, a recording started before keeps writing and opening a segment file a second); `/v1/say` with the worst text at rate 0.5 (bounded by
`--max-say-seconds`, `truncated`, RSS < 50 MB over idle); `--max-decoders 2` (a third compressed
upload or WebSocket file gets `too_many_decoders`); `--max-body-mb 1` (413 `too_large`, and the
stream plays the next upload normally).
"""
import argparse
import asyncio
import http.client
import json
import os
import random
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import websockets

import e2e
from e2e import check


async def good_client(port, seconds, result):
    url = f"ws://127.0.0.1:{port}/v1/capture?rate=16000&chunk_ms=20&encoding=json"
    async with websockets.connect(url, max_size=1 << 22) as ws:
        await ws.recv()
        expected_seq, gaps, overruns, chunks, first = 0, 0, 0, 0, None
        deadline = None
        while True:
            message = json.loads(await ws.recv())
            now = time.monotonic()
            if message["type"] == "overrun":
                overruns += 1
            if message["type"] != "audio":
                continue
            if first is None:
                first, deadline = now, now + seconds
            if message["seq"] != expected_seq:
                gaps += 1
            expected_seq = message["seq"] + 1
            chunks += 1
            if now >= deadline:
                break
        result.update(chunks=chunks, gaps=gaps, overruns=overruns, seconds=now - first)


async def garbage_websocket(port, rng, stats):
    kind = rng.choice(["text", "binary_json", "huge", "stall_playback", "bad_query"])
    try:
        if kind == "bad_query":
            async with websockets.connect(f"ws://127.0.0.1:{port}/v1/capture?rate=12345"):
                pass
            return
        url = f"ws://127.0.0.1:{port}/v1/playback?stream=abuse{rng.randrange(4)}"
        async with websockets.connect(url, max_size=1 << 24, open_timeout=20) as ws:
            if kind == "text":
                for _ in range(20):
                    await ws.send(rng.choice(["{", "null", "[]", '{"type":"nope"}', '{"type":"audio","data":"***"}',
                                              '{"type":"mark","name":' + '"x' * 400 + '"}', "\x00" * 100]))
            elif kind == "binary_json":
                await ws.send(os.urandom(rng.randrange(1, 5000)))
            elif kind == "huge":
                await ws.send(b"\x00" * (10 * 1024 * 1024))
            elif kind == "stall_playback":
                await ws.send(b"\x00\x01" * 4800)
            await asyncio.sleep(rng.uniform(0.5, 3))
        stats[kind] = stats.get(kind, 0) + 1
    except Exception as error:  # the server closing on abuse is the expected outcome
        stats[kind + "_closed"] = stats.get(kind + "_closed", 0) + 1
        stats.setdefault("close_reasons", set()).add(type(error).__name__)


async def raw_tcp(port, rng, stats):
    kind = rng.choice(["half_request", "half_frame", "http_garbage"])
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        if kind == "half_request":
            writer.write(b"GET /v1/status HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        elif kind == "http_garbage":
            writer.write(os.urandom(512) + b"\r\n\r\n")
        else:
            writer.write(b"GET /v1/playback HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            writer.write(b"\x82\xfe\x10\x00\x01\x02")  # a masked-less binary frame header promising 4096 bytes
        await writer.drain()
        await asyncio.sleep(rng.uniform(1, 4))
        writer.close()
        stats[kind] = stats.get(kind, 0) + 1
    except Exception:
        stats[kind + "_closed"] = stats.get(kind + "_closed", 0) + 1


async def abusers(port, connections, seconds, stats):
    rng = random.Random(7)
    end = time.monotonic() + seconds
    tasks = set()
    while time.monotonic() < end:
        while len(tasks) < connections:
            job = garbage_websocket if rng.random() < 0.6 else raw_tcp
            tasks.add(asyncio.create_task(job(port, rng, stats)))
        done, tasks = await asyncio.wait(tasks, timeout=0.2, return_when=asyncio.FIRST_COMPLETED)
        stats["finished"] = stats.get("finished", 0) + len(done)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def run(port, connections, seconds):
    good, stats = {}, {}
    before = e2e.cpu_sample()
    await asyncio.gather(good_client(port, seconds, good), abusers(port, connections, seconds + 2, stats))
    after = e2e.cpu_sample()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            healthy = response.status == 200
    except OSError:
        healthy = False
    expected = good["seconds"] * 1000 / 20
    stats.pop("close_reasons", None)
    summary = dict(
        connections=connections, seconds=seconds, abusive_connections_finished=stats.get("finished", 0),
        abuse=stats, good_chunks=good["chunks"], good_chunks_expected=round(expected), good_seq_gaps=good["gaps"],
        good_overruns=good["overruns"], server_healthy_after=healthy,
        steal_percent=round(e2e.steal_percent(before, after), 2))
    print("check-abuse: " + json.dumps(summary), flush=True)
    # Every chunk arrived (gapless seq, no overrun) and the client kept up with real time.
    check(healthy, "the server answers /healthz after the abuse")
    check(good["gaps"] == 0, f"the well-behaved client saw no seq gap ({good['gaps']})")
    check(good["overruns"] == 0, f"the well-behaved client saw no overrun ({good['overruns']})")
    check(good["chunks"] >= 0.98 * expected - 2,
          f"the well-behaved client kept up with real time ({good['chunks']} of {round(expected)} chunks)")


# ---- the limits

def request(server, method, path, body=None, headers=None, timeout=30):
    """(status, JSON body or {}, headers) of one request; error statuses are answers too."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        headers = headers or {}
        conn.request(method, path, body=body, headers=headers,
                     encode_chunked=headers.get("Transfer-Encoding") == "chunked")
        response = conn.getresponse()
        data = response.read()
        try:
            parsed = json.loads(data) if data else {}
        except ValueError:
            parsed = {}
        return response.status, parsed, dict(response.getheaders())
    finally:
        conn.close()


def error_code(body):
    return body.get("error", {}).get("code") if isinstance(body, dict) else None


def pcm_tone(seconds, rate=16000, frequency=440, amplitude=0.3):
    samples = e2e.tone(frequency, seconds, rate, amplitude)
    return (samples * 32767).astype("<i2").tobytes()


def feed_in_real_time(port, stream, stop, result):
    """A playback socket fed 20 ms chunks in real time, 200 ms ahead, on a thread of its own so the
    flood on the main loop cannot starve it."""
    async def feed():
        chunk = pcm_tone(0.02, frequency=300)
        async with websockets.connect(f"ws://127.0.0.1:{port}/v1/playback?rate=16000&stream={stream}") as ws:
            start, sent = time.monotonic(), 0
            while not stop.is_set():
                while sent * 0.02 < time.monotonic() - start + 0.2:
                    await ws.send(chunk)
                    sent += 1
                await asyncio.sleep(0.01)
            result["seconds_fed"] = sent * 0.02
    asyncio.run(feed())


def playback_counters(server):
    playback = server.get("/v1/status")["playback"]
    return playback["underruns"], playback["xruns"]


async def marks_flood(binary, device, count):
    """A million marks behind 20 s of audio: memory bounded, one clear error, the other stream unhurt."""
    server = e2e.Server(binary, device)
    if not server.start(capture=True):
        return check(False, "marks: the server did not start")
    stop, fed = threading.Event(), {}
    feeder = threading.Thread(target=feed_in_real_time, args=(server.port, "other", stop, fed))
    try:
        feeder.start()
        url = f"ws://127.0.0.1:{server.port}/v1/playback?rate=16000&stream=flood"
        async with websockets.connect(url, max_size=1 << 22) as ws:
            events = []

            async def read():
                async for message in ws:
                    events.append(json.loads(message))
            reader = asyncio.create_task(read())
            audio = pcm_tone(20)
            for offset in range(0, len(audio), 32000):
                await ws.send(audio[offset:offset + 32000])
            await (await ws.ping())
            await asyncio.sleep(1)
            underruns, xruns = playback_counters(server)
            before = server.rss_mb()
            started = time.monotonic()
            for index in range(count):
                await ws.send('{"type":"mark","name":"m%d"}' % index)
                if index % 2000 == 0:
                    await asyncio.sleep(0)
            # The pong comes after every mark before it was taken.
            await asyncio.wait_for(await ws.ping(), 120)
            flood_seconds = time.monotonic() - started
            after = server.rss_mb()
            await asyncio.sleep(0.5)
            underruns_after, xruns_after = playback_counters(server)
            await ws.send('{"type":"clear"}')
            await asyncio.sleep(0.3)
            reader.cancel()
        kinds = [event.get("type") for event in events]
        errors = [event for event in events if event.get("type") == "error"]
        heard = kinds.count("mark")
        summary = dict(marks=count, flood_seconds=round(flood_seconds, 1), rss_before_mb=round(before, 1),
                       rss_after_mb=round(after, 1), errors=len(errors), marks_heard=heard,
                       underruns=underruns_after - underruns, xruns=xruns_after - xruns)
        print("check-abuse marks: " + json.dumps(summary), flush=True)
        check(after - before < 5, f"marks: RSS grew {after - before:.1f} MB over {count} marks (< 5 MB)")
        # The 257th mark is refused long before the 20 s of audio are heard: the first error comes
        # before any mark. Then one error per run of refusals, so never more errors than marks heard.
        check(bool(errors) and all(error.get("code") == "too_many_marks" for error in errors)
              and kinds.index("error") < (kinds.index("mark") if "mark" in kinds else len(kinds)),
              f"marks: too_many_marks once the bound was reached, before any mark was heard ({errors[:1]})")
        check(len(errors) <= heard + 1, f"marks: one error per run of refused marks ({len(errors)} errors, {heard} marks heard)")
        check(underruns_after == underruns, f"marks: no playback underrun meanwhile ({underruns_after - underruns})")
        check(server.running(), "marks: the server still runs")
    finally:
        stop.set()
        feeder.join(10)
        server.stop()
    check(fed.get("seconds_fed", 0) > 0, "marks: the other stream was fed")


def capture_without_gaps(port, stop, result):
    """A capture client counting seq gaps and overruns until `stop`."""
    async def listen():
        url = f"ws://127.0.0.1:{port}/v1/capture?rate=16000&chunk_ms=20&encoding=json"
        async with websockets.connect(url, max_size=1 << 22) as ws:
            await ws.recv()
            expected, gaps, overruns, chunks = None, 0, 0, 0
            result["connected"] = True
            while not stop.is_set():
                message = json.loads(await ws.recv())
                if message["type"] == "overrun":
                    overruns += 1
                if message["type"] != "audio":
                    continue
                if expected is not None and message["seq"] != expected:
                    gaps += 1
                expected = message["seq"] + 1
                chunks += 1
            result.update(chunks=chunks, gaps=gaps, overruns=overruns)
    try:
        asyncio.run(listen())
    except Exception as error:
        result["error"] = f"{type(error).__name__}: {error}"


def connections_full(binary, device, limit=20, extra_sockets=80, files=256):
    """`--max-connections` filled with idle sockets, on a server allowed `files` descriptors: the
    rest get 503 at once; the clients already connected lose nothing, and a recording in 1 s
    segments keeps opening its files."""
    server = e2e.Server(binary, device, extra=["--max-connections", str(limit)])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(files, hard), hard))  # the server inherits it
    try:
        started = server.start(capture=True)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    if not started:
        return check(False, "connections: the server did not start")
    stop, heard = threading.Event(), {}
    listener = threading.Thread(target=capture_without_gaps, args=(server.port, stop, heard))
    sockets = []
    try:
        listener.start()
        e2e.wait_for(lambda: heard.get("connected"), 5)
        status, recording, _ = request(server, "POST", "/v1/recordings", b'{"name":"limits","segment_seconds":1}',
                                       {"Content-Type": "application/json"})
        check(status == 201, f"connections: a recording started ({status})")
        time.sleep(1)
        frames_before = server.get(f"/v1/recordings/{recording['id']}")["frames"]
        since = time.monotonic()
        time.sleep(0.5)  # the requests above have closed their connections
        refused, accepted = [], 0
        for _ in range(limit + extra_sockets):
            sock = socket.create_connection(("127.0.0.1", server.port))
            sock.settimeout(0.3)
            sockets.append(sock)
            try:
                data = sock.recv(4096)
            except socket.timeout:
                accepted += 1
                continue
            # The server half-closes after its answer: read to the end.
            sock.settimeout(3)
            while len(data) < 8192:
                more = sock.recv(4096)
                if not more:
                    break
                data += more
            refused.append(data)
        held = time.monotonic()
        descriptors = len(os.listdir(f"/proc/{server.process.pid}/fd"))
        healthz_code = None
        try:
            urllib.request.urlopen(server.base + "/healthz", timeout=5)
            healthz_status = 200
        except urllib.error.HTTPError as error:
            healthz_status = error.code
            healthz_code = error_code(json.load(error))
        except OSError as error:
            healthz_status = str(error)
        time.sleep(max(0.0, 2 - (time.monotonic() - held)))
        for sock in sockets:
            sock.close()
        sockets = []
        answered = e2e.wait_for(lambda: server.get("/v1/status"), 5)
        time.sleep(1)
        recorded = server.get(f"/v1/recordings/{recording['id']}")
        elapsed = time.monotonic() - since
        segments_before = len(recording.get("segments", []))
        stop.set()
        listener.join(5)
        first = refused[0].decode("latin-1") if refused else ""
        summary = dict(limit=limit, accepted_idle=accepted, refused=len(refused), healthz_while_full=healthz_status,
                       capture=heard, recording_frames_gained=recorded["frames"] - frames_before,
                       recording_state=recorded["state"], recording_gaps=recorded.get("gap_count"),
                       recording_segments=len(recorded.get("segments", [])), server_descriptors_while_full=descriptors,
                       descriptor_limit=files)
        print("check-abuse connections: " + json.dumps(summary), flush=True)
        check(accepted + 1 == limit, f"connections: {accepted} idle sockets and the capture client filled {limit}")
        check(len(refused) == extra_sockets + 1,
              f"connections: the {extra_sockets + 1} past the bound were answered at once ({len(refused)})")
        check(all(answer.startswith(b"HTTP/1.1 503") and b"too_many_connections" in answer and b"Connection: close" in answer
                  for answer in refused), f"connections: each refusal is a 503 too_many_connections with Connection: close ({first!r})")
        check(healthz_status == 503 and healthz_code == "too_many_connections",
              f"connections: a request while full gets 503 ({healthz_status})")
        check(bool(answered), "connections: new connections are served once the idle ones closed")
        check(heard.get("gaps") == 0 and heard.get("overruns") == 0 and heard.get("chunks", 0) > 100,
              f"connections: the capture client connected before lost nothing ({heard})")
        # Frames count gap silence too: a file that could not be written would end the recording
        # as failed, and a stall would leave frames behind the clock.
        gained = recorded["frames"] - frames_before
        check(recorded["state"] == "recording" and gained >= 0.9 * elapsed * recording["rate"],
              f"connections: the recording started before kept writing ({recorded['state']}, "
              f"{gained} frames in {elapsed:.1f} s)")
        check(len(recorded.get("segments", [])) - segments_before >= elapsed - 2,
              f"connections: it opened a new segment file each second meanwhile ({len(recorded.get('segments', []))} segments)")
        check(descriptors < files - 32, f"connections: descriptors were left while full ({descriptors} of {files} in use)")
        request(server, "POST", f"/v1/recordings/{recording['id']}/stop")
    finally:
        for sock in sockets:
            sock.close()
        stop.set()
        listener.join(5)
        server.stop()


def stalled_upload(port, head):
    """A chunked compressed upload that sends its first bytes and stalls (its decoder thread waits)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST /v1/playback?stream=stall HTTP/1.1\r\nHost: localhost\r\nContent-Type: audio/mpeg\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(head) + head + b"\r\n")
    return sock


def say_decoders_body(binary, device):
    """/v1/say bounded in seconds, decoder threads bounded, upload bodies bounded."""
    server = e2e.Server(binary, device, extra=["--max-decoders", "2", "--max-body-mb", "1", "--max-say-seconds", "120"])
    if not server.start(capture=False):
        return check(False, "limits: the server did not start")
    stalled = []
    try:
        time.sleep(1)
        idle = server.rss_mb()
        text = ("1234567890 " * 400)[:4000]
        started = time.monotonic()
        status, said, _ = request(server, "POST", "/v1/say?stream=say", json.dumps({"text": text, "rate": 0.5}).encode(),
                                  {"Content-Type": "application/json"}, timeout=120)
        say_seconds = time.monotonic() - started
        peak = server.rss_mb()
        request(server, "DELETE", "/v1/playback?stream=say")
        print("check-abuse say: " + json.dumps(dict(status=status, answer=said, seconds=round(say_seconds, 1),
                                                    rss_idle_mb=round(idle, 1), rss_after_mb=round(peak, 1))), flush=True)
        check(status == 200 and said.get("truncated") is True and 110_000 <= said.get("duration_ms", 0) <= 120_000,
              f"say: the worst text is cut at --max-say-seconds and says so ({status} {said})")
        check(peak - idle < 50, f"say: RSS {peak - idle:.1f} MB over idle (< 50 MB)")
        status, short, _ = request(server, "POST", "/v1/say?stream=say", b'{"text":"short"}', {"Content-Type": "application/json"})
        check(status == 200 and short.get("truncated") is False, f"say: a short text is not truncated ({short})")
        request(server, "DELETE", "/v1/playback?stream=say")

        with tempfile.TemporaryDirectory(prefix="audiogate-limits-") as folder:
            path = os.path.join(folder, "tone.mp3")
            subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=2",
                            "-ac", "1", "-b:a", "64k", path], check=True)
            mp3 = open(path, "rb").read()
        stalled = [stalled_upload(server.port, mp3[:2048]) for _ in range(2)]
        time.sleep(0.5)
        status, body, _ = request(server, "POST", "/v1/playback?stream=third", mp3, {"Content-Type": "audio/mpeg"})
        check(status == 503 and error_code(body) == "too_many_decoders",
              f"decoders: a third compressed upload gets 503 too_many_decoders ({status} {body})")

        async def websocket_file():
            async with websockets.connect(f"ws://127.0.0.1:{server.port}/v1/playback?format=mp3&stream=wsfile") as ws:
                await ws.send(mp3)
                return json.loads(await asyncio.wait_for(ws.recv(), 5))
        event = asyncio.run(websocket_file())
        check(event.get("type") == "error" and event.get("code") == "too_many_decoders",
              f"decoders: a WebSocket file gets the too_many_decoders event ({event})")
        for sock in stalled:
            sock.close()
        stalled = []
        freed = e2e.wait_for(lambda: request(server, "POST", "/v1/playback?stream=fourth", mp3,
                                             {"Content-Type": "audio/mpeg"})[0] == 200, 5, interval=0.2)
        check(bool(freed), "decoders: once the stalled uploads went away, an upload plays")
        request(server, "DELETE", "/v1/playback")

        big = pcm_tone(40)  # 1.28 MB of raw PCM: over 1 MB
        status, body, _ = request(server, "POST", "/v1/playback?rate=16000&stream=body", big,
                                  {"Content-Type": "application/octet-stream"})
        check(status == 413 and error_code(body) == "too_large", f"body: a declared length over --max-body-mb gets 413 ({status} {body})")
        try:
            status, body, _ = request(server, "POST", "/v1/playback?rate=16000&stream=body",
                                      (big[offset:offset + 65536] for offset in range(0, len(big), 65536)),
                                      {"Content-Type": "application/octet-stream", "Transfer-Encoding": "chunked"})
        except OSError as error:
            status, body = str(error), {}
        check(status == 413 and error_code(body) == "too_large", f"body: a chunked body over --max-body-mb gets 413 ({status} {body})")
        request(server, "DELETE", "/v1/playback?stream=body")
        status, body, _ = request(server, "POST", "/v1/playback?rate=16000&stream=body&wait=true", pcm_tone(0.5),
                                  {"Content-Type": "application/octet-stream"})
        check(status == 200 and abs(body.get("played_ms", 0) - 500) < 30,
              f"body: the stream plays the next upload normally ({status} {body})")
        check(server.running(), "limits: the server still runs")
    finally:
        for sock in stalled:
            sock.close()
        server.stop()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    e2e.add_binary_argument(parser)
    parser.add_argument("--device", default=os.environ.get("AUDIOGATE_TEST_DEVICE", "pulse"))
    parser.add_argument("--port", type=int, help="a server already running on this port (default: start one)")
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--marks", type=int, default=1_000_000, help="marks sent on one playback socket")
    parser.add_argument("--only-limits", action="store_true", help="skip the hostile clients, check the limits")
    parser.add_argument("--limit-phases", default="marks,connections,say", help="which limits to check (comma-separated)")
    args = parser.parse_args()
    # For this process and the server it starts: 500 connections need more than 1024 descriptors.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))

    server = None
    if args.port is None and not args.only_limits:
        server = e2e.Server(args.binary, args.device)
        if not server.start(capture=True):
            check(False, "check-abuse: the server did not start")
            e2e.finish()
    try:
        if not args.only_limits:
            await run(args.port or server.port, args.connections, args.seconds)
    except Exception as error:  # a client that could not run at all means the server did not serve it
        check(False, f"check-abuse: the run ended early: {type(error).__name__}: {error}")
    finally:
        if server:
            server.stop()
    if args.port is None:
        async def marks():
            await marks_flood(args.binary, args.device, args.marks)
        phases = [("marks", marks), ("connections", lambda: connections_full(args.binary, args.device)),
                  ("say", lambda: say_decoders_body(args.binary, args.device))]
        chosen = args.limit_phases.split(",")
        for phase, call in [(name, call) for name, call in phases if name in chosen]:
            try:
                if asyncio.iscoroutinefunction(call):
                    await call()
                else:
                    await asyncio.to_thread(call)
            except Exception as error:
                check(False, f"check-abuse {phase}: the run ended early: {type(error).__name__}: {error}")
    if e2e.failures():
        print("check-abuse: the well-behaved client was disturbed or a limit did not hold", file=sys.stderr, flush=True)
    elif args.only_limits:
        print("check-abuse: every limit held")
    else:
        print(f"check-abuse: a well-behaved client got every chunk while {args.connections} hostile connections ran;"
              " every limit held")
    e2e.finish()


if __name__ == "__main__":
    asyncio.run(main())
