# Sourced by the bench scripts: start_server BINARY ARGS... serves on a free loopback port, sets
# $port and $server, stops the server when the script exits, and returns once it answers /healthz
# and its devices have settled.
start_server() {
    local binary="$1"
    shift
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    "$binary" serve --port "$port" --log-level warning "$@" &
    server=$!
    trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
    for _ in $(seq 1 100); do
        curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    # A sound server's new streams take a moment before they run at their steady pace.
    sleep 1
}
