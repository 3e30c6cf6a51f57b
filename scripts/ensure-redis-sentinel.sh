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
source "$(dirname "$0")/apt-install.sh"
# The package's own service (a sentinel on 26379) is not what the tests use; they start theirs on other ports.
apt_install ensure-redis-sentinel "tests/topology starts sentinels and a Redis Cluster" "${missing[@]}"
redis-sentinel --version
