"""The whole test database as a value (``snapshot``), kept and put back (``saved``, ``restore``), and asynq tasks
seeded straight into asynq's keys (``seed_task``), for the tests of the operator actions."""

from __future__ import annotations

from typing import Any

import redis

from taskq.queues.engine.asynq.keys import ALL_QUEUES, AsynqQueueKeys
from taskq.queues.engine.asynq.wire import WireTask


def snapshot(r: redis.Redis) -> dict[bytes, Any]:
    """Every key of the database with its type's whole value (a sorted set with its scores, in order)."""
    out: dict[bytes, Any] = {}
    for key in sorted(r.keys("*")):
        kind = r.type(key)
        if kind == b"string":
            out[key] = r.get(key)
        elif kind == b"hash":
            out[key] = r.hgetall(key)
        elif kind == b"list":
            out[key] = r.lrange(key, 0, -1)
        elif kind == b"set":
            out[key] = r.smembers(key)
        elif kind == b"zset":
            out[key] = r.zrange(key, 0, -1, withscores=True)
        else:
            raise AssertionError(f"unexpected {kind!r} at {key!r}")
    return out


def saved(r: redis.Redis) -> dict[bytes, tuple[bytes, int]]:
    """Every key, DUMPed with its time to live, for ``restore``."""
    return {key: (r.dump(key), r.pttl(key)) for key in r.keys("*")}  # type: ignore[misc]


def restore(r: redis.Redis, keys: dict[bytes, tuple[bytes, int]]) -> None:
    """The database as ``saved`` left it, and nothing else."""
    r.flushdb()
    for key, (value, ttl) in keys.items():
        r.restore(key, max(ttl, 0), value)


def seed_task(
    r: redis.Redis,
    queue: str,
    task_id: str,
    state: str,
    *,
    score: float = 1_700_000_000,
    group: str = "",
    unique: str = "",
    payload: bytes = b"p",
) -> bytes:
    """A task in ``state`` as asynq writes one: its hash, its place in the state's list or sorted set (or its
    group's), the queue in asynq:queues, and with ``unique`` the lock it holds. Returns its message."""
    keys = AsynqQueueKeys(queue)
    message = WireTask(
        type="t", payload=payload, id=task_id, queue=queue, retry=25, unique_key=unique, group_key=group
    ).encode()
    fields: dict[str, Any] = {"msg": message, "state": state}
    if state == "pending":
        fields["pending_since"] = int(score * 1e9)
        r.lpush(keys.pending, task_id)
    elif state == "active":
        r.lpush(keys.active, task_id)
        r.zadd(keys.lease, {task_id: score + 30})
    elif state == "aggregating":
        fields["group"] = group
        r.zadd(keys.group(group), {task_id: score})
        r.sadd(keys.groups, group)
    else:
        r.zadd(keys.state(state), {task_id: score})
    if unique:
        fields["unique_key"] = unique
        r.set(unique, task_id, ex=3600)
    r.hset(keys.task(task_id), mapping=fields)
    r.sadd(ALL_QUEUES, queue)
    return message
