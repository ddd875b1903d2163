#!/usr/bin/env python3
"""The Wyoming mic and snd services against the `wyoming` package's own client, then the real,
unmodified Home Assistant voice satellite (`wyoming-satellite`, in .venv-satellite) reading its
microphone from audiogate and playing through it, with this script as Home Assistant:

- describe/info on each service; the mic's audio-start and chunks (16 kHz, 16-bit, mono, 1024
  samples); `played` once a tone sent to snd has been heard whole on the monitor;
- the satellite: run-satellite -> run-pipeline, a tone played into the card reaches Home Assistant
  as 16 kHz audio at its pitch; TTS audio sent to the satellite is heard whole on the monitor;
- SIGTERM with a mic client and a snd client whose queue is full ends the server within 2 s;
- a non-loopback --host without --wyoming-allow-remote refuses to start;
- with a short --idle-timeout, a half header or a header with half its payload is closed after the
  timeout, while a mic client that only listens and a snd client quiet between events stay, and the
  server goes on serving new clients.

    .venv/bin/python Tests/EndToEnd/check_wyoming.py [--binary .build/debug/audiogate] [--device pulse]
"""
import argparse
import asyncio
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.pipeline import RunPipeline
from wyoming.satellite import RunSatellite
from wyoming.snd import Played

import e2e
from e2e import check

ROOT = pathlib.Path(__file__).resolve().parents[2]
SATELLITE_PYTHON = ROOT / ".venv-satellite/bin/python"
TTS_RATE = 22050


async def read_until(client, predicate, seconds):
    """Events until one satisfies `predicate` (returned last), or None on timeout/close."""
    events = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            event = await asyncio.wait_for(client.read_event(), deadline - time.monotonic())
        except asyncio.TimeoutError:
            break
        if event is None:
            break
        events.append(event)
        if predicate(event):
            return events
    return None


def dominant(samples, rate):
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.argmax(spectrum[1:]) + 1) * rate / len(samples)


async def send_tone(client, frequency, seconds, rate=TTS_RATE):
    """audio-start, 1024-sample chunks of a tone, audio-stop: what a TTS service sends."""
    pcm = e2e.tone(frequency, seconds, rate, amplitude=0.4).tobytes()
    await client.write_event(AudioStart(rate=rate, width=2, channels=1).event())
    for offset in range(0, len(pcm), 2048):
        await client.write_event(AudioChunk(rate=rate, width=2, channels=1, audio=pcm[offset:offset + 2048]).event())
    await client.write_event(AudioStop().event())


async def check_clients(server, mic_port, snd_port):
    mic = AsyncTcpClient("127.0.0.1", mic_port)
    await mic.connect()
    await mic.write_event(Describe().event())
    events = await read_until(mic, lambda e: Info.is_type(e.type), 5)
    check(events is not None, "mic: describe is answered with info")
    if events:
        info = Info.from_event(events[-1])
        check(len(info.mic) == 1 and info.mic[0].installed and not info.snd,
              f"mic: info has one installed mic program ({[p.name for p in info.mic]})")
        fmt = info.mic[0].mic_format if info.mic else None
        check(fmt is not None and (fmt.rate, fmt.width, fmt.channels) == (16000, 2, 1),
              f"mic: mic_format is 16000/2/1 ({fmt})")
        starts = [e for e in events if AudioStart.is_type(e.type)]
        check(starts and AudioStart.from_event(starts[0]).rate == 16000, "mic: audio-start comes first, 16 kHz")
    chunks = []
    while len(chunks) < 10:
        event = await asyncio.wait_for(mic.read_event(), 5)
        if event is not None and AudioChunk.is_type(event.type):
            chunks.append(AudioChunk.from_event(event))
    check(all((c.rate, c.width, c.channels, len(c.audio)) == (16000, 2, 1, 2048) for c in chunks),
          "mic: audio-chunks of 1024 samples, 16 kHz 16-bit mono")
    await mic.disconnect()

    snd = AsyncTcpClient("127.0.0.1", snd_port)
    await snd.connect()
    await snd.write_event(Describe().event())
    events = await read_until(snd, lambda e: Info.is_type(e.type), 5)
    info = Info.from_event(events[-1]) if events else None
    check(info is not None and len(info.snd) == 1 and info.snd[0].installed and not info.mic,
          "snd: describe is answered with info holding one installed snd program")

    for attempt in e2e.attempts():
        server.quiet()
        listener = e2e.Listener(server)
        started = time.monotonic()
        await send_tone(snd, 880, 1.0)
        events = await read_until(snd, lambda e: Played.is_type(e.type), 5)
        elapsed = time.monotonic() - started
        await asyncio.sleep(0.3)
        heard = e2e.tone_seconds(listener.stop(), 880)
        ok = events is not None and 0.95 <= elapsed < 2.5 and abs(heard - 1.0) <= 0.06
        if ok or not attempt.retry():
            break
    check(events is not None, "snd: audio-stop is answered with played")
    check(0.95 <= elapsed < 2.5, f"snd: played after the audio was heard ({elapsed:.2f} s for 1 s)")
    check(abs(heard - 1.0) <= 0.06, f"snd: the 1 s tone is heard whole on the monitor ({heard:.2f} s)")
    await snd.disconnect()


async def check_satellite(server, mic_port, snd_port, tone_path):
    ha_port = e2e.free_port()
    log = tempfile.NamedTemporaryFile(prefix="wyoming-satellite-", suffix=".log", delete=False)
    satellite = subprocess.Popen(
        [str(SATELLITE_PYTHON), "-m", "wyoming_satellite", "--name", "audiogate test",
         "--uri", f"tcp://127.0.0.1:{ha_port}", "--mic-uri", f"tcp://127.0.0.1:{mic_port}",
         "--snd-uri", f"tcp://127.0.0.1:{snd_port}", "--no-zeroconf", "--debug"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        ha = AsyncTcpClient("127.0.0.1", ha_port)
        for _ in range(100):
            try:
                await ha.connect()
                break
            except OSError:
                await asyncio.sleep(0.1)
        else:
            check(False, "satellite: it listens on its --uri")
            return

        await ha.write_event(RunSatellite().event())
        events = await read_until(ha, lambda e: RunPipeline.is_type(e.type), 10)
        check(events is not None, "satellite: run-satellite starts a pipeline (run-pipeline)")

        for attempt in e2e.attempts():
            player = e2e.room(tone_path)
            audio = bytearray()
            formats = set()
            await asyncio.sleep(0.5)
            deadline = time.monotonic() + 10
            while len(audio) < 16000 * 2 * 2 and time.monotonic() < deadline:
                event = await asyncio.wait_for(ha.read_event(), 5)
                if event is not None and AudioChunk.is_type(event.type):
                    chunk = AudioChunk.from_event(event)
                    formats.add((chunk.rate, chunk.width, chunk.channels))
                    audio += chunk.audio
            e2e.stop_room(player)
            # The last 1.5 s is surely inside the tone (the first chunks may be queued from before it).
            samples = np.frombuffer(bytes(audio[-48000:]), dtype="<i2") / 32768.0
            pitch = dominant(samples, 16000) if len(samples) else 0
            ok = formats == {(16000, 2, 1)} and abs(pitch - 1000) <= 2 and e2e.dbfs(samples) > -20
            if ok or not attempt.retry():
                break
        check(formats == {(16000, 2, 1)}, f"satellite: Home Assistant gets 16 kHz 16-bit mono audio ({formats})")
        check(abs(pitch - 1000) <= 2 and e2e.dbfs(samples) > -20,
              f"satellite: the tone played into the card arrives at its pitch ({pitch:.1f} Hz, {e2e.dbfs(samples):.1f} dBFS)")

        for attempt in e2e.attempts():
            server.quiet()
            listener = e2e.Listener(server)
            await send_tone(ha, 660, 1.5)
            # The satellite queues TTS audio for the snd service: wait until it has played.
            await asyncio.sleep(0.5)
            e2e.wait_for(lambda: server.get("/v1/status")["playback"]["queued_ms"] == 0, 5)
            await asyncio.sleep(1.5)
            heard = e2e.tone_seconds(listener.stop(), 660)
            ok = abs(heard - 1.5) <= 0.06
            if ok or not attempt.retry():
                break
        check(ok, f"satellite: TTS audio sent through it is heard whole on the monitor ({heard:.2f} s of 1.5 s)")
        await ha.disconnect()
    finally:
        e2e.stop_process(satellite)
        log.close()
        if e2e.failures():
            sys.stdout.write(pathlib.Path(log.name).read_text()[-3000:])


async def check_shutdown(server, mic_port, snd_port):
    """SIGTERM while a mic client listens and a snd client waits for room in a full queue."""
    mic = AsyncTcpClient("127.0.0.1", mic_port)
    await mic.connect()
    snd = AsyncTcpClient("127.0.0.1", snd_port)
    await snd.connect()
    await snd.write_event(AudioStart(rate=16000, width=2, channels=1).event())

    async def flood():
        # 80 s of silence: beyond the 60 s a stream may queue, so the server stops reading it.
        try:
            for _ in range(80):
                await snd.write_event(AudioChunk(rate=16000, width=2, channels=1, audio=bytes(32000)).event())
        except (OSError, ConnectionError):
            pass

    task = asyncio.create_task(flood())
    e2e.wait_for(lambda: server.get("/v1/status")["playback"]["queued_ms"] > 59000, 10)
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    code = await asyncio.get_running_loop().run_in_executor(None, lambda: server.process.wait(10))
    elapsed = time.monotonic() - started
    task.cancel()
    check(code == 0 and elapsed < 2, f"SIGTERM with Wyoming clients (one waiting for room): exit {code} after {elapsed:.2f} s")


IDLE_TIMEOUT = 2
# Timers and the loaded test machine: how much later than --idle-timeout a close may come.
IDLE_MARGIN = 1.5


async def closed_after(port, data):
    """Sends `data` (part of an event) and reads, dropping what comes (a mic sends audio), until the
    server closes; returns the seconds from the last byte sent to the close, or None after 10 s."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        sent = time.monotonic()
        deadline = sent + 10
        while time.monotonic() < deadline:
            try:
                chunk = await asyncio.wait_for(reader.read(65536), deadline - time.monotonic())
            except asyncio.TimeoutError:
                return None
            except ConnectionError:
                return time.monotonic() - sent
            if not chunk:
                return time.monotonic() - sent
        return None
    finally:
        writer.close()


async def stays_open(client, seconds, listening):
    """Whether a client that sent only whole events stays connected for `seconds`, and what it got; a
    listening mic client must keep receiving its audio, up to a chunk within the last second (after
    the closes). A loaded machine may make it lose some audio as any slow client does, so the
    timestamp steps are only reported."""
    stamps = []
    last = None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            event = await asyncio.wait_for(client.read_event(), deadline - time.monotonic())
        except asyncio.TimeoutError:
            break
        if event is None:
            return False, f"closed after {len(stamps)} chunks"
        if AudioChunk.is_type(event.type):
            stamps.append(AudioChunk.from_event(event).timestamp)
            last = time.monotonic()
    if not listening:
        return True, "open"
    steps = sorted({b - a for a, b in zip(stamps, stamps[1:])})
    quiet = max(0.0, deadline - last) if last else seconds
    return len(stamps) > 10 and quiet < 1, \
        f"{len(stamps)} chunks, timestamp steps {steps[:5]} ms, the last {quiet:.2f} s before the end"


async def check_idle(server, mic_port, snd_port):
    """--idle-timeout closes a peer that stops in the middle of an event, and only such a peer."""
    mic = AsyncTcpClient("127.0.0.1", mic_port)
    await mic.connect()
    await mic.write_event(Describe().event())
    snd = AsyncTcpClient("127.0.0.1", snd_port)
    await snd.connect()
    await snd.write_event(Describe().event())
    half_header = b'{"type":"audio-chunk","payload_len'
    half_payload = b'{"type":"audio-chunk","data":{"rate":16000,"width":2,"channels":1},"payload_length":2048}\n' + bytes(1000)
    results = await asyncio.gather(
        closed_after(mic_port, b'{"type":"descr'),
        closed_after(snd_port, half_header),
        closed_after(snd_port, half_payload),
        stays_open(mic, IDLE_TIMEOUT * 2.5, listening=True),
        stays_open(snd, IDLE_TIMEOUT * 2.5, listening=False))
    for name, elapsed in zip(["mic: half a header", "snd: half a header", "snd: a header and half its payload"], results):
        check(elapsed is not None and IDLE_TIMEOUT - 0.2 <= elapsed <= IDLE_TIMEOUT + IDLE_MARGIN,
              f"--idle-timeout {IDLE_TIMEOUT}: {name} is closed after the timeout "
              f"({'not within 10 s' if elapsed is None else f'{elapsed:.2f} s'})")
    check(results[3][0], f"--idle-timeout {IDLE_TIMEOUT}: a mic client that only listens stays and keeps its audio "
                         f"({results[3][1]})")
    check(results[4][0], f"--idle-timeout {IDLE_TIMEOUT}: a snd client quiet between events stays ({results[4][1]})")
    await snd.write_event(Describe().event())
    events = await read_until(snd, lambda e: Info.is_type(e.type), 5)
    check(events is not None, "--idle-timeout: the quiet snd client is still answered")
    await mic.disconnect()
    await snd.disconnect()
    # New clients are served as before.
    fresh = AsyncTcpClient("127.0.0.1", mic_port)
    await fresh.connect()
    events = await read_until(fresh, lambda e: AudioChunk.is_type(e.type), 5)
    check(events is not None and AudioStart.is_type(events[0].type),
          "--idle-timeout: a new mic client gets audio-start and audio after the closes")
    await fresh.disconnect()
    fresh = AsyncTcpClient("127.0.0.1", snd_port)
    await fresh.connect()
    await fresh.write_event(Describe().event())
    check(await read_until(fresh, lambda e: Info.is_type(e.type), 5) is not None,
          "--idle-timeout: a new snd client is answered after the closes")
    await fresh.disconnect()
    check(server.get("/healthz").get("status") == "ok", "--idle-timeout: the HTTP side still answers")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    e2e.add_binary_argument(parser)
    parser.add_argument("--device", default="pulse")
    args = parser.parse_args()

    mic_port, snd_port = e2e.free_port(), e2e.free_port()
    server = e2e.Server(args.binary, args.device,
                        extra=["--wyoming-mic-port", str(mic_port), "--wyoming-snd-port", str(snd_port)])
    if not server.start(capture=True):
        check(False, "check-wyoming: the server did not start")
        e2e.finish()
    with tempfile.TemporaryDirectory() as scratch:
        tone_path = pathlib.Path(scratch) / "tone.wav"
        e2e.write_wav(tone_path, e2e.tone(1000, 20, 48000), 48000)
        try:
            asyncio.run(check_clients(server, mic_port, snd_port))
            if SATELLITE_PYTHON.exists():
                asyncio.run(check_satellite(server, mic_port, snd_port, tone_path))
            else:
                check(False, f"satellite: {SATELLITE_PYTHON} is missing (scripts/install-deps.sh test)")
            asyncio.run(check_shutdown(server, mic_port, snd_port))
        finally:
            server.stop()

    # A non-loopback host without --wyoming-allow-remote refuses to start, with exit code 2.
    refused = subprocess.run(
        [str(args.binary), "serve", "--device", args.device, "--host", "0.0.0.0", "--port", str(e2e.free_port()),
         "--token", "t", "--wyoming-mic-port", str(e2e.free_port())],
        capture_output=True, text=True, timeout=30)
    check(refused.returncode == 2 and "--wyoming-allow-remote" in refused.stderr,
          f"a non-loopback --host without --wyoming-allow-remote exits 2 ({refused.returncode})")

    mic_port, snd_port = e2e.free_port(), e2e.free_port()
    server = e2e.Server(args.binary, args.device,
                        extra=["--wyoming-mic-port", str(mic_port), "--wyoming-snd-port", str(snd_port),
                               "--idle-timeout", str(IDLE_TIMEOUT)])
    if check(server.start(capture=True), f"the server starts with --idle-timeout {IDLE_TIMEOUT}"):
        try:
            asyncio.run(check_idle(server, mic_port, snd_port))
        finally:
            server.stop()
    e2e.finish()


if __name__ == "__main__":
    main()
