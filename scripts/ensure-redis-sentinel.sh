#!/usr/bin/env bash
# Make sure the binaries of the topology tests (tests/topology) are there: redis-sentinel (Debian's redis-sentinel
# package) for the master/replica/sentinel tests, redis-server and redis-cli for the Redis Cluster tests. Installs
# what is missing with apt-get, and fails when it cannot: CI must not pass with those tests erroring for want of
# a binary.
#
# Usage: scripts/ensure-redis-sentinel.sh
set -euo pipefail

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
command -v redis-sentinel >/dev/null 2>&1 || missing+=(redis-sentinel)
if [[ ${#missing[@]} == 0 ]]; then
    exit 0
fi
as_root() {
    if [[ $(id -u) == 0 ]]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"; else
        echo "ensure-redis-sentinel: need root (or sudo) to run: $*" >&2; return 1; fi
}
echo "ensure-redis-sentinel: installing ${missing[*]} (tests/topology starts sentinels and a Redis Cluster)" >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
# The package's own service (a sentinel on 26379) is not what the tests use; they start theirs on other ports.
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
redis-sentinel --version
