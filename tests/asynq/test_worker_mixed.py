"""Go and Python workers on the same asynq queues: they drain one queue together while one of each is SIGKILLed,
and each side's recoverer recovers the other's crashed tasks by asynq's lease rules.

These wait for Go's own timings (a 30 s lease; a recoverer that runs at start, then every minute, 30 s past a
lease's expiry), so they are few: a SIGKILLed Go server's tasks come back about 30 s later through the Python
recoverer, and a SIGKILLed Python worker's through the recoverer of a Go server started once its lease is 30 s
past, as Go's recoverer would find it on its next round.
"""

from __future__ import annotations

import base64
import signal
from collections import Counter

import redis

from taskq.queues.engine.asynq.keys import AsynqQueueKeys

from .go_asynq import wait_until
from .test_worker_runtime import in_state, spec

#: Go's lease plus its recoverer's allowance, and a margin: how long a crashed server's task can take to return.
GO_RECOVERY = 30 + 30 + 30.0


def queue_empty(r: redis.Redis, queue: str) -> bool:
    keys = AsynqQueueKeys(queue)
    lists = r.llen(keys.pending) + r.llen(keys.active)
    sets = sum(r.zcard(k) for k in (keys.scheduled, keys.retry, keys.archived, keys.lease))
    return lists + sets == 0


def test_two_go_and_two_python_workers_drain_one_queue_while_one_of_each_is_killed(go, py_worker, r) -> None:
    total = 300
    for n in range(total):
        go.enqueue(spec("nap", f"m{n}", b"100", queue="mixed"))
    go_args = ("-queues", "mixed=1", "-concurrency", "3", "-retry-delay", "1")
    p1 = py_worker("--queues", "mixed=1", "--concurrency", "3", name="p1")
    py_worker("--queues", "mixed=1", "--concurrency", "3", name="p2")
    wait_until(lambda: {"p1", "p2"} <= {name for _, _, _, name in go.runs(r)}, 60)
    with go.serving(*go_args, "-name", "g1") as g1, go.serving(*go_args, "-name", "g2"):
        wait_until(lambda: {name for _, _, _, name in go.runs(r)} >= {"g1", "g2", "p1", "p2"}, 60)
        p1.send_signal(signal.SIGKILL)
        g1.send_signal(signal.SIGKILL)
        p1.wait(10)
        g1.wait(10)
        wait_until(lambda: queue_empty(r, "mixed"), GO_RECOVERY + 30)
    runs = go.runs(r)
    assert {task_id for _, task_id, _, _ in runs} == {f"m{n}" for n in range(total)}  # every task ran
    twice = [pair for pair, seen in Counter((tid, retried) for _, tid, retried, _ in runs).items() if seen > 1]
    assert twice == []  # no attempt (task id, retry count) ran twice
    assert r.exists(*(AsynqQueueKeys("mixed").task(f"m{n}") for n in range(total))) == 0  # all done
    attempts = {(tid, retried) for _, tid, retried, _ in runs}
    for killed in ("p1", "g1"):  # what each killed server was running came back as the next attempt
        assert any((tid, retried + 1) in attempts for _, tid, retried, name in runs if name == killed), killed


def test_a_killed_go_servers_task_is_recovered_by_the_python_worker(go, py_worker, r) -> None:
    go.enqueue(spec("sleep", "g-crash", b"600000", max_retry=3))
    with go.serving("-queues", "default=1", "-name", "g1") as g1:
        wait_until(lambda: in_state(go, "default", "g-crash", "active"), 30)
        g1.send_signal(signal.SIGKILL)
        g1.wait(10)
    py_worker("--queues", "default=1")
    recovered = wait_until(lambda: in_state(go, "default", "g-crash", "retry"), GO_RECOVERY)
    assert recovered["last_err"] == "asynq: task lease expired" and recovered["retried"] == 1


def test_a_killed_python_workers_task_is_recovered_by_a_go_server(go, py_worker, r) -> None:
    go.enqueue(spec("sleep", "p-crash", b"600000", max_retry=3))
    proc = py_worker("--queues", "default=1")
    wait_until(lambda: in_state(go, "default", "p-crash", "active"), 30)
    # Active from the moment it is dequeued; killed only once its handler has begun, so the run is on record.
    wait_until(lambda: any(tid == "p-crash" for _, tid, _, _ in go.runs(r)), 30)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    lease = AsynqQueueKeys("default").lease
    expiry = r.zscore(lease, "p-crash")
    assert expiry is not None
    # Go's recoverer takes leases 30 s past their expiry; it runs once as its server starts, then every minute.
    wait_until(lambda: float(r.time()[0]) > expiry + 30 + 1, GO_RECOVERY, interval=0.5)
    with go.serving("-queues", "default=1", "-name", "g1", "-retry-delay", "3600"):
        recovered = wait_until(lambda: in_state(go, "default", "p-crash", "retry"), 30)
    assert recovered["last_err"] == "asynq: task lease expired" and recovered["retried"] == 1
    assert [(side, retried) for side, tid, retried, _ in go.runs(r) if tid == "p-crash"] == [("py", 0)]
    assert base64.b64decode(recovered["payload"]) == b"600000"
