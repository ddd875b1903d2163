# Sourced by the scripts that start or reach the test card (scripts/test-card.sh): its sound server
# keeps its socket, pid and state in a temporary folder, and neither it nor its clients read or
# write a cookie in ~/.config/pulse (the server takes anonymous clients on its socket, which only
# this user can open). A variable already set wins.
export PULSE_RUNTIME_PATH="${PULSE_RUNTIME_PATH:-${TMPDIR:-/tmp}/audiogate-test-card-$(id -u)}"
export PULSE_STATE_PATH="${PULSE_STATE_PATH:-$PULSE_RUNTIME_PATH/state}"
export PULSE_COOKIE="${PULSE_COOKIE:-$PULSE_RUNTIME_PATH/cookie}"
