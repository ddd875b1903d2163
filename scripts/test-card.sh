#!/usr/bin/env bash
# Provides a real-time sound card for tests on machines without one: a PulseAudio daemon with a
# null sink named "speaker" whose monitor is the default source, reached through ALSA's "pulse" PCM.
#   scripts/test-card.sh start    start it unless a sound card or a daemon is already there
#   scripts/test-card.sh stop     stop the daemon
#   scripts/test-card.sh status   say which card tests will use
#   scripts/test-card.sh room     add the echo test room to the running daemon (idempotent): null sinks
#                                 "spk" (the loudspeaker) and "room" (what the microphone hears), a
#                                 fixed 40 ms loopback spk.monitor -> room as the acoustic path. ALSA
#                                 reaches them as pulse:spk (the loudspeaker) and pulse:room.monitor
#                                 (the microphone): the pulse plugin takes the PulseAudio device as
#                                 its argument, so no ALSA configuration file is written.
#                                 Near-end speech is played straight into "room". The "speaker" sink
#                                 and the defaults stay as they are.
set -euo pipefail
source "$(dirname "$0")/test-card-env.sh"

action="${1:-start}"

have_card() { [[ -d /dev/snd ]] && ls /dev/snd/pcmC* >/dev/null 2>&1; }
daemon_up() { pactl info >/dev/null 2>&1; }

start_daemon() {
    # --system=false as root is what the test card needs: a per-session daemon, no system bus.
    mkdir -p -m 700 "$PULSE_RUNTIME_PATH"
    pulseaudio -n --daemonize=yes --exit-idle-time=-1 --system=false \
        -L "module-null-sink sink_name=speaker rate=48000" \
        -L "module-native-protocol-unix auth-anonymous=1 auth-cookie-enabled=0" 2>/dev/null
    for _ in $(seq 1 50); do
        daemon_up && break
        sleep 0.1
    done
    daemon_up || { echo "test-card: PulseAudio did not start" >&2; exit 1; }
    pactl set-default-sink speaker
    pactl set-default-source speaker.monitor
}

# Earlier versions of this script appended three lines naming the room to ~/.asoundrc, which a
# process that had already read ALSA's configuration never saw. Take exactly those lines out again.
forget_room_asoundrc() {
    local asoundrc="${HOME:-/root}/.asoundrc"
    [[ -f "$asoundrc" ]] && grep -qxF "pcm.room_mic { type pulse; device room.monitor }" "$asoundrc" || return 0
    local kept
    kept=$(grep -vxF -e "# audiogate echo test room: room_spk is the loudspeaker, room_mic hears the room." \
        -e "pcm.room_spk { type pulse; device spk }" -e "pcm.room_mic { type pulse; device room.monitor }" "$asoundrc" || true)
    if [[ -z "${kept//[[:space:]]/}" ]]; then
        rm -f "$asoundrc"
    else
        printf '%s\n' "$kept" >"$asoundrc"
    fi
}

add_room() {
    daemon_up || start_daemon
    sinks=$(pactl list short sinks | cut -f2)
    grep -qx spk <<<"$sinks" || pactl load-module module-null-sink sink_name=spk rate=48000 channels=1 >/dev/null
    grep -qx room <<<"$sinks" || pactl load-module module-null-sink sink_name=room rate=48000 channels=1 >/dev/null
    # The loopback only carries sound when both ends already exist, so it is loaded last. Both
    # sinks run on one clock, so it keeps its rate (adjust_time=0): its default re-adjustment
    # resamples by a few ppm and now and then jumps its delay, an echo path no room on one card has,
    # which costs any canceller tens of dB in the run it happens in.
    old=$(pactl list short modules | grep "module-loopback.*source=spk.monitor.*sink=room" | grep -v "adjust_time=0" | cut -f1 || true)
    for module in $old; do pactl unload-module "$module"; done
    if ! pactl list short modules | grep -q "module-loopback.*source=spk.monitor.*sink=room.*adjust_time=0"; then
        pactl load-module module-loopback source=spk.monitor sink=room latency_msec=40 adjust_time=0 \
            source_dont_move=true sink_dont_move=true >/dev/null
    fi
    # Null sinks suspend when idle; a suspended monitor would make the path's delay vary.
    pactl suspend-sink spk 0 >/dev/null 2>&1 || true
    pactl suspend-sink room 0 >/dev/null 2>&1 || true
    forget_room_asoundrc
}

case "$action" in
start)
    if have_card && [[ -z "${AUDIOGATE_FORCE_TEST_CARD:-}" ]]; then
        echo "test-card: sound card present, using it"
    elif daemon_up; then
        echo "test-card: PulseAudio already running"
    else
        start_daemon
        echo "test-card: PulseAudio null sink 'speaker' ready (ALSA PCM 'pulse')"
    fi
    ;;
stop)
    pulseaudio --kill 2>/dev/null || true
    ;;
room)
    add_room
    echo "test-card: echo room ready (ALSA PCMs pulse:spk, pulse:room.monitor)"
    ;;
status)
    if daemon_up; then pactl info | grep -E "Default (Sink|Source)"; else echo "no PulseAudio"; fi
    ;;
*)
    echo "usage: $0 start|stop|status|room" >&2
    exit 2
    ;;
esac
