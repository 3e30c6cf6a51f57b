#!/usr/bin/env bash
# Run the whole demo on one machine: the console (daphne), one worker, the periodic scheduler, and a traffic
# generator.
# Ctrl-C stops everything. Expects migrate and bootstrap_admin to have run (`make run` does both).
set -euo pipefail

cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
bindir=$(dirname "$python")
port=${PORT:-8000}
# Give the worker its graceful-shutdown window (TASKS_SHUTDOWN_TIMEOUT, default 8 s) plus a margin.
shutdown=${TASKS_SHUTDOWN_TIMEOUT:-8}
shutdown=${shutdown%.*}
[[ $shutdown =~ ^[0-9]+$ ]] || shutdown=8
grace=$(( shutdown + 4 ))

# The demo app (demo/: its handlers and the traffic generator) rides on the console's settings.
export DJANGO_SETTINGS_MODULE=demo.settings

pids=()

stop_children() {
    trap - INT TERM EXIT
    local pid alive
    for pid in "${pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for _ in $(seq 1 $(( grace * 5 ))); do
        alive=0
        for pid in "${pids[@]}"; do
            kill -0 "$pid" 2>/dev/null && alive=1
        done
        (( alive )) || break
        sleep 0.2
    done
    for pid in "${pids[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
}
trap 'echo; echo "stopping..."; stop_children; exit 130' INT TERM
trap stop_children EXIT

"$bindir/daphne" -b 127.0.0.1 -p "$port" console.asgi:application &
daphne_pid=$!
pids+=("$daphne_pid")

"$python" manage.py taskworker --queues critical=6,default=3,low=1 --import demo.tasks demo.django_tasks &
worker_pid=$!
pids+=("$worker_pid")

# The periodic scheduler: the demo's cron entries and today's task-history rollups every three minutes
# (demo/settings.py), so the Schedulers and History pages fill while the demo runs.
"$python" manage.py taskscheduler &
pids+=("$!")

# In the background too: whether it enqueues one batch and exits or keeps going, the demo stays up.
"$python" manage.py demo_traffic &
pids+=("$!")

# The History page reads the Spark rollups, which the scheduler starts every three minutes: one run right away,
# once the exporter has written the first events (it flushes every few seconds), fills it within about a minute.
(sleep 15 && "$python" manage.py tasks task enqueue analytics:daily --payload '{"date": "today"}' >/dev/null) &
pids+=("$!")

cat <<MSG

  taskq console: http://127.0.0.1:$port/
  log in as:     admin  (password printed by bootstrap_admin when it created the user;
                 '$python manage.py bootstrap_admin --reset' sets a new one)
  Ctrl-C stops the console, the worker, the scheduler and the traffic generator.

MSG

# Stay up while both the console and the worker run; if either dies, take the rest down with it.
status=0
wait -n "$daphne_pid" "$worker_pid" || status=$?
echo "run-demo: the console or the worker exited (status $status); stopping the rest" >&2
exit "$status"
