"""The Inspector over asynq's keys (``key_format="asynq"``) on keys seeded by hand: the edge cases a Go deployment
does not produce on demand (an undecodable message, a listed task without a hash, an empty queue, a paused one),
what asynq's format cannot hold, and that no taskq key is read or written on the way.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from taskq.queues import handles
from taskq.queues.conf import get_inspector
from taskq.queues.engine.asynq.keys import ALL_QUEUES, AsynqQueueKeys
from taskq.queues.engine.asynq.wire import WireTask
from taskq.queues.engine.clock import FakeClock
from taskq.queues.engine.errors import (
    FormatUnsupportedError,
    QueueNotFoundError,
    ServerNotFoundError,
    TaskNotFoundError,
    ValidationError,
)
from taskq.queues.engine.inspector import Inspector

NOW = 1_900_000_000.0


@pytest.fixture
def asynq(r: redis.Redis, redis_url: str) -> Iterator[Inspector]:
    with Inspector(redis_url, clock=FakeClock(NOW), key_format="asynq") as inspector:
        yield inspector


def add_pending(r: redis.Redis, queue: str, task_id: str, msg: bytes | None, since_ns: int = 0) -> None:
    q = AsynqQueueKeys(queue)
    r.sadd(ALL_QUEUES, queue)
    r.lpush(q.pending, task_id)
    if msg is not None:
        r.hset(q.task(task_id), mapping={"msg": msg, "state": "pending", "pending_since": since_ns})


def message(task_id: str, queue: str, task_type: str = "t") -> bytes:
    return WireTask(type=task_type, payload=b"p", id=task_id, queue=queue, retry=25, timeout=1800).encode()


def test_an_undecodable_message_is_listed_and_shown_not_fatal(r: redis.Redis, asynq: Inspector) -> None:
    add_pending(r, "q", "good", message("good", "q"))
    add_pending(r, "q", "bad", b"\x0a\xff\xff\xff")  # a field longer than the message
    listed = {t.id: t.type for t in asynq.list_tasks("q", "pending")}
    assert listed == {"good": "t", "bad": "(undecodable asynq message)"}
    assert asynq.get_task("q", "bad").state == "pending"
    assert asynq.search_tasks("q", "pending", task_type="t").match_ids == ["good"]


def test_a_listed_task_without_its_hash_is_left_out(r: redis.Redis, asynq: Inspector) -> None:
    add_pending(r, "q", "kept", message("kept", "q"))
    add_pending(r, "q", "gone", None)
    assert [t.id for t in asynq.list_tasks("q", "pending")] == ["kept"]
    with pytest.raises(TaskNotFoundError):
        asynq.get_task("q", "gone")
    assert asynq.queue_info("q").pending == 2  # the list's length, as asynq counts it


def test_an_empty_queue_reads_as_empty(r: redis.Redis, asynq: Inspector) -> None:
    r.sadd(ALL_QUEUES, "empty")
    info = asynq.queue_info("empty")
    assert (info.size, info.completed, info.memory_bytes, info.latency, info.paused) == (0, 0, 0, 0.0, False)
    for state in ("pending", "active", "scheduled", "retry", "archived", "completed", "aggregating", "waiting"):
        assert asynq.list_tasks("empty", state) == []
    assert asynq.groups("empty") == []
    assert asynq.error_groups("empty") == []
    assert [(d.processed, d.failed) for d in asynq.history("empty", 3)] == [(0, 0)] * 3
    assert asynq.outstanding("empty") == 0


def test_a_paused_queue_and_its_latency(r: redis.Redis, asynq: Inspector) -> None:
    add_pending(r, "held", "old", message("old", "held"), since_ns=int((NOW - 90) * 1e9))
    add_pending(r, "held", "new", message("new", "held"), since_ns=int((NOW - 5) * 1e9))
    r.set(AsynqQueueKeys("held").paused, "1700000000")
    info = asynq.queue_info("held")
    assert info.paused and info.pending == 2
    assert info.latency == pytest.approx(90.0)  # the oldest pending task's wait (the list's tail)
    assert [t.id for t in asynq.list_tasks("held", "pending")] == ["old", "new"]  # next to run first


def test_counters_and_history_read_asynq_days(r: redis.Redis, asynq: Inspector) -> None:
    r.sadd(ALL_QUEUES, "q")
    q = AsynqQueueKeys("q")
    r.set(q.processed_on("2030-03-17"), 9)
    r.set(q.failed_on("2030-03-17"), 2)
    r.set(q.processed_on("2030-03-16"), 4)
    r.set(q.processed_total, 100)
    info = asynq.queue_info("q")  # NOW is 2030-03-17 UTC
    assert (info.processed_today, info.failed_today, info.processed_total) == (9, 2, 100)
    assert [(d.date, d.processed, d.failed) for d in asynq.history("q", 2)] == [
        ("2030-03-17", 9, 2),
        ("2030-03-16", 4, 0),
    ]


def test_unknown_queues_and_bad_names_are_refused(r: redis.Redis, asynq: Inspector) -> None:
    with pytest.raises(QueueNotFoundError):
        asynq.queue_info("nope")
    with pytest.raises(QueueNotFoundError):
        asynq.list_tasks("nope", "pending")
    with pytest.raises(QueueNotFoundError):
        asynq.history("nope")
    with pytest.raises(ValidationError):
        asynq.get_task("a{b}", "x")
    with pytest.raises(ValidationError):
        Inspector(key_format="celery")


def test_what_asynq_cannot_hold_is_refused_or_none(r: redis.Redis, asynq: Inspector) -> None:
    add_pending(r, "q", "t1", message("t1", "q"))
    before = {key: r.dump(key) for key in r.keys("*")}
    for read in (
        lambda: asynq.series("q", "hour"),
        asynq.export_status,
        lambda: asynq.workflow("q", "w1"),
        lambda: asynq.control_server("s1", "quiet"),
    ):
        with pytest.raises(FormatUnsupportedError) as refused:
            read()
        assert refused.value.code == "unsupported_by_format"
    assert asynq.task_events("q", "t1") == []
    assert asynq.task_record("q", "t1") is None
    assert asynq.workflows("q") == []
    assert asynq.ended_servers() == []
    assert asynq.type_counts("q") == {}
    with pytest.raises(ServerNotFoundError):
        asynq.ended_server("s1")
    assert {key: r.dump(key) for key in r.keys("*")} == before


class Monitor:
    """Every command Redis runs on the test's database while it is open (MONITOR), as text."""

    MARK = "monitor-end-mark"

    def __init__(self, redis_url: str, database: int) -> None:
        self.client = redis.Redis.from_url(redis_url)
        self.database = database
        self.commands: list[str] = []
        self._monitor = self.client.monitor()
        self._monitor.connection.send_command("MONITOR")
        self._monitor.connection.read_response()
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        for event in self._monitor.listen():
            if self.MARK in event["command"]:
                return
            if event["db"] == self.database:
                self.commands.append(event["command"])

    def stop(self) -> list[str]:
        self.client.echo(self.MARK)
        self._thread.join(timeout=30)
        self.client.close()
        return self.commands


def test_no_taskq_key_is_read_or_written(r: redis.Redis, redis_url: str, asynq: Inspector) -> None:
    add_pending(r, "q", "t1", message("t1", "q"))
    r.zadd(AsynqQueueKeys("q").retry, {"t2": NOW + 60})
    r.hset(AsynqQueueKeys("q").task("t2"), mapping={"msg": message("t2", "q"), "state": "retry"})
    r.zadd(AsynqQueueKeys("q").group("g"), {"t3": NOW})
    r.sadd(AsynqQueueKeys("q").groups, "g")
    database = r.connection_pool.connection_kwargs.get("db", 0)
    monitor = Monitor(redis_url, database)
    try:
        asynq.queue_infos(asynq.queues())
        asynq.fleet_summary(["q"])
        asynq.history("q")
        for state in ("pending", "retry", "aggregating", "active"):
            asynq.list_tasks("q", state)
        asynq.get_task("q", "t1")
        asynq.search_tasks("q", "pending", text="p")
        asynq.search("queue:q")
        asynq.payload_sample("queue:q")
        asynq.error_groups("q")
        asynq.groups("q")
        asynq.servers()
        asynq.outstanding("q")
        asynq.existing_tasks([("q", "t1")])
    finally:
        commands = monitor.stop()
    assert commands, "MONITOR saw the reads"
    taskq_prefix = asynq.broker.keys.prefix
    assert [c for c in commands if f'"{taskq_prefix}:' in c or f'"{{{taskq_prefix}' in c] == []
    assert not [c for c in commands if c.split(" ", 1)[0].strip('"').upper() in ("SET", "DEL", "HSET", "FUNCTION")]


def test_the_process_inspector_follows_tasks_key_format(settings: Any, r: redis.Redis, redis_url: str) -> None:
    settings.REDIS_URL = redis_url
    handles.reset()
    try:
        assert get_inspector().key_format == "taskq"
        settings.TASKS_KEY_FORMAT = "asynq"
        inspector = get_inspector()
        assert inspector.key_format == "asynq"
        add_pending(r, "from-go", "t1", message("t1", "from-go"))
        assert inspector.queues() == ["from-go"]
    finally:
        handles.reset()


def test_an_active_task_whose_lease_expired_is_orphaned(r: redis.Redis, asynq: Inspector) -> None:
    q = AsynqQueueKeys("q")
    r.sadd(ALL_QUEUES, "q")
    for task_id, lease in (("live", NOW + 20), ("lost", NOW - 40)):
        r.lpush(q.active, task_id)
        r.zadd(q.lease, {task_id: lease})
        r.hset(q.task(task_id), mapping={"msg": message(task_id, "q"), "state": "active"})
    listed = {
        t.id: (t.orphaned, t.lease_expires_at.timestamp() if t.lease_expires_at else None)
        for t in asynq.list_tasks("q", "active")
    }
    assert listed == {"live": (False, NOW + 20), "lost": (True, NOW - 40)}
    assert asynq.get_task("q", "lost").orphaned


def test_archived_tasks_page_by_mark_newest_first(r: redis.Redis, asynq: Inspector) -> None:
    q = AsynqQueueKeys("q")
    r.sadd(ALL_QUEUES, "q")
    for n in range(5):
        task_id = f"a{n}"
        r.zadd(q.archived, {task_id: NOW - 100 + n})
        r.hset(q.task(task_id), mapping={"msg": message(task_id, "q"), "state": "archived"})
    first, mark = asynq.list_tasks_after("q", "archived", 2)
    second, mark = asynq.list_tasks_after("q", "archived", 2, mark)
    last, end = asynq.list_tasks_after("q", "archived", 2, mark)
    assert [t.id for t in first + second + last] == ["a4", "a3", "a2", "a1", "a0"]
    assert end is None
