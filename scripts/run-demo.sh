#!/usr/bin/env bash
# Run the whole demo on one machine: the console (daphne), one worker, the periodic scheduler, and a traffic
# generator.
# The console, the worker and the scheduler are each supervised on their own, as systemd or Kubernetes would run
# them: one that exits (a worker stopped from the console or with `tasks server stop`, a killed process, a console
# restarted by hand) is started again after a backoff, with a line saying so, and the others stay up.
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

# supervise NAME COMMAND...: run COMMAND; whenever it exits, say so and start it again after a backoff (1 s,
# doubling to at most 30 s while it keeps exiting within 10 s of its start, back to 1 s once it stayed up). On
# SIGTERM it passes the signal on, waits for COMMAND to finish (a worker's graceful shutdown) and returns.
supervise() {
    local name=$1 child=0 stopping=0 backoff=1 started status
    shift
    trap 'stopping=1; if (( child )); then kill -TERM "$child" 2>/dev/null || true; fi' TERM
    while :; do
        started=$SECONDS
        "$@" &
        child=$!
        status=0
        wait "$child" || status=$?
        # A SIGTERM ends `wait` early (its trap passed the signal on): wait for the command's own exit.
        while (( stopping )) && kill -0 "$child" 2>/dev/null; do
            status=0
            wait "$child" || status=$?
        done
        (( stopping )) && return 0
        (( SECONDS - started >= 10 )) && backoff=1
        echo "run-demo: the $name exited (status $status); starting it again in ${backoff}s, as a supervisor would (Ctrl-C stops everything)" >&2
        sleep "$backoff" &
        child=$!
        wait "$child" 2>/dev/null || true
        (( stopping )) && return 0
        backoff=$(( backoff * 2 > 30 ? 30 : backoff * 2 ))
    done
}

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
        pkill -KILL -P "$pid" 2>/dev/null || true  # what a supervisor still runs: it would outlive it
        kill -KILL "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
}
trap 'echo; echo "stopping..."; stop_children; exit 130' INT TERM
trap stop_children EXIT

supervise console "$bindir/daphne" -b 127.0.0.1 -p "$port" taskq.console.asgi:application &
pids+=("$!")

supervise worker "$python" manage.py taskworker --queues critical=6,default=3,low=1 --import demo.tasks demo.django_tasks &
pids+=("$!")

# The periodic scheduler: the demo's cron entries and today's task-history rollups every three minutes
# (demo/settings.py), so the Schedulers and History pages fill while the demo runs.
supervise scheduler "$python" manage.py taskscheduler &
pids+=("$!")

# In the background too: whether it enqueues one batch and exits or keeps going, the demo stays up.
"$python" manage.py demo_traffic &
pids+=("$!")

# The History page reads the Spark rollups, which the scheduler starts every three minutes: one run right away,
# once the exporter has written the first events (it flushes every few seconds), fills it within about a minute.
# DEMO_ANALYTICS_NOW=0 leaves it to the schedule (tests that need no Spark).
if [[ ${DEMO_ANALYTICS_NOW:-1} != 0 ]]; then
    (sleep 15 && "$python" manage.py tasks task enqueue analytics:daily --payload '{"date": "today"}' >/dev/null) &
    pids+=("$!")
fi

cat <<MSG

  taskq console: http://127.0.0.1:$port/
  log in as:     admin  (password printed by bootstrap_admin when it created the user;
                 '$python manage.py bootstrap_admin --reset' sets a new one)
  A console, worker or scheduler that exits (Stop on a server's page, a kill) is started again.
  Ctrl-C stops the console, the worker, the scheduler and the traffic generator.

MSG

# Stay up until Ctrl-C (the supervisors never return on their own).
wait
