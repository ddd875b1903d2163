#!/usr/bin/env python3
"""A hostile Sendspin server for check_hostile_peers.py: audiogate's Sendspin player dials it at
ws://127.0.0.1:PORT/sendspin, and each connection it accepts plays the next round, in order. Every
round runs the real handshake (aiosendspin's run_handshake_server on the Sentinel PSK, as for an
unpaired player) and most bring the player up to playing first (server/hello, server/activate,
server/time answers, stream/start, 20 ms PCM chunks of silence), then attack:

- a binary message that does not decrypt, one whose tag was tampered with while playing, a replayed
  one;
- audio chunks whose header lies: shorter than its 13 bytes, or stamped at Int64.max;
- fragments that promise more than comes: a first fragment followed by an ordinary message, and one
  left pending while the server stops answering client/time;
- sizes over the limits: an audio chunk of 8.5 MB in fragments (aiosendspin's own fragmenting), a
  70 KB JSON message, a WebSocket frame announcing 2 GB (the frame header written raw), a WebSocket
  message of continuation frames past 64 KB;
- pairing: an activation on the Sentinel PSK, a dynamic pairing-code attempt whose CPace share is a
  point of low order, a pairing confirmation with no attempt under way;
- floods: text frames after the handshake, and thousands of valid encrypted small messages a second
  for a few seconds while the chunks keep coming;
- last, an honest server that plays.

The first connection (the warm-up) plays honestly until the file given as --go exists. Each round's
progress is appended to the --events file as JSON lines stamped with CLOCK_MONOTONIC: `accepted`
(the round's number and name, the connections accepted so far), `playing`, `text-flood` (the text
frames sent), `before-flood`, `flooding` and `after-flood` (the messages sent), and `end` (whether
audiogate closed the connection first, and any error); `done` after the last round. Connections
after the last round play honestly until closed.

It binds 127.0.0.1 only, advertises nothing by multicast DNS and dials no one, and runs at nice 10
(the CPU it spends flooding is the attacker's, not the box's). Runs with the Python of
.venv-sendspin; SIGTERM or SIGINT closes it.

    .venv-sendspin/bin/python Tests/EndToEnd/sendspin_hostile_server.py --port 8927 --events FILE --go FILE
"""
import argparse
import asyncio
import base64
import contextlib
import json
import logging
import os
import pathlib
import signal
import struct
import time

from aiohttp import WSMsgType, web
from aiosendspin.models.core import (
    ServerActivateMessage,
    ServerActivatePayload,
    ServerHelloMessage,
    ServerHelloPayload,
    ServerTimeMessage,
    ServerTimePayload,
    StreamStartMessage,
    StreamStartPayload,
)
from aiosendspin.models.player import StreamStartPlayer, pack_player_audio_header
from aiosendspin.models.types import Activity, AudioCodec
from aiosendspin.noise import (
    SENTINEL_PSK,
    HandshakeAbortedError,
    Identity,
    PskCategory,
    ResolvedPsk,
    psk_id_for,
    run_handshake_server,
)
from aiosendspin.noise.constants import FRAGMENT_FLAG_FIRST, MSG_TYPE_FRAGMENT

CHUNK_MS = 20
PCM_CHUNK = bytes(48 * CHUNK_MS * 4)  # 48 kHz stereo s16le silence: the attack is in the framing
LEAD_US = 600_000  # each chunk's time is this far ahead of the moment it is sent
I64_MAX = 2**63 - 1
FLOOD_S = 3
CLOSED = (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR)
IDENTITY = Identity.generate()
LOGGER = logging.getLogger("sendspin_hostile_server")


def now_us():
    """The server's clock: CLOCK_MONOTONIC microseconds."""
    return time.monotonic_ns() // 1000


def audio_chunk(stamp, payload=PCM_CHUNK):
    return pack_player_audio_header(stamp, max(0, min(stamp - now_us(), 0xFFFFFFFF))) + payload


def ws_frame(opcode, payload, fin=True, length=None):
    """A server's (unmasked) WebSocket frame; `length` may claim other than the payload's size."""
    length = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | opcode])
    if length < 126:
        head += bytes([length])
    elif length < 1 << 16:
        head += bytes([126]) + struct.pack(">H", length)
    else:
        head += bytes([127]) + struct.pack(">Q", length)
    return head + payload


async def sentinel(_client_id):
    """Every player is admitted unpaired, on the published Sentinel PSK."""
    return ResolvedPsk(psk_id_for(SENTINEL_PSK), SENTINEL_PSK, PskCategory.SENTINEL)


class Peer:
    """One connection after its handshake: reads audiogate's messages (answering client/time while
    `answer_time` holds), sends in one order through one lock whatever path a message takes, and
    notices when audiogate closes."""

    def __init__(self, request, ws, encrypted):
        self.request = request
        self.ws = ws
        self.enc = encrypted
        self.lock = asyncio.Lock()
        self.closed = asyncio.Event()
        self.hello = asyncio.Event()
        self.synchronized = asyncio.Event()
        self.answer_time = True
        self.answers = set()
        self.playing = None
        self.reader = asyncio.create_task(self._read())

    async def _read(self):
        try:
            while True:
                message = await self.enc.receive()
                received = now_us()
                if message.type in CLOSED:
                    break
                if message.type is WSMsgType.TEXT:
                    self._handle(json.loads(message.data), received)
        except (ConnectionError, RuntimeError, ValueError):
            pass
        finally:
            self.closed.set()

    def _handle(self, message, received):
        kind, payload = message.get("type"), message.get("payload") or {}
        if kind == "client/hello":
            self.hello.set()
        elif kind == "client/state" and payload.get("available"):
            self.synchronized.set()
        elif kind == "client/time" and self.answer_time:
            async def answer():
                # Stamped as it is sent, behind whatever else holds the lock.
                await self.enc.send_str(ServerTimeMessage(payload=ServerTimePayload(
                    client_transmitted=payload["client_transmitted"], server_received=received,
                    server_transmitted=now_us())).to_json())
            task = asyncio.get_running_loop().create_task(self._send(answer))
            # The loop holds tasks weakly: a time answer must not vanish while it holds the lock.
            self.answers.add(task)
            task.add_done_callback(self.answers.discard)

    async def _send(self, send, *args):
        """False once audiogate has closed its end."""
        if self.closed.is_set():
            return False
        async with self.lock:
            try:
                await send(*args)
                return True
            except (ConnectionError, RuntimeError):
                self.closed.set()
                return False

    async def send_json(self, message):
        return await self._send(self.enc.send_str, message if isinstance(message, str) else message.to_json())

    async def send_binary(self, data):
        """A typed binary message, encrypted (and fragmented when long) by aiosendspin."""
        return await self._send(self.enc.send_bytes, data)

    async def send_sealed(self, plaintext, tamper=False, twice=False):
        """`plaintext` encrypted as the next transport message by the session, sent as it is, with
        its tag's last byte flipped, or twice."""
        async def seal_and_send():
            sealed = bytearray(self.enc.session.encrypt(plaintext))
            if tamper:
                sealed[-1] ^= 1
            for _ in range(2 if twice else 1):
                await self.ws.send_bytes(bytes(sealed))
        return await self._send(seal_and_send)

    async def send_unsealed(self, data, text=False):
        """A WebSocket message past the transport: bytes that are no ciphertext, or text."""
        return await self._send(self.ws.send_str if text else self.ws.send_bytes, data)

    async def write_raw(self, data):
        """Bytes straight onto the TCP stream, for frames aiohttp would not write."""
        async def write():
            self.request.transport.write(data)
        return await self._send(write)

    async def start_playing(self):
        """server/hello, server/activate once client/hello came, stream/start once the player says
        it is available (its clock synchronized), then chunks every 20 ms; False if it fails."""
        await self.send_json(ServerHelloMessage(payload=ServerHelloPayload(name="hostile e2e")))
        if not await wait(self.hello, 5):
            return False
        await self.send_json(ServerActivateMessage(payload=ServerActivatePayload(
            activities=[Activity.PLAYBACK], active_roles=["player@v1"])))
        if not await wait(self.synchronized, 8):
            return False
        await self.send_json(StreamStartMessage(payload=StreamStartPayload(player=StreamStartPlayer(
            codec=AudioCodec.PCM, sample_rate=48000, channels=2, bit_depth=16))))
        self.playing = asyncio.create_task(self._chunks())
        return True

    async def _chunks(self):
        started, first = time.monotonic(), now_us() + LEAD_US
        sent = 0
        while not self.closed.is_set():
            while sent * CHUNK_MS / 1000 <= time.monotonic() - started + 0.1:
                if not await self.send_binary(audio_chunk(first + sent * CHUNK_MS * 1000)):
                    return
                sent += 1
            await asyncio.sleep(CHUNK_MS / 2000)

    async def stop_playing(self):
        if self.playing:
            self.playing.cancel()
            await asyncio.gather(self.playing, return_exceptions=True)
            self.playing = None

    async def play(self, seconds):
        """Plays for `seconds`; False if audiogate closed meanwhile."""
        return not await wait(self.closed, seconds)

    async def close(self):
        await self.stop_playing()
        with contextlib.suppress(ConnectionError, RuntimeError, TimeoutError):
            await asyncio.wait_for(self.ws.close(), 2)
        if self.request.transport:
            self.request.transport.abort()
        for task in (self.reader, *self.answers):
            task.cancel()
        await asyncio.gather(self.reader, *self.answers, return_exceptions=True)


async def wait(event, seconds):
    try:
        await asyncio.wait_for(event.wait(), seconds)
        return True
    except TimeoutError:
        return False


# ---- the rounds: each gets a Peer after the handshake (and the events file) and returns how long
# to wait for audiogate to close the connection before this server does.

async def bad_ciphertext(peer, _events):
    await peer.send_unsealed(os.urandom(64))
    return 3


async def tampered_tag(peer, _events):
    await peer.stop_playing()
    await peer.send_sealed(audio_chunk(now_us() + LEAD_US), tamper=True)
    return 3


async def replayed(peer, _events):
    await peer.stop_playing()
    await peer.send_sealed(audio_chunk(now_us() + LEAD_US), twice=True)
    return 3


async def short_chunk(peer, _events):
    await peer.stop_playing()
    await peer.send_binary(audio_chunk(now_us() + LEAD_US)[:6])
    return 3


async def chunk_at_int64_max(peer, _events):
    await peer.stop_playing()
    await peer.send_binary(audio_chunk(I64_MAX))
    return 3


async def fragment_interrupted(peer, _events):
    """A first fragment (no last flag) of an audio chunk, then an ordinary audio chunk."""
    await peer.stop_playing()
    await peer.send_sealed(bytes([MSG_TYPE_FRAGMENT, FRAGMENT_FLAG_FIRST]) + audio_chunk(now_us() + LEAD_US))
    await peer.send_binary(audio_chunk(now_us() + LEAD_US))
    return 3


async def fragment_held(peer, _events):
    """A first fragment whose rest never comes, while the server stops answering client/time."""
    await peer.stop_playing()
    peer.answer_time = False
    await peer.send_sealed(bytes([MSG_TYPE_FRAGMENT, FRAGMENT_FLAG_FIRST]) + audio_chunk(now_us() + LEAD_US))
    # A burst unanswered for 5 s ends the connection; bursts start every 2 s once the clock settled.
    return 10


async def fragments_over_limit(peer, _events):
    """An 8.5 MB audio chunk, which aiosendspin sends as type 1 fragments of 64 KB."""
    await peer.stop_playing()
    await peer.send_binary(audio_chunk(now_us() + LEAD_US, bytes(8_500_000)))
    return 3


async def json_over_limit(peer, _events):
    """A 70 KB JSON message (aiosendspin fragments it): a type nobody knows, padded."""
    await peer.send_json(json.dumps({"type": "hostile/padding", "payload": {"padding": "x" * 70_000}}))
    return 3


async def frame_2gb(peer, _events):
    """A binary frame header announcing 2^31 bytes, then 64 KB of them."""
    await peer.stop_playing()
    await peer.write_raw(ws_frame(0x2, bytes(1 << 16), length=1 << 31))
    return 3


async def message_over_limit(peer, _events):
    """One binary WebSocket message of three frames, 80 KB before its last."""
    await peer.stop_playing()
    await peer.write_raw(ws_frame(0x2, bytes(40_000), fin=False) + ws_frame(0x0, bytes(40_000), fin=False)
                         + ws_frame(0x0, bytes(100)))
    return 3


async def rehandshake_noise(peer, _events):
    """A re-handshake (noise/handshake in band) whose message 1 is random bytes."""
    await peer.stop_playing()
    data = base64.urlsafe_b64encode(os.urandom(96)).decode().rstrip("=")
    await peer.send_json(json.dumps({"type": "noise/handshake", "payload": {"data": data}}))
    return 3


async def pairing_on_sentinel(peer, _events):
    """A pairing activation (Pairing PSK method) on a session keyed by the Sentinel PSK, which can
    carry no pairing; then play on."""
    await peer.send_json(json.dumps({"type": "server/activate", "payload": {
        "activities": ["playback", "pairing"], "pairing": {"method": "pairing_psk"}}}))
    await peer.play(2)
    return 0


def b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


async def pairing_low_order_share(peer, _events):
    """A dynamic pairing-code attempt whose CPace share is a point of low order (u = 0), which makes
    every shared secret zero."""
    await peer.send_json(json.dumps({"type": "server/activate", "payload": {
        "activities": ["playback", "pairing"], "pairing": {"method": "dynamic_pairing_code", "format": "digits"}}}))
    await peer.send_json(json.dumps({"type": "server/pair-init", "payload": {"nonce_A": b64url(os.urandom(32))}}))
    await peer.send_json(json.dumps({"type": "server/pair-auth", "payload": {"pake_msg_1": b64url(bytes(32))}}))
    return 3


async def pairing_confirm_out_of_turn(peer, _events):
    """A pairing confirmation with no attempt under way."""
    await peer.send_json(json.dumps({"type": "server/pair-confirm", "payload": {"server_kc": b64url(os.urandom(64))}}))
    return 3


async def text_flood(peer, events):
    """5000 text frames, as fast as they go, after the handshake."""
    sent = 0
    message = json.dumps({"type": "server/time", "payload": {}})
    while sent < 5000 and await peer.send_unsealed(message, text=True):
        sent += 1
        if sent % 100 == 0:
            await asyncio.sleep(0)
    events.write(event="text-flood", messages=sent)
    return 3


async def encrypted_flood(peer, events):
    """Small encrypted JSON messages as fast as they go for FLOOD_S seconds, the chunks and the
    time answers still flowing, then two more seconds of honest play; this server closes."""
    await peer.play(1)
    events.write(event="before-flood")
    await peer.play(0.6)
    messages = [json.dumps({"type": "hostile/flood", "payload": {"n": 1}}),
                json.dumps({"type": "group/update", "payload": {"playback_state": "playing"}})]
    events.write(event="flooding")
    deadline = time.monotonic() + FLOOD_S
    sent = 0
    while time.monotonic() < deadline and await peer.send_json(messages[sent % 2]):
        sent += 1
        if sent % 50 == 0:
            # Lets the chunks and the time answers in.
            await asyncio.sleep(0)
    events.write(event="after-flood", messages=sent, seconds=FLOOD_S)
    await peer.play(2)
    return 0


async def honest(peer, _events):
    await peer.play(3)
    return 0


# (name, whether the player is brought to playing first, the attack); the check names the rounds
# the same way and says what audiogate should log for each.
ROUNDS = [
    ("bad ciphertext after the handshake", False, bad_ciphertext),
    ("a tampered tag while playing", True, tampered_tag),
    ("a replayed message", True, replayed),
    ("an audio chunk shorter than its header", True, short_chunk),
    ("an audio chunk stamped at Int64.max", True, chunk_at_int64_max),
    ("a first fragment, then another message", True, fragment_interrupted),
    ("a first fragment, then silence", True, fragment_held),
    ("an 8.5 MB audio chunk in fragments", True, fragments_over_limit),
    ("a 70 KB JSON message", True, json_over_limit),
    ("a WebSocket frame announcing 2 GB", True, frame_2gb),
    ("a WebSocket message of 80 KB in continuation frames", True, message_over_limit),
    ("a re-handshake whose message 1 is noise", True, rehandshake_noise),
    ("a pairing activation on the Sentinel PSK", True, pairing_on_sentinel),
    ("a pairing-code share of low order", True, pairing_low_order_share),
    ("a pairing confirmation out of turn", True, pairing_confirm_out_of_turn),
    ("a flood of text frames after the handshake", True, text_flood),
    ("a flood of encrypted messages", True, encrypted_flood),
    ("an honest server after all that", True, honest),
]


class Events:
    """The events file: one JSON object a line, each stamped with CLOCK_MONOTONIC seconds."""

    def __init__(self, path):
        # Open for the server's life, line-buffered so that the check sees each step as it happens.
        self.file = open(path, "a", buffering=1)  # noqa: SIM115

    def write(self, **fields):
        print(json.dumps(dict(fields, t=time.monotonic())), file=self.file)


class HostileServer:
    def __init__(self, events_path, go_path):
        self.events = Events(events_path)
        self.go = pathlib.Path(go_path)
        self.accepted = 0
        self.turn = asyncio.Lock()

    async def handle(self, request):
        ws = web.WebSocketResponse(compress=False, timeout=2)
        await ws.prepare(request)
        # One round at a time: a connection that comes while the last one is being closed waits.
        async with self.turn:
            self.accepted += 1
            number = self.accepted - 1  # 0: the warm-up
            if number == 0:
                name, playing, attack = "warm-up", True, None
            elif number <= len(ROUNDS):
                name, playing, attack = ROUNDS[number - 1]
            else:
                name, playing, attack = "after the rounds", True, None
            self.events.write(event="accepted", round=number, name=name, connections=self.accepted)
            result = {"error": "the round was cancelled"}
            try:
                result = await self._round(request, ws, number, playing, attack)
            except Exception as error:
                # A failure of this script: the check shows it.
                LOGGER.exception("round %d (%s)", number, name)
                result = {"error": f"{type(error).__name__}: {error}"[:300]}
            finally:
                self.events.write(event="end", round=number, name=name, **result)
                if number == len(ROUNDS):
                    self.events.write(event="done")
        return ws

    async def _round(self, request, ws, number, playing, attack):
        try:
            handshake = await run_handshake_server(ws, local_identity=IDENTITY, psk_provider=sentinel, timeout_s=5)
        except (HandshakeAbortedError, ConnectionError) as error:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await ws.close()
            return {"handshake": False, "error": str(error)[:200]}
        peer = Peer(request, ws, handshake.encrypted_ws)
        try:
            if playing:
                if not await peer.start_playing():
                    return {"handshake": True, "playing": False, "closed_by_audiogate": peer.closed.is_set()}
                self.events.write(event="playing", round=number)
                await peer.play(0.5)
            if attack is None:
                await self._honest(peer, number)
                return {"handshake": True, "playing": playing, "closed_by_audiogate": peer.closed.is_set()}
            wait_s = await attack(peer, self.events)
            closed = await wait(peer.closed, wait_s) if wait_s else peer.closed.is_set()
            return {"handshake": True, "playing": playing, "closed_by_audiogate": closed}
        finally:
            await peer.close()

    async def _honest(self, peer, number):
        """The warm-up plays until the check says go; a connection after the rounds, until closed."""
        while not peer.closed.is_set() and (number != 0 or not self.go.exists()):
            await peer.play(0.1)
        await peer.play(0.3)


async def serve(port, events_path, go_path):
    server = HostileServer(events_path, go_path)
    app = web.Application()
    app.router.add_get("/sendspin", server.handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, stop.set)
    await stop.wait()
    await runner.cleanup()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8927)
    parser.add_argument("--events", required=True, help="file that gets one JSON line per round's step")
    parser.add_argument("--go", required=True, help="the warm-up round plays until this file exists")
    args = parser.parse_args()
    # A hostile server stands for a peer on another machine: on this one its own work (thousands of
    # messages a second to encrypt) must not take the CPU from the player and the clients it serves.
    os.nice(10)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(serve(args.port, args.events, args.go))


if __name__ == "__main__":
    main()
