#!/usr/bin/env bash
# The peers the benchmarks compare taskq with, installed once and cached outside the repository: a throwaway venv
# with Dramatiq, Huey, Celery, RQ, taskiq, streaq, SAQ and matplotlib at the exact versions of
# constraints/bench-peers.txt, and a folder with BullMQ and ioredis at the exact versions of
# bench/peers/node/package-lock.json (`npm ci`). `make test` (so CI) and scripts/bench.sh use it; by hand:
#
#   eval "$(bash scripts/ensure-bench-peers.sh)"    # exports BENCH_PEERS_PYTHON and BENCH_BULLMQ_DIR
#
# It prints those two `export` lines on stdout (progress goes to stderr). Both live under
# ${BENCH_PEERS_CACHE:-~/.cache/taskq/bench-peers}/<key>, where the key is a hash of the two pinned lists, this
# script and the interpreter's and Node's versions: a change of any of them builds a new folder (a build cut short
# is redone, and the folders of older keys are removed once the new one is complete), and an unchanged list reuses
# the folder without touching pip or npm. A lock serialises two runs that start together.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/apt-install.sh
source scripts/apt-install.sh

PINS=constraints/bench-peers.txt
NODE_LOCK=bench/peers/node/package-lock.json
python=${BENCH_PEERS_BASE_PYTHON:-python3}
root=${BENCH_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/taskq/bench-peers}

if ! command -v npm >/dev/null 2>&1; then
    apt_install ensure-bench-peers "BullMQ, the Node peer" nodejs npm
fi

key=$({
    cat "$0" "$PINS" bench/peers/node/package.json "$NODE_LOCK"
    "$python" -VV
    node --version
} | sha256sum | cut -c1-16)
home=$root/$key
mkdir -p "$root"
exec 9>"$root/.lock"
flock 9

if [[ ! -f $home/.complete ]]; then
    started=$SECONDS
    echo "ensure-bench-peers: building $home (pip install -r $PINS; npm ci)" >&2
    rm -rf "$home"
    mkdir -p "$home/bullmq"
    "$python" -m venv "$home/venv"
    "$home/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$PINS"
    "$home/venv/bin/python" -m pip check --disable-pip-version-check >&2
    cp bench/peers/node/package.json "$NODE_LOCK" "$home/bullmq/"
    (cd "$home/bullmq" && npm ci --silent --no-audit --no-fund) >&2
    # What the smoke runs and the benchmarks import, asked once here so that a broken install fails now, by name.
    "$home/venv/bin/python" -c 'import dramatiq, huey, celery, rq, taskiq_redis, streaq, saq, hiredis, matplotlib'
    test -f "$home/bullmq/node_modules/bullmq/package.json"
    touch "$home/.complete"
    echo "ensure-bench-peers: built in $((SECONDS - started)) s" >&2
    for old in "$root"/*/; do
        [[ ${old%/} == "$home" ]] || rm -rf "${old%/}"
    done
fi

printf 'export BENCH_PEERS_PYTHON=%q\n' "$home/venv/bin/python"
printf 'export BENCH_BULLMQ_DIR=%q\n' "$home/bullmq"
