"""``AsynqClient`` against real Go asynq v0.26.0: for every option, alone and together, Python writes the keys Go's
client writes (the message byte for byte), Go's Inspector reads each option back as set, and a Go server runs the
tasks Python made."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from taskq.queues.engine import DuplicateTaskError, TaskIdConflictError
from taskq.queues.engine.asynq import AsynqClient
from taskq.queues.engine.asynq.keys import AsynqQueueKeys
from taskq.queues.engine.asynq.wire import WireTask

from . import go_asynq

HOUR = 3600
#: Absolute times, whole seconds, so both sides write the same: a process time and a deadline in the future.
LATER = int(time.time()) + 6 * HOUR
DEADLINE = int(time.time()) + 48 * HOUR
PAYLOAD = b'{"to":"ada@example.com"}'
EVERYTHING = {
    "queue": "critical",
    "max_retry": 3,
    "timeout": 90,
    "deadline": DEADLINE,
    "unique_ttl": 600,
    "retention": 2 * HOUR,
    "headers": {"trace": "t-1", "tenant": "acme"},
}

#: (name, type, payload, AsynqClient.enqueue's options); each case gets the task id ``id-<name>``.
CASES: list[tuple[str, str, bytes | None, dict[str, Any]]] = [
    ("plain", "email:send", PAYLOAD, {}),
    ("empty payload", "ping", b"", {}),
    ("queue", "email:send", PAYLOAD, {"queue": "mail"}),
    ("max retry", "email:send", PAYLOAD, {"max_retry": 7}),
    ("no retry", "email:send", PAYLOAD, {"max_retry": 0}),
    ("timeout", "email:send", PAYLOAD, {"timeout": 90}),
    ("deadline", "email:send", PAYLOAD, {"deadline": DEADLINE}),
    ("timeout and deadline", "email:send", PAYLOAD, {"timeout": 90, "deadline": DEADLINE}),
    ("unique", "email:send", PAYLOAD, {"unique_ttl": 600}),
    ("unique, nil payload", "ping", None, {"unique_ttl": 600}),
    ("process at", "email:send", PAYLOAD, {"process_at": LATER}),
    ("retention", "email:send", PAYLOAD, {"retention": 2 * HOUR}),
    ("headers", "email:send", PAYLOAD, {"headers": {"trace": "t-1", "tenant": "acme", "z": ""}}),
    ("group", "digest:add", PAYLOAD, {"group": "user:42"}),
    ("unique, scheduled", "email:send", PAYLOAD, {"unique_ttl": 600, "process_at": LATER}),
    ("unique, group", "digest:add", PAYLOAD, {"unique_ttl": 600, "group": "user:42"}),
    ("group, scheduled", "digest:add", PAYLOAD, {"group": "user:42", "process_at": LATER}),
    ("everything, pending", "email:send", PAYLOAD, EVERYTHING),
    ("everything, scheduled", "email:send", PAYLOAD, {**EVERYTHING, "process_at": LATER}),
    ("everything, grouped", "digest:add", PAYLOAD, {**EVERYTHING, "group": "user:42"}),
    ("everything, grouped and scheduled", "digest:add", PAYLOAD, {**EVERYTHING, "group": "g", "process_at": LATER}),
]

GO_SPEC_NAMES = {
    "queue": "queue",
    "max_retry": "max_retry",
    "timeout": "timeout_seconds",
    "deadline": "deadline_unix",
    "unique_ttl": "unique_seconds",
    "process_at": "process_at_unix",
    "retention": "retention_seconds",
    "group": "group",
    "headers": "headers",
}


def go_spec(task_type: str, payload: bytes | None, options: dict[str, Any], task_id: str) -> dict[str, Any]:
    """The same enqueue for goasynq's ``enqueue`` command (its ``EnqueueSpec``)."""
    spec = {"type": task_type, "task_id": task_id, "payload": base64.b64encode(payload or b"").decode()}
    spec["nil_payload"] = payload is None
    spec.update({GO_SPEC_NAMES[name]: value for name, value in options.items()})
    return spec


def snapshot(r: redis.Redis) -> dict[bytes, tuple[str, Any, tuple[int, float]]]:
    """Every key of the database: (type, value, (TTL in seconds or -1, when it was read))."""
    out = {}
    for key in r.keys():
        kind = r.type(key).decode()
        value: Any
        if kind == "string":
            value = r.get(key)
        elif kind == "hash":
            value = r.hgetall(key)
        elif kind == "list":
            value = r.lrange(key, 0, -1)
        elif kind == "set":
            value = r.smembers(key)
        elif kind == "zset":
            value = dict(r.zrange(key, 0, -1, withscores=True))
        else:
            raise AssertionError(f"{key!r}: unexpected type {kind}")
        out[key] = (kind, value, (r.ttl(key), time.time()))
    return out


def assert_same_keys(python: dict[bytes, Any], go: dict[bytes, Any]) -> None:
    """Python's keys are Go's: the same names, types, values and TTLs (within a second: counted from each side's
    enqueue, or for a lock that lasts past a process time, ending at the same instant); the times each side took
    from its own clock (``pending_since``, a group member's score) within a few seconds; ``msg`` byte for byte,
    or, with headers (a map Go writes in no fixed order), decoded."""
    assert sorted(python) == sorted(go)
    for key, (kind, value, (ttl, read)) in python.items():
        go_kind, go_value, (go_ttl, go_read) = go[key]
        assert kind == go_kind, key
        if ttl < 0 or go_ttl < 0:
            assert ttl == go_ttl, key
        else:
            assert abs(ttl - go_ttl) <= 1 or abs((read + ttl) - (go_read + go_ttl)) <= 2, (key, ttl, go_ttl)
        if kind == "hash":
            assert value.keys() == go_value.keys(), key
            for name, field in value.items():
                if name == b"pending_since":
                    assert abs(int(field) - int(go_value[name])) < 5e9, key
                elif name == b"msg" and WireTask.decode(field).headers:
                    assert WireTask.decode(field) == WireTask.decode(go_value[name]), key
                else:
                    assert field == go_value[name], (key, name)
        elif kind == "zset" and b":g:" in key:  # a group's members are scored by when they came
            assert value.keys() == go_value.keys() and all(abs(value[m] - go_value[m]) <= 5 for m in value), key
        else:
            assert value == go_value, key


def assert_read_back_as_set(
    back: dict[str, Any], task_type: str, payload: bytes | None, options: dict[str, Any]
) -> None:
    """Go's Inspector shows each option as given (asynq's defaults where none was)."""
    assert back["type"] == task_type
    assert base64.b64decode(back["payload"] or "") == (payload or b"")
    assert back["queue"] == options.get("queue", "default")
    assert back["max_retry"] == options.get("max_retry", 25)
    default_timeout = 0 if "deadline" in options else 1800
    assert back["timeout_seconds"] == options.get("timeout", default_timeout)
    assert back["deadline"] == options.get("deadline", 0)
    assert back["retention_seconds"] == options.get("retention", 0)
    assert back["group"] == options.get("group", "")
    assert (back["headers"] or {}) == options.get("headers", {})
    if "process_at" in options:
        assert (back["state"], back["next_process_at"]) == ("scheduled", options["process_at"])
    elif "group" in options:
        assert (back["state"], back["next_process_at"]) == ("aggregating", 0)
    else:
        assert back["state"] == "pending" and abs(back["next_process_at"] - time.time()) < 60


@pytest.fixture
def client(redis_url: str, r: redis.Redis) -> Iterator[AsynqClient]:
    with AsynqClient(redis_url) as c:
        yield c


@pytest.mark.parametrize(("name", "task_type", "payload", "options"), CASES, ids=[case[0] for case in CASES])
def test_python_writes_what_go_writes_and_go_reads_it_back(
    go, r: redis.Redis, redis_url: str, name: str, task_type: str, payload: bytes | None, options: dict[str, Any]
) -> None:
    task_id = "id-" + name.replace(" ", "-").replace(",", "")
    queue = options.get("queue", "default")
    go_info = go.enqueue(go_spec(task_type, payload, options, task_id))
    go_keys = snapshot(r)
    go_back = go("task", queue, task_id)
    r.flushdb()

    with AsynqClient(redis_url) as client:  # a new client, which lists its queue as Go's new client does
        info = client.enqueue(task_type, payload, task_id=task_id, **options)
    python_keys = snapshot(r)
    assert_same_keys(python_keys, go_keys)
    message = WireTask.decode(r.hget(AsynqQueueKeys(queue).task(task_id), "msg"))
    if not message.headers:
        assert message.encode() == go_keys[AsynqQueueKeys(queue).task(task_id).encode()][1][b"msg"]

    back = go("task", queue, task_id)
    assert_read_back_as_set(back, task_type, payload, options)
    if back["state"] == "pending":  # each side's own now
        assert abs(back.pop("next_process_at") - go_back.pop("next_process_at")) < 5
    assert back == go_back
    # What enqueue returns is what Go's client returns, field for field.
    assert (info.id, info.type, info.queue, info.state) == (go_info["id"], go_info["type"], queue, go_info["state"])
    assert (info.max_retry, info.timeout or 0, info.retention) == (
        go_info["max_retry"],
        go_info["timeout_seconds"],
        go_info["retention_seconds"],
    )
    assert (info.group or "", info.headers, info.payload) == (
        go_info["group"],
        go_info["headers"] or {},
        base64.b64decode(go_info["payload"] or ""),
    )
    assert (int(info.deadline.timestamp()) if info.deadline else 0) == go_info["deadline"]


def test_the_refusals_are_gos(go, client: AsynqClient, r: redis.Redis) -> None:
    """Go's client refuses what ours refuses: a duplicate of a unique task, a taken id."""
    go.enqueue(go_spec("email:send", PAYLOAD, {"unique_ttl": 600}, "first"))
    with pytest.raises(go_asynq.GoAsynqError, match="task already exists"):
        go.enqueue(go_spec("email:send", PAYLOAD, {"unique_ttl": 600}, "second"))
    with pytest.raises(go_asynq.GoAsynqError, match="task ID conflicts"):
        go.enqueue(go_spec("other", PAYLOAD, {}, "first"))
    with pytest.raises(DuplicateTaskError):
        client.enqueue("email:send", PAYLOAD, unique_ttl=600, task_id="third")
    with pytest.raises(TaskIdConflictError):
        client.enqueue("other", PAYLOAD, task_id="first")


def test_a_go_server_runs_what_python_enqueued(go, client: AsynqClient, r: redis.Redis) -> None:
    ran = client.enqueue("email:send", PAYLOAD, queue="mail", task_id="plain")
    unique = client.enqueue("email:send", b"unique", queue="mail", unique_ttl=600, task_id="unique")
    later = client.enqueue("email:send", b"later", queue="mail", process_in=1, task_id="later")
    kept = client.enqueue("result", b"the result", queue="mail", retention=HOUR, task_id="kept")
    failed = client.enqueue("fail", b"", queue="mail", max_retry=0, task_id="failed")
    lock = AsynqQueueKeys("mail").unique("email:send", b"unique")
    assert r.get(lock) == b"unique"
    ids = {ran.id, unique.id, later.id, kept.id, failed.id}
    with go.serving("-queues", "mail=1", "-name", "g1"):
        go_asynq.wait_until(lambda: {run[1] for run in go.runs(r)} >= ids, timeout=60)
        go_asynq.wait_until(lambda: go("task", "mail", "failed")["state"] == "archived", timeout=30)
        go_asynq.wait_until(lambda: go("task", "mail", "kept")["state"] == "completed", timeout=30)
    assert sorted(go.runs(r)) == sorted(("go", task_id, 0, "g1") for task_id in ids)  # each once, first attempt
    done = go("task", "mail", "kept")
    assert base64.b64decode(done["result"]) == b"the result" and done["retention_seconds"] == HOUR
    assert done["completed_at"] > 0
    assert go("task", "mail", "failed")["last_err"] == "go handler failed"
    assert r.get(lock) is None  # Go released the lock its task held: the lock held the task's id
    for task_id in ("plain", "unique", "later"):  # done without retention: gone
        assert not r.exists(AsynqQueueKeys("mail").task(task_id))


def test_asynqs_cli_lists_what_python_enqueued(go, client: AsynqClient) -> None:
    """What ``asynq stats`` and ``asynq task ls`` print (goasynq's Inspector commands) counts and lists them."""
    client.enqueue("email:send", b"1", queue="mail", task_id="p1")
    client.enqueue("email:send", b"2", queue="mail", task_id="p2", unique_ttl=60)
    client.enqueue("email:send", b"3", queue="mail", task_id="s1", process_in=HOUR)
    client.enqueue("digest:add", b"4", queue="mail", task_id="a1", group="user:42")
    client.enqueue("digest:add", b"5", queue="other", task_id="o1")
    stats = {queue["queue"]: queue for queue in go("stats")}
    assert sorted(stats) == ["mail", "other"]
    counts = {state: stats["mail"][state] for state in ("pending", "scheduled", "aggregating", "active", "retry")}
    assert counts == {"pending": 2, "scheduled": 1, "aggregating": 1, "active": 0, "retry": 0}
    assert (stats["mail"]["size"], stats["mail"]["groups"], stats["other"]["pending"]) == (4, 1, 1)
    assert sorted(task["id"] for task in go("ls", "mail", "pending")) == ["p1", "p2"]
    assert [task["id"] for task in go("ls", "mail", "scheduled")] == ["s1"]
    assert [task["id"] for task in go("ls", "mail", "aggregating", "user:42")] == ["a1"]
    assert go("groups", "mail") == [{"group": "user:42", "size": 1}]
