#!/usr/bin/env bash
# `make bench`: the figures docs/benchmarks.md reports, in one command. Sets up what the peers need, once and
# outside the repository (scripts/ensure-bench-peers.sh: a throwaway venv with Dramatiq, Huey, Celery, RQ, taskiq,
# streaq and SAQ, and a folder with BullMQ, at the exact versions of constraints/bench-peers.txt and
# bench/peers/node/package-lock.json, cached under ~/.cache/taskq), then runs the ceiling run (taskq sync and async,
# every peer, and the CPython ceilings, c=10 and c=64, in rounds) and the workload table (enqueue one by one,
# enqueue_many, drain, idle pickup, memory). About an hour on 2 cores; nothing else should run meanwhile.
#
# Environment: BENCH_REDIS_URL (default redis://127.0.0.1:6379/4, flushed by every workload), BENCH_PEERS_CACHE
# (where ensure-bench-peers.sh keeps the peers; default ~/.cache/taskq/bench-peers), BENCH_ROUNDS (default 3).
set -euo pipefail

cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
rounds=${BENCH_ROUNDS:-3}
export BENCH_REDIS_URL=${BENCH_REDIS_URL:-redis://127.0.0.1:6379/4}

bash scripts/ensure-redis.sh "$BENCH_REDIS_URL"
peers=$(bash scripts/ensure-bench-peers.sh)
eval "$peers"

"$python" -m bench.run_ceiling --rounds "$rounds" -n 20000
"$python" bench/run.py --rounds "$rounds"
