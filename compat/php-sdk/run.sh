#!/bin/sh
# The public PHP SDK, unchanged, against a pps of this checkout on 127.0.0.1 (see README.md):
# its own redis-server and instance folder in a temporary directory, removed at the end.
set -eu
: "${PPS_SDK_DIR:?set it to a checkout of risscsolutions/printformer-php-sdk}"
: "${PPS_JWT_DIR:?set it to a checkout of lcobucci/jwt at tag 4.3.0}"
export PPS_SDK_DIR PPS_JWT_DIR
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python="$root/.venv/bin/python"
work=$(mktemp -d)
cleanup() {
    for pid in "$work/gunicorn.pid" "$work/redis.pid"; do
        if [ -f "$pid" ]; then kill "$(cat "$pid")" 2>/dev/null || true; fi
    done
    sleep 1
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
free_port() {
    "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_for() {  # wait_for PORT: until something listens on 127.0.0.1:PORT (at most 20 s)
    "$python" -c '
import socket, sys, time
for _ in range(200):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit("nothing listens on port " + sys.argv[1])' "$1"
}
redis_port=$(free_port)
redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no --dir "$work" \
    --daemonize yes --pidfile "$work/redis.pid" --logfile "$work/redis.log"
wait_for "$redis_port"
pps_port=$(free_port)
export PPS_DEVELOPMENT=1 PPS_INSTANCE_PATH="$work/instance" \
    PPS_REDIS_URL="redis://127.0.0.1:$redis_port/0" PPS_BASE_URL="http://127.0.0.1:$pps_port" \
    PPS_BIND="127.0.0.1:$pps_port" PPS_WORKERS=1 PPS_WORKER_MODE=thread \
    PPS_NOTIFY_ALLOW_PRIVATE=1
cd "$root"
.venv/bin/pps db upgrade >/dev/null
.venv/bin/pps demo --json >"$work/demo.json"
.venv/bin/gunicorn -c deploy/gunicorn.conf.py --pid "$work/gunicorn.pid" wsgi:app \
    >"$work/gunicorn.log" 2>&1 &
wait_for "$pps_port"
field() { "$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$work/demo.json" "$1"; }
php "$here/drive.php" "http://127.0.0.1:$pps_port" "$(field client)" "$(field apiKey)" "$(field template)"
