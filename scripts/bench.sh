#!/usr/bin/env bash
# `make bench`: the figures docs/benchmarks.md reports, in one command. Sets up what the peers need, once and
# outside the repository (a throwaway venv with Dramatiq, Huey, Celery, RQ, taskiq, streaq and SAQ; a throwaway
# folder with BullMQ), then runs the ceiling run (taskq sync and async, every peer, and the CPython ceilings,
# c=10 and c=64, in rounds) and the workload table (enqueue one by one, enqueue_many, drain, idle pickup,
# memory). About an hour on 2 cores; nothing else should run meanwhile.
#
# Environment: BENCH_REDIS_URL (default redis://127.0.0.1:6379/4, flushed by every workload), BENCH_PEERS_VENV
# (default /tmp/bench-peers-venv), BENCH_BULLMQ_DIR (default /tmp/bench-bullmq), BENCH_ROUNDS (default 3).
set -euo pipefail

cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
peers=${BENCH_PEERS_VENV:-/tmp/bench-peers-venv}
bullmq=${BENCH_BULLMQ_DIR:-/tmp/bench-bullmq}
rounds=${BENCH_ROUNDS:-3}
export BENCH_REDIS_URL=${BENCH_REDIS_URL:-redis://127.0.0.1:6379/4}

bash scripts/ensure-redis.sh "$BENCH_REDIS_URL"
if [[ ! -x $peers/bin/python ]]; then
    python3 -m venv "$peers"
    "$peers/bin/pip" install -q 'dramatiq[redis]' huey 'celery[redis]' rq redis hiredis taskiq taskiq-redis streaq saq
fi
if [[ ! -d $bullmq/node_modules/bullmq ]] && command -v npm >/dev/null; then
    mkdir -p "$bullmq"
    (cd "$bullmq" && npm init -y >/dev/null && npm install --silent bullmq ioredis)
fi
export BENCH_PEERS_PYTHON=$peers/bin/python BENCH_BULLMQ_DIR=$bullmq

"$python" -m bench.run_ceiling --rounds "$rounds" -n 20000
"$python" bench/run.py --rounds "$rounds"
