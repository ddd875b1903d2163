#!/usr/bin/env bash
# Provides a real-time sound card for tests on machines without one: a PulseAudio daemon with a
# null sink named "speaker" whose monitor is the default source, reached through ALSA's "pulse" PCM.
#   scripts/test-card.sh start    start it unless a sound card or a daemon is already there
#   scripts/test-card.sh stop     stop the daemon
#   scripts/test-card.sh status   say which card tests will use
set -euo pipefail

action="${1:-start}"

have_card() { [[ -d /dev/snd ]] && ls /dev/snd/pcmC* >/dev/null 2>&1; }
daemon_up() { pactl info >/dev/null 2>&1; }

start_daemon() {
    # --system=false as root is what the test card needs: a per-session daemon, no system bus.
    pulseaudio -n --daemonize=yes --exit-idle-time=-1 --system=false \
        -L "module-null-sink sink_name=speaker rate=48000" \
        -L module-native-protocol-unix 2>/dev/null
    for _ in $(seq 1 50); do
        daemon_up && break
        sleep 0.1
    done
    daemon_up || { echo "test-card: PulseAudio did not start" >&2; exit 1; }
    pactl set-default-sink speaker
    pactl set-default-source speaker.monitor
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
status)
    if daemon_up; then pactl info | grep -E "Default (Sink|Source)"; else echo "no PulseAudio"; fi
    ;;
*)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
