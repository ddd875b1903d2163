#!/usr/bin/env python3
"""A Sendspin server for the metadata@v1 and controller@v1 roles, on aiosendspin's server API: every
client joins one group, whose metadata is a fixed track (Test Title by Test Artist, 1 s into
200 s, playing) and whose controller offers play, pause, stop, next and previous (aiosendspin adds
switch, and volume and mute while a player in the group supports them). Each controller command the
group receives is appended to the events file as one line: `next`, `volume 40`, `mute true`.

With `--strict` it requires pairing, as a server whose operator approves each player: an unpaired
player gets no activity; each pairing it stores is appended to the events file as `paired CLIENT_ID`.
`--dial URL` dials a player waiting at URL, and with `--token` (the player's pairing token) pairs it
by the Pairing PSK method on that dial, or with `--code` (the 8 digits an operator would type in)
by the static pairing code method; a player that holds that attempt until its pairing window opens
(`client/pair-pending`) is written to the events file as `pending MESSAGE`. With `--dynamic-code STATUS_URL`
it pairs by the dynamic pairing code method instead, typing in the digits the player shows at
STATUS_URL (its /v1/status `sendspin.pairing_code`), as an operator reading them off the device
would; `--wrong-first` types six other digits in the first round, so the player's retry is run. Each
code it types is written to the events file as `typed DIGITS`.

It binds every interface and advertises nothing by multicast DNS; it dials no clients unless
`--discover` (it browses `_sendspin._tcp` and dials each player it finds, as Music Assistant does)
or `--dial` is given. Run it inside a private network namespace, as check_sendspin.py does. Runs with the Python of
.venv-sendspin (aiosendspin and the sendspin package); SIGTERM or SIGINT closes it.

    .venv-sendspin/bin/python Tests/EndToEnd/sendspin_roles_server.py --port 8927 --events FILE [--discover]
        [--strict] [--dial URL [--token SP:0... | --code DIGITS | --dynamic-code STATUS_URL [--wrong-first]]]
"""
import argparse
import asyncio
import json
import logging
import signal
import urllib.request

from aiosendspin.models.types import MediaCommand, PairingCodeFormat, PairMethod
from aiosendspin.noise import Identity, InMemoryServerPairingStore, decode_psk_token
from aiosendspin.noise.pairing import PairingAttempt
from aiosendspin.server import ClientAddedEvent, ClientRemovedEvent, SendspinServer
from aiosendspin.server.roles.controller import (
    ControllerEvent,
    ControllerMuteEvent,
    ControllerRepeatEvent,
    ControllerSeekEvent,
    ControllerSeekRelativeEvent,
    ControllerShuffleEvent,
    ControllerVolumeEvent,
)
from aiosendspin.server.roles.metadata.state import Metadata
from sendspin.serve.server import PartyPairingStore

METADATA = Metadata(title="Test Title", artist="Test Artist", album="Test Album", album_artist="Test Band",
                    year=2024, track=3, track_progress=1000, track_duration=200000, playback_speed=1000)
COMMANDS = [MediaCommand.PLAY, MediaCommand.PAUSE, MediaCommand.STOP, MediaCommand.NEXT, MediaCommand.PREVIOUS]


def event_line(event):
    """`next`, `volume 40`, `mute true`: the command's name as on the wire, then its argument."""
    name = type(event).__name__.removeprefix("Controller").removesuffix("Event")
    words = {"SeekRelative": "seek_relative"}.get(name, name.lower())
    match event:
        case ControllerVolumeEvent(volume=volume):
            return f"{words} {volume}"
        case ControllerMuteEvent(muted=muted) | ControllerShuffleEvent(shuffle=muted):
            return f"{words} {str(muted).lower()}"
        case ControllerRepeatEvent(mode=mode):
            return f"{words} {mode.value}"
        case ControllerSeekEvent(position_ms=position):
            return f"{words} {position}"
        case ControllerSeekRelativeEvent(offset_ms=offset):
            return f"{words} {offset}"
    return words


class RecordingPairingStore(InMemoryServerPairingStore):
    """The reference server's own store, writing each pairing it stores to the events file."""

    def __init__(self, events):
        super().__init__()
        self.events = events

    async def store_record(self, record):
        await super().store_record(record)
        print(f"paired {record.client_id}", file=self.events)


class RolesServer:
    def __init__(self, events_path):
        # Line-buffered so that the check sees each command as soon as it lands.
        self.events = open(events_path, "a", buffering=1)
        self.group = None
        self.server = None
        self.wrong_first = False

    async def read_code(self, status_url, typed):
        """The digits the player shows, read from its /v1/status until they appear (30 s at most);
        the first round's are replaced by six others when `wrong_first`. The code stays the same
        for every round of an attempt."""
        def shown():
            with urllib.request.urlopen(status_url, timeout=5) as response:
                return (json.load(response).get("sendspin") or {}).get("pairing_code")
        for _ in range(300):
            code = await asyncio.to_thread(shown)
            if code:
                break
            await asyncio.sleep(0.1)
        else:
            raise RuntimeError("the player showed no pairing code")
        digits = code.replace("-", "")
        if self.wrong_first and not typed:
            digits = f"{(int(digits) + 1) % 1_000_000:06d}"
        typed.append(code)
        print(f"typed {digits}", file=self.events)
        return digits

    async def run(self, port, discover=False, strict=False, dial=None, token=None, code=None, dynamic_code=None):
        loop = asyncio.get_running_loop()
        store = RecordingPairingStore(self.events) if strict else PartyPairingStore()
        self.server = SendspinServer(loop=loop, identity=Identity.generate(), server_name="audiogate roles e2e",
                                     pairing_store=store)
        self.server.add_event_listener(self.on_server_event)
        await self.server.start_server(port=port, advertise_addresses=[], discover_clients=discover)
        if dial:
            attempt = None
            if token:
                decoded = decode_psk_token(token)
                attempt = PairingAttempt(method=PairMethod.PAIRING_PSK, pairing_psk=decoded.pairing_psk,
                                         client_id=decoded.client_id)
            elif code:
                async def typed():
                    return code
                attempt = PairingAttempt(method=PairMethod.STATIC_PAIRING_CODE, pairing_code_provider=typed,
                                         on_pair_pending=lambda message: print(f"pending {message}", file=self.events))
            elif dynamic_code:
                rounds = []
                attempt = PairingAttempt(method=PairMethod.DYNAMIC_PAIRING_CODE, pairing_format=PairingCodeFormat.DIGITS,
                                         pairing_code_provider=lambda: self.read_code(dynamic_code, rounds))
            self.server.connect_to_client(dial, retry_initial_connection=True, pairing_attempt=attempt)
        stop = asyncio.Event()
        for number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(number, stop.set)
        await stop.wait()
        await self.server.close()
        self.events.close()

    def on_server_event(self, server, event):
        if isinstance(event, ClientAddedEvent):
            client = server.get_client(event.client_id)
            if client is None:
                return
            if self.group is None:
                # Metadata and commands belong to a group; the first client's is the one all share,
                # set up once so that a later client does not reset the track's progress.
                self.group = client.group
                self.group.add_event_listener(self.on_group_event)
                self.group.group_role("metadata").set_metadata(METADATA)
                self.group.group_role("controller").set_supported_commands(COMMANDS)
            else:
                asyncio.get_running_loop().create_task(self.group.add_client(client))
        # The last client's going deletes the group: the next client founds a fresh one.
        elif (isinstance(event, ClientRemovedEvent) and self.group is not None
              and not [c for c in self.group.clients if c.client_id != event.client_id]):
            self.group = None

    def on_group_event(self, group, event):
        if isinstance(event, ControllerEvent):
            print(event_line(event), file=self.events)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8927)
    parser.add_argument("--events", required=True, help="file that gets one line per controller command")
    parser.add_argument("--discover", action="store_true", help="dial the _sendspin._tcp players found by mDNS")
    parser.add_argument("--strict", action="store_true", help="require pairing: no activity for an unpaired player")
    parser.add_argument("--dial", help="dial the player waiting at this ws:// URL")
    parser.add_argument("--token", help="pair the dialed player with this pairing token (SP:0...)")
    parser.add_argument("--code", help="pair the dialed player by the static pairing code method with these digits")
    parser.add_argument("--dynamic-code", help="pair the dialed player by the dynamic pairing code it shows at this /v1/status URL")
    parser.add_argument("--wrong-first", action="store_true", help="type six other digits in the first dynamic round")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server = RolesServer(args.events)
    server.wrong_first = args.wrong_first
    asyncio.run(server.run(args.port, args.discover, args.strict, args.dial, args.token, args.code, args.dynamic_code))


if __name__ == "__main__":
    main()
