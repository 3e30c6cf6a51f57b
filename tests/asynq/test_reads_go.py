"""Go asynq writes every option in every state; taskq's Inspector (``key_format="asynq"``) and CLI read each field
exactly as Go's Inspector does, the raw payload bytes included.

One module-scoped deployment: a Go client enqueues into an unserved queue (pending, scheduled, aggregating) and into
a queue a Go server runs (retry and archived through "fail" and "skip" with a retry delay of an hour, completed
through "result" with a retention, active through "sleep"), and pauses a third. The tests only read it.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from taskq.metrics.collector import QueueCollector
from taskq.queues import handles
from taskq.queues.engine.inspector import Inspector
from taskq.queues.engine.message import TaskInfo
from tests.cli.helpers import invoke

from . import go_asynq
from .conftest import Go

IDLE = "reads-idle"  # no server: pending, scheduled, aggregating
WORK = "reads-work"  # a Go server: retry, archived, completed, active
PAUSED = "reads-paused"
BINARY = b"\xff\x00\xfe not utf-8 \x80"
DEADLINE = 4102444800  # 2100-01-01


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


ENQUEUED: list[dict[str, Any]] = [
    {
        "type": "email:send",
        "payload": b64(BINARY),
        "headers": {"tenant": "acme", "trace": "t-1"},
        "queue": IDLE,
        "max_retry": 7,
        "timeout_seconds": 90,
        "deadline_unix": DEADLINE,
        "unique_seconds": 3600,
        "task_id": "p-all-options",
        "retention_seconds": 600,
    },
    {"type": "plain", "payload": b64(b'{"n":1}'), "queue": IDLE, "task_id": "p-plain"},
    {"type": "empty", "nil_payload": True, "queue": IDLE, "task_id": "p-nil"},
    {"type": "later", "payload": b64(b"x"), "queue": IDLE, "process_in_seconds": 7200, "task_id": "s-in"},
    {"type": "at", "payload": b64(BINARY), "queue": IDLE, "process_at_unix": DEADLINE, "task_id": "s-at"},
    {"type": "batch", "payload": b64(b"a1"), "queue": IDLE, "group": "g-one", "task_id": "a-1"},
    {"type": "batch", "payload": b64(b"a2"), "queue": IDLE, "group": "g-one", "task_id": "a-2"},
    {"type": "batch", "payload": b64(b"b1"), "queue": IDLE, "group": "g-two", "task_id": "a-3"},
    {"type": "fail", "payload": b64(BINARY), "queue": WORK, "max_retry": 3, "task_id": "w-retry"},
    {"type": "skip", "payload": b64(b"s"), "queue": WORK, "task_id": "w-skip"},
    {"type": "fail", "payload": b64(b"f"), "queue": WORK, "max_retry": 0, "task_id": "w-spent"},
    {
        "type": "result",
        "payload": b64(b"the result \xff"),
        "queue": WORK,
        "retention_seconds": 3600,
        "task_id": "w-done",
    },
    {"type": "sleep", "payload": b64(b"600000"), "queue": WORK, "timeout_seconds": 900, "task_id": "w-active"},
    {"type": "held", "payload": b64(b"h"), "queue": PAUSED, "task_id": "h-1"},
]
IDS = [(spec["queue"], spec["task_id"]) for spec in ENQUEUED]


class Deployment:
    def __init__(self, go: Go, client: redis.Redis, redis_url: str) -> None:
        self.go, self.client, self.redis_url = go, client, redis_url
        self.inspector = Inspector(redis_url, key_format="asynq")


def _settled(client: redis.Redis, go: Go) -> bool:
    sizes = {state: client.zcard(f"asynq:{{{WORK}}}:{state}") for state in ("retry", "archived", "completed")}
    if sizes != {"retry": 1, "archived": 2, "completed": 1} or client.llen(f"asynq:{{{WORK}}}:active") != 1:
        return False
    servers = go("servers")
    return bool(servers) and any(w["task_id"] == "w-active" for s in servers for w in s["active_workers"])


@pytest.fixture(scope="module")
def deployment(go_binary: str, redis_url: str) -> Iterator[Deployment]:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    go = Go(redis_url)
    try:
        for spec in ENQUEUED:
            go.enqueue(spec)
        go("act", "pause", PAUSED)
        with go.serving("-queues", f"{WORK}=1", "-name", "g-reads", "-retry-delay", "3600", "-concurrency", "2"):
            go_asynq.wait_until(lambda: _settled(client, go), timeout=60)
            found = Deployment(go, client, redis_url)
            yield found
            found.inspector.close()
    finally:
        client.flushdb()
        client.close()


def as_go(task: TaskInfo) -> dict[str, Any]:
    """A TaskInfo in the shape of goasynq's taskJSON (times in Unix seconds, 0 unset; bytes as base64)."""

    def unix(when: Any) -> int:
        return int(when.timestamp()) if when is not None else 0

    return {
        "id": task.id,
        "queue": task.queue,
        "type": task.type,
        "payload": b64(task.payload) if task.payload else None,
        "headers": task.headers or None,
        "state": task.state,
        "max_retry": task.max_retry,
        "retried": task.retried,
        "last_err": task.last_error or "",
        "last_failed_at": unix(task.last_failed_at),
        "timeout_seconds": task.timeout or 0,
        "deadline": unix(task.deadline),
        "group": task.group or "",
        "retention_seconds": task.retention,
        "completed_at": unix(task.completed_at),
        "result": b64(task.result) if task.result else None,
    }


def comparable(go_task: dict[str, Any]) -> dict[str, Any]:
    """Go's task without what depends on when it was read (a pending task's next process time is "now") and
    without the orphan flag (GetTaskInfo never sets it)."""
    return {k: v for k, v in go_task.items() if k not in ("next_process_at", "is_orphaned")}


@pytest.mark.parametrize(("queue", "task_id"), IDS)
def test_every_field_of_every_task_is_what_go_reads(deployment: Deployment, queue: str, task_id: str) -> None:
    ours = deployment.inspector.get_task(queue, task_id)
    theirs = deployment.go("task", queue, task_id)
    assert as_go(ours) == comparable(theirs)
    if theirs["state"] in ("scheduled", "retry"):
        assert ours.next_process_at is not None
        assert int(ours.next_process_at.timestamp()) == theirs["next_process_at"]


def test_raw_payload_bytes_are_kept(deployment: Deployment) -> None:
    assert deployment.inspector.get_task(IDLE, "p-all-options").payload == BINARY
    assert deployment.inspector.get_task(WORK, "w-retry").payload == BINARY
    assert deployment.inspector.get_task(IDLE, "p-nil").payload == b""
    assert deployment.inspector.get_task(WORK, "w-done").result == b"the result \xff"


STATE_LISTS = [
    (IDLE, "pending", None),
    (IDLE, "scheduled", None),
    (WORK, "retry", None),
    (WORK, "archived", None),
    (WORK, "completed", None),
    (WORK, "active", None),
    (IDLE, "aggregating", "g-one"),
    (IDLE, "aggregating", "g-two"),
    (PAUSED, "pending", None),
]


@pytest.mark.parametrize(("queue", "state", "group"), STATE_LISTS)
def test_each_state_lists_what_go_lists(deployment: Deployment, queue: str, state: str, group: str | None) -> None:
    ours = deployment.inspector.list_tasks(queue, state, size=1000, group=group)
    theirs = deployment.go("ls", queue, state, *([group] if group else []))
    assert theirs, "the deployment put tasks in this state"
    assert sorted((as_go(t) for t in ours), key=lambda t: t["id"]) == sorted(
        (comparable(t) for t in theirs), key=lambda t: t["id"]
    )
    assert [t.orphaned for t in ours] == [t["is_orphaned"] for t in sorted(theirs, key=lambda t: t["id"])]


def test_the_active_task_has_its_lease(deployment: Deployment) -> None:
    (active,) = deployment.inspector.list_tasks(WORK, "active")
    lease = deployment.client.zscore(f"asynq:{{{WORK}}}:lease", "w-active")
    assert active.lease_expires_at is not None and active.lease_expires_at.timestamp() == lease
    assert not active.orphaned


def test_queue_stats_are_what_go_reports(deployment: Deployment) -> None:
    before = time.time()
    theirs = {q["queue"]: q for q in deployment.go("stats")}
    ours = {info.queue: info for info in deployment.inspector.queue_infos(deployment.inspector.queues())}
    after = time.time()
    assert sorted(ours) == sorted(theirs) == sorted([IDLE, WORK, PAUSED])
    for name, go_info in theirs.items():
        info = ours[name]
        for field in ("pending", "active", "scheduled", "retry", "archived", "completed", "aggregating"):
            assert getattr(info, field) == go_info[field], (name, field)
        assert (info.processed_today, info.failed_today) == (go_info["processed"], go_info["failed"])
        assert (info.processed_total, info.failed_total) == (go_info["processed_total"], go_info["failed_total"])
        assert info.paused == go_info["paused"]
        assert info.memory_bytes == go_info["memory_usage"]
        # asynq's size counts completed tasks; taskq's QueueInfo.size does not.
        assert info.size + info.completed == go_info["size"]
        # Read after Go's: older by at most the time between the two reads.
        assert go_info["latency_seconds"] <= info.latency + 1e-3
        assert info.latency <= go_info["latency_seconds"] + (after - before) + 1e-3
    # asynq counts every attempt that ended as processed, failures included: four ran, three failed.
    assert (ours[WORK].processed_today, ours[WORK].failed_today) == (4, 3)


def test_history_is_what_go_reports(deployment: Deployment) -> None:
    for queue in (IDLE, WORK):
        theirs = deployment.go("history", queue, "7")
        ours = deployment.inspector.history(queue, 7)
        assert [(d.date, d.processed, d.failed) for d in ours] == [
            (d["date"], d["processed"], d["failed"]) for d in theirs
        ]


def test_groups_are_what_go_lists(deployment: Deployment) -> None:
    theirs = sorted((g["group"], g["size"]) for g in deployment.go("groups", IDLE))
    ours = deployment.inspector.groups(IDLE)
    assert [(g.name, g.size) for g in ours] == theirs == [("g-one", 2), ("g-two", 1)]
    assert all(g.oldest is not None for g in ours)


def test_servers_and_their_workers_are_what_go_lists(deployment: Deployment) -> None:
    (theirs,) = deployment.go("servers")
    (ours,) = deployment.inspector.servers()
    assert (ours.id, ours.host, ours.pid, ours.concurrency, ours.queues, ours.strict, ours.status) == (
        theirs["id"],
        theirs["host"],
        theirs["pid"],
        theirs["concurrency"],
        theirs["queues"],
        theirs["strict_priority"],
        theirs["status"],
    )
    assert ours.started_at is not None and int(ours.started_at.timestamp()) == theirs["started"]
    assert [(w["id"], w["type"], w["queue"], w["started"] // 1000, w["deadline"] // 1000) for w in ours.active] == [
        (w["task_id"], w["task_type"], w["queue"], w["started"], w["deadline"]) for w in theirs["active_workers"]
    ]
    assert deployment.inspector.fleet_summary(deployment.inspector.queues()).servers_up == 1


def test_outstanding_counts_pending_leased_and_due(deployment: Deployment) -> None:
    assert deployment.inspector.outstanding(IDLE) == 3  # three pending; the scheduled ones are not due
    assert deployment.inspector.outstanding(WORK) == 1  # the leased one; the retry is an hour away


def test_error_groups_group_last_errors_by_type(deployment: Deployment) -> None:
    groups = deployment.inspector.error_groups(WORK)
    by_type = {(g.task_type, g.message): g.count for g in groups}
    assert by_type == {("fail", "go handler failed"): 2, ("skip", "go handler gave up: skip retry for the task"): 1}
    for group in groups:
        failed = deployment.inspector.list_tasks(WORK, "retry") + deployment.inspector.list_tasks(WORK, "archived")
        found = deployment.inspector.search(group.search)
        assert {t.id for t in found.matches} == {t.id for t in failed if t.type == group.task_type}


def test_search_filters_by_type_and_payload_bytes(deployment: Deployment) -> None:
    found = deployment.inspector.search_tasks(IDLE, "pending", task_type="email")
    assert [t.id for t in found.tasks] == ["p-all-options"]
    found = deployment.inspector.search_tasks(WORK, "retry", text="handler failed")
    assert [t.id for t in found.tasks] == ["w-retry"]
    # Aggregating tasks are not searched by ``search`` (as on taskq's keys), but by ``search_tasks`` of that state.
    assert deployment.inspector.search("type:batch").matches == []
    found = deployment.inspector.search_tasks(IDLE, "aggregating", text="a")
    assert sorted(t.id for t in found.tasks) == ["a-1", "a-2"]
    assert {t.id for t in deployment.inspector.search("type:later").matches} == {"s-in"}


def test_existing_tasks(deployment: Deployment) -> None:
    refs = [(IDLE, "p-plain"), (WORK, "w-done"), (IDLE, "gone"), ("no-such-queue", "x")]
    assert deployment.inspector.existing_tasks(refs) == {(IDLE, "p-plain"), (WORK, "w-done")}


@pytest.fixture
def asynq_cli(settings: Any, deployment: Deployment) -> Iterator[Any]:
    settings.REDIS_URL = deployment.redis_url
    settings.TASKS_KEY_FORMAT = "asynq"
    handles.reset()
    yield invoke
    handles.reset()


def test_cli_task_inspect_shows_go_fields(asynq_cli: Any, deployment: Deployment) -> None:
    doc = asynq_cli("task", "inspect", "p-all-options", "--queue", IDLE, "--json").json()
    theirs = deployment.go("task", IDLE, "p-all-options")
    assert (doc["id"], doc["type"], doc["queue"], doc["state"]) == (
        theirs["id"],
        theirs["type"],
        theirs["queue"],
        theirs["state"],
    )
    assert (doc["max_retry"], doc["timeout"], doc["headers"]) == (
        theirs["max_retry"],
        theirs["timeout_seconds"],
        theirs["headers"],
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("stats",),
        ("queue", "ls"),
        ("queue", "inspect", WORK),
        ("queue", "history", WORK),
        ("task", "ls", "--queue", IDLE, "--state", "pending"),
        ("task", "ls", "--queue", WORK, "--state", "active"),
        ("task", "ls", "--queue", IDLE, "--state", "aggregating"),
        ("server", "ls"),
        ("group", "ls", "--queue", IDLE),
    ],
)
def test_cli_read_commands_work_in_asynq_mode(asynq_cli: Any, argv: tuple[str, ...]) -> None:
    assert asynq_cli(*argv, "--json").json() is not None


def test_metrics_collector_reads_asynq_queues(deployment: Deployment) -> None:
    theirs = {q["queue"]: q for q in deployment.go("stats")}
    families = {f.name: f for f in QueueCollector(lambda: deployment.inspector).collect()}
    tasks = {(s.labels["queue"], s.labels["state"]): s.value for s in families["taskq_tasks"].samples}
    for queue, go_info in theirs.items():
        for state in ("pending", "active", "scheduled", "retry", "archived", "completed", "aggregating"):
            assert tasks[(queue, state)] == go_info[state]
    processed = {s.labels["queue"]: s.value for s in families["taskq_tasks_processed"].samples}
    assert processed == {queue: go_info["processed_total"] for queue, go_info in theirs.items()}
    assert families["taskq_servers"].samples[0].value == 1
    assert families["taskq_active_workers"].samples[0].value == 1
    readers = {s.labels["queue"]: s.value for s in families["taskq_queue_servers"].samples}
    assert readers[WORK] == 1 and readers[IDLE] == 0


def test_cli_says_what_asynq_cannot_hold(asynq_cli: Any) -> None:
    refused = asynq_cli("export", "status")
    assert refused.code == 1 and "not available in asynq's key format: event stream" in refused.err
    assert asynq_cli("workflow", "ls", "--queue", IDLE, "--json").json()["workflows"] == []
