#!/usr/bin/env bash
# Make sure a Redis answers at the given URL (default: $REDIS_URL, else redis://127.0.0.1:6379/0).
# If none answers and the host is local, install redis-server when missing and start a throwaway one
# (no persistence: it only backs development and test runs). A remote Redis that does not answer is an error:
# we never try to start something on another machine.
#
# Usage: scripts/ensure-redis.sh [redis://host:port/db]
set -euo pipefail

url=${1:-${REDIS_URL:-redis://127.0.0.1:6379/0}}

scheme=${url%%://*}
if [[ $scheme != redis ]]; then
    echo "ensure-redis: only redis:// URLs can be checked or started here, got '$url'" >&2
    exit 2
fi
source "$(dirname "$0")/split-url.sh"
split_url "$url" 6379

ping_redis() {
    if command -v redis-cli >/dev/null 2>&1; then
        # -h/-p rather than -u: redis-cli's URL parser does not understand [::1]. The password goes through
        # REDISCLI_AUTH so it is not visible in ps. PONG is the only healthy answer (not NOAUTH, not LOADING).
        local args=(-h "$host" -p "$port") password=
        if [[ $userinfo == *:* ]]; then
            password=${userinfo#*:}
            [[ -n ${userinfo%%:*} ]] && args+=(--user "${userinfo%%:*}")
        fi
        [[ $(REDISCLI_AUTH=$password redis-cli "${args[@]}" ping 2>/dev/null) == PONG ]]
        return
    fi
    local py
    for py in .venv/bin/python python3; do
        if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import redis' >/dev/null 2>&1; then
            "$py" - "$url" <<'PY' >/dev/null 2>&1
import sys
import redis
sys.exit(0 if redis.Redis.from_url(sys.argv[1], socket_connect_timeout=1, socket_timeout=1).ping() else 1)
PY
            return
        fi
    done
    return 1
}

source "$(dirname "$0")/apt-install.sh"

if ping_redis; then
    exit 0
fi

case $host in
    127.*|localhost|::1) ;;
    *)
        echo "ensure-redis: Redis at $host:$port does not answer, and it is not local, so not starting one." >&2
        exit 1
        ;;
esac

if ! command -v redis-server >/dev/null 2>&1; then
    apt_install ensure-redis "redis-server not found" redis-server
    # The package may have started its own service on 6379.
    if ping_redis; then
        exit 0
    fi
fi

bind=127.0.0.1
[[ $host == ::1 ]] && bind=::1
rundir=${TMPDIR:-/tmp}
logfile="$rundir/taskq-redis-$port.log"
echo "ensure-redis: starting redis-server on $bind:$port (log: $logfile)" >&2
redis-server --daemonize yes --bind "$bind" --port "$port" --save "" --appendonly no \
    --dir "$rundir" --logfile "$logfile" --pidfile "$rundir/taskq-redis-$port.pid"

for _ in $(seq 1 50); do
    if ping_redis; then
        exit 0
    fi
    sleep 0.2
done
echo "ensure-redis: redis-server on $bind:$port did not answer PING within 10 s" >&2
tail -n 20 "$logfile" >&2 2>/dev/null || true
exit 1
