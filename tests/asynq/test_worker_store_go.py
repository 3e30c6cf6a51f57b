"""The same as Go's: what a Go asynq server leaves in Redis, the store leaves on an identical seed, key for key and
field for field (times within the seconds the two runs lie apart), and Go's Inspector reads it the same way."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import pytest
import redis

from taskq.queues.engine.asynq.keys import ALL_SERVERS, ALL_WORKERS, AsynqQueueKeys
from taskq.queues.engine.asynq.wire import WireServer, WireTask, WireWorker
from taskq.queues.engine.asynq.worker_store import AsynqWorkerStore
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.clock import FakeClock

from .go_asynq import wait_until

Q = AsynqQueueKeys("default")
RETRY_DELAY = 3600  # the Go server's -retry-delay: the failed task's next attempt is an hour on
#: Three tasks, each ending in one of the processor's transitions: completed with its result kept an hour,
#: failed into retry, and failed for good (SkipRetry) into archived.
TASKS = [
    {"type": "result", "payload": "cmVzdWx0", "task_id": "kept", "retention_seconds": 3600, "max_retry": 3},
    {"type": "fail", "payload": "", "task_id": "failed", "max_retry": 3, "timeout_seconds": 60},
    {"type": "skip", "payload": "", "task_id": "skipped", "max_retry": 3, "unique_seconds": 600},
]
TOLERANCE = 2.0  # seconds: each side writes whole seconds, a moment after the instant it is measured from


class Near(float):
    """A time, as seconds from the instant its side ran; equal to another within ``TOLERANCE``."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, float) and abs(self - other) <= TOLERANCE

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = float.__hash__


def _message(raw: bytes, since: float) -> dict[str, Any]:
    fields = asdict(WireTask.decode(raw))
    for name in ("last_failed_at", "completed_at"):
        fields[name] = Near(fields[name] - since) if fields[name] else 0
    return fields


def _value(r: redis.Redis, key: bytes, since: float) -> Any:
    kind = r.type(key).decode()
    if kind == "hash":
        fields = r.hgetall(key)
        return {k.decode(): _message(v, since) if k == b"msg" else v for k, v in fields.items()}
    if kind == "zset":
        return {m.decode(): Near(score - since) for m, score in r.zrange(key, 0, -1, withscores=True)}
    if kind == "list":
        return r.lrange(key, 0, -1)
    if kind == "set":
        return r.smembers(key)
    return r.get(key)


def snapshot(r: redis.Redis, since: float) -> dict[str, Any]:
    """Every key of asynq's but the server registry, times as seconds from ``since``, and when each key expires."""
    out = {}
    for key in sorted(r.scan_iter("asynq:*")):
        if key.startswith((b"asynq:servers", b"asynq:workers")):
            continue
        ttl = r.pttl(key)
        expires = Near(time.time() + ttl / 1000 - since) if ttl >= 0 else None
        out[key.decode()] = (_value(r, key, since), expires)
    return out


def _inspected(go: Any, since: float) -> list[dict[str, Any]]:
    """What Go's Inspector says of each task, times as seconds from ``since``."""
    out = []
    for spec in TASKS:
        info = go("task", "default", spec["task_id"])
        for name in ("last_failed_at", "completed_at", "next_process_at"):
            info[name] = Near(info[name] - since) if info[name] else 0
        out.append(info)
    return out


def _seed(go: Any) -> None:
    for spec in TASKS:
        go.enqueue(spec)


def _settled(r: redis.Redis) -> bool:
    return [r.hget(Q.task(spec["task_id"]), "state") for spec in TASKS] == [b"completed", b"retry", b"archived"]


@pytest.fixture
def store(r: redis.Redis, redis_url: str) -> Iterator[AsynqWorkerStore]:
    broker = Broker(redis_url)  # the system clock, as the Go server's
    yield AsynqWorkerStore(broker)
    broker.close()


def test_processor_transitions_leave_what_go_leaves(go: Any, r: redis.Redis, store: AsynqWorkerStore) -> None:
    _seed(go)
    with go.serving("-queues", "default=1", "-name", "g1", "-retry-delay", str(RETRY_DELAY)):
        wait_until(lambda: _settled(r), timeout=30)
        go_since = time.time()
    by_go, go_inspected = snapshot(r, go_since), _inspected(go, go_since)
    errors = {spec["task_id"]: WireTask.decode(r.hget(Q.task(spec["task_id"]), "msg")).error_msg for spec in TASKS}

    r.flushdb()
    _seed(go)
    since = time.time()
    for _ in TASKS:
        dequeued = store.dequeue(["default"])
        assert dequeued is not None
        message = dequeued.message
        if message.type == "result":
            assert store.write_result("default", message.id, message.payload) == len(message.payload)
            store.mark_complete(message)
        elif message.type == "fail":
            store.retry(message, time.time() + RETRY_DELAY, errors[message.id])
        else:
            store.archive(message, errors[message.id])
    assert store.dequeue(["default"]) is None

    assert snapshot(r, since) == by_go
    assert _inspected(go, since) == go_inspected
    assert [(q["processed"], q["failed"]) for q in go("stats")] == [(3, 2)]


def _server_keys(r: redis.Redis, since: float) -> dict[str, Any]:
    """The registry: the index sets' scores and every server and workers key, decoded, with its time to live."""
    out: dict[str, Any] = {
        index: {m.decode(): Near(s - since) for m, s in r.zrange(index, 0, -1, withscores=True)}
        for index in (ALL_SERVERS, ALL_WORKERS)
    }
    for key in r.scan_iter("asynq:servers:*"):
        out[key.decode()] = (asdict(WireServer.decode(r.get(key))), Near(r.pttl(key) / 1000))
    for key in r.scan_iter("asynq:workers:*"):
        workers = {k.decode(): asdict(WireWorker.decode(v)) for k, v in r.hgetall(key).items()}
        out[key.decode()] = (workers, Near(r.pttl(key) / 1000))
    return out


def test_server_state_is_what_go_heartbeat_writes(go: Any, r: redis.Redis, store: AsynqWorkerStore) -> None:
    go.enqueue({"type": "sleep", "payload": base64.b64encode(b"20000").decode(), "task_id": "long"})
    with go.serving("-queues", "default=2", "-name", "g1", "-concurrency", "3", "-shutdown-timeout", "1"):
        listed = wait_until(lambda: [s for s in go("servers") if s["active_workers"]], timeout=30)
        go_since = time.time()  # just after the heartbeat that listed the running task
        by_go = _server_keys(r, go_since)
        raw_server = r.get(next(r.scan_iter("asynq:servers:*")))
        raw_workers = r.hgetall(next(r.scan_iter("asynq:workers:*")))
    assert not _server_keys(r, go_since)[ALL_SERVERS]  # Go cleared its state on shutdown

    server = WireServer.decode(raw_server)
    workers = [WireWorker.decode(v) for v in raw_workers.values()]
    since = time.time()
    store.write_server_state(server, workers, ttl=10)  # asynq's heartbeat: twice its 5 s interval
    assert go("servers") == listed
    ours = _server_keys(r, since)
    assert ours.keys() == by_go.keys()
    for key, value in ours.items():
        if key in (ALL_SERVERS, ALL_WORKERS):
            assert value == by_go[key]
        else:
            assert value[0] == by_go[key][0]
            assert value[1] == by_go[key][1] and value[1] <= 10

    store.clear_server_state(server.host, server.pid, server.server_id)
    assert go("servers") == []
    assert not list(r.scan_iter("asynq:servers*")) and not list(r.scan_iter("asynq:workers*"))


# -- each side's recoverer takes over the other's crashed task, by the same lease rules --------------------------

LEASE_EXPIRED = "asynq: task lease expired"  # the error asynq's recoverer records


def test_go_recoverer_takes_over_a_task_this_store_leased(go: Any, r: redis.Redis, redis_url: str) -> None:
    """A Python worker that died holding a task: its lease ran out 90 s ago, so Go's recoverer (which runs as the
    server starts, with its 30 s allowance) retries it, and the Go server then runs the next attempt."""
    go.enqueue({"type": "plain", "task_id": "py-crash", "max_retry": 3})
    broker = Broker(redis_url, clock=FakeClock(time.time() - 120))  # dequeued two minutes ago, never finished
    try:
        dequeued = AsynqWorkerStore(broker).dequeue(["default"])
    finally:
        broker.close()
    assert dequeued is not None and r.zscore(Q.lease, "py-crash") == int(time.time() - 120) + 30
    with go.serving("-queues", "default=1", "-name", "g1", "-retry-delay", "0"):
        wait_until(lambda: not r.exists(Q.task("py-crash")), timeout=30)
    assert go.runs(r) == [("go", "py-crash", 1, "g1")]  # the second attempt, counted as a failure of the first
    assert go("stats")[0]["failed"] == 1


def test_this_store_recovers_a_task_a_killed_go_server_held(go: Any, r: redis.Redis, redis_url: str) -> None:
    """A Go server SIGKILLed mid-task leaves it active with a lease nobody extends; past the lease and the
    allowance, the store's recoverer read finds it and its retry is what Go's recoverer writes."""
    go.enqueue({"type": "sleep", "payload": base64.b64encode(b"60000").decode(), "task_id": "go-crash"})
    with go.serving("-queues", "default=1", "-name", "g1") as proc:
        wait_until(lambda: r.zscore(Q.lease, "go-crash"), timeout=30)
        proc.kill()
        proc.wait()
    lease = r.zscore(Q.lease, "go-crash")
    clock = FakeClock(lease + 30)  # the allowance not yet passed: nothing to recover
    broker = Broker(redis_url, clock=clock)
    try:
        store = AsynqWorkerStore(broker)
        assert store.lease_expired(["default"], clock.now() - 30 - 1) == []
        clock.advance(2)
        (message,) = store.lease_expired(["default"], clock.now() - 30)
        assert message.id == "go-crash" and message.retried == 0
        store.retry(message, clock.now() + 10, LEASE_EXPIRED)
    finally:
        broker.close()
    info = go("task", "default", "go-crash")
    assert (info["state"], info["retried"], info["last_err"]) == ("retry", 1, LEASE_EXPIRED)
    assert (info["last_failed_at"], info["next_process_at"]) == (int(lease + 32), int(lease + 42))
    assert go.runs(r) == [("go", "go-crash", 0, "g1")]


# -- the forwarder's and the shutdown's transitions ---------------------------------------------------------------


def test_forward_leaves_what_go_forwarder_leaves(go: Any, r: redis.Redis, redis_url: str) -> None:
    """A scheduled task come due, moved to pending by Go's forwarder (the queue paused, so nothing runs it), and by
    the store's forward on the same seed."""
    spec = {"type": "plain", "task_id": "later", "process_in_seconds": 1, "queue": "default"}
    go("act", "pause", "default")
    go.enqueue(spec)
    with go.serving("-queues", "default=1", "-name", "g1"):
        wait_until(lambda: r.hget(Q.task("later"), "state") == b"pending", timeout=30)
        go_since = time.time()
    by_go = snapshot(r, go_since)
    pending_since = int(r.hget(Q.task("later"), "pending_since")) / 1e9

    r.flushdb()
    go("act", "pause", "default")
    go.enqueue(spec)
    clock = FakeClock(time.time() + 2)  # past the task's time, without waiting for it
    broker = Broker(redis_url, clock=clock)
    try:
        assert AsynqWorkerStore(broker).forward(["default"]) == 1
    finally:
        broker.close()
    ours = snapshot(r, clock.now())
    assert int(r.hget(Q.task("later"), "pending_since")) == int(clock.now() * 1e9)
    # pending_since (ns) is the one field a snapshot leaves raw: compared as a time, then set aside; the paused
    # key holds the time the seed paused the queue
    assert abs(pending_since - go_since) <= TOLERANCE
    for state in (ours, by_go):
        del state[Q.task("later")][0]["pending_since"]
        del state[Q.paused]
    assert ours == by_go


def test_dequeue_and_requeue_leave_what_go_leaves(go: Any, r: redis.Redis, store: AsynqWorkerStore) -> None:
    """A task dequeued (active, with a 30 s lease), then still running when the shutdown timeout ends: back to
    pending (Go's processor requeues it). The store's dequeue and requeue leave the same keys."""
    spec = {"type": "sleep", "payload": base64.b64encode(b"60000").decode(), "task_id": "long"}
    go.enqueue(spec)
    with go.serving("-queues", "default=1", "-name", "g1", "-shutdown-timeout", "1"):
        wait_until(lambda: r.hget(Q.task("long"), "state") == b"active", timeout=30)
        running_by_go = snapshot(r, time.time())
    wait_until(lambda: r.hget(Q.task("long"), "state") == b"pending", timeout=30)
    go_since = time.time()
    by_go = snapshot(r, go_since)

    r.flushdb()
    go.enqueue(spec)
    dequeued = store.dequeue(["default"])
    assert dequeued is not None
    assert snapshot(r, time.time()) == running_by_go
    store.requeue(dequeued.message)
    assert snapshot(r, time.time()) == by_go
    assert go("task", "default", "long")["state"] == "pending"
