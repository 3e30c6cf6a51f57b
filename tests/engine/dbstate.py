"""Seeding a Redis database with an explicit state, and dumping the whole database back into plain Python.

A state is a dict ``{key: value}``; the value's type says which Redis type the key has:

    str                  string
    list                 list (index 0 is the head, as LRANGE returns it)
    Set(...)             set
    Hash({...})          hash (field -> str)
    ZSet({...})          sorted set (member -> float score)
    Stream([...])        stream: the entries' fields in order; the generated ids are not compared
    Volatile(v, ttl_ms)  any of the above with a TTL; only the presence of a TTL is compared, never its length

``dump`` returns the same shapes, so a test compares ``dump(r) == expected`` over every key of the database.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from queues.engine import EngineError, FakeClock, Keys, Limits
from queues.engine.broker import Broker
from queues.engine.clock import to_ms, utc_day
from queues.engine.transitions import Call, Transitions

NOW = 1_700_000_000.0  # the FakeClock's start
NOW_MS = to_ms(NOW)
DAY = utc_day(NOW)
KEYS = Keys()
Q = KEYS.queue("default")


class _Typed:
    """Equal only to a value of the same marker class, so a hash never passes for a sorted set."""

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and super().__eq__(other)  # type: ignore[misc]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        return f"{type(self).__name__}({super().__repr__()})"

    __hash__ = None  # type: ignore[assignment]


class Hash(_Typed, dict):
    pass


class ZSet(_Typed, dict):
    pass


class Set(_Typed, set):
    pass


class Stream(_Typed, list):
    pass


@dataclass(frozen=True)
class Volatile:
    """A key with a TTL. ``ttl_ms`` is used when seeding and ignored when comparing."""

    value: Any
    ttl_ms: int = field(default=60_000, compare=False)


# -- building states ---------------------------------------------------------------------------------------------


def msg(**options: Any) -> str:
    """The ``msg`` field the client writes: compact JSON of the options, the version and ``created`` first."""
    return json.dumps({"v": 1, "created": NOW_MS, **options}, separators=(",", ":"))


def task(
    state: str,
    type: str = "email",
    *,
    since: int = NOW_MS,
    payload: str = '{"to":"ada"}',  # noqa: A002
    options: str | None = None,
    **extra: Any,
) -> Hash:
    """A task hash as the scripts leave it; ``extra`` adds fields (lease, retried, unique, error, ...)."""
    fields = {
        "type": type,
        "msg": options if options is not None else msg(),
        "payload": payload,
        "state": state,
        "since": str(since),
    }
    fields.update({name: str(value) for name, value in extra.items()})
    return Hash(fields)


def counts(**by_state_and_type: int) -> Hash:
    """The per-type counts hash: ``counts(pending__email=1)`` is ``{"pending:email": "1"}``."""
    return Hash({name.replace("__", ":"): str(value) for name, value in by_state_and_type.items()})


def event(
    id: str,
    from_: str,
    to: str,
    type: str = "email",
    *,
    at: int = NOW_MS,  # noqa: A002
    worker: str = "",
    error: str = "",
) -> dict[str, str]:
    fields = {"id": id, "type": type, "from": from_, "to": to, "at": str(at)}
    if worker:
        fields["worker"] = worker
    if error:
        fields["error"] = error
    return fields


def without(state: dict[str, Any], *keys: str) -> dict[str, Any]:
    """A copy of ``state`` without ``keys``; add what changed with ``|``."""
    return {key: value for key, value in state.items() if key not in keys}


def hash_with(base: Hash, drop: tuple[str, ...] = (), **fields: Any) -> Hash:
    """A copy of a task hash with some fields set (as strings) and some removed."""
    out = Hash({k: v for k, v in base.items() if k not in drop})
    out.update({name: str(value) for name, value in fields.items()})
    return out


# -- seeding and dumping ----------------------------------------------------------------------------------------


def seed(r: redis.Redis, state: dict[str, Any]) -> None:
    """Write ``state`` into the (empty) database."""
    for key, value in state.items():
        ttl = None
        if isinstance(value, Volatile):
            value, ttl = value.value, value.ttl_ms
        if isinstance(value, Hash):
            r.hset(key, mapping=value)
        elif isinstance(value, ZSet):
            r.zadd(key, value)
        elif isinstance(value, Set):
            r.sadd(key, *value)
        elif isinstance(value, Stream):
            for entry in value:
                r.xadd(key, entry)
        elif isinstance(value, list):
            r.rpush(key, *value)
        elif isinstance(value, str):
            r.set(key, value)
        else:
            raise TypeError(f"cannot seed {key}: {value!r}")
        if ttl is not None:
            r.pexpire(key, ttl)


def _text(value: bytes) -> str | bytes:
    try:
        return value.decode()
    except UnicodeDecodeError:
        return value


def dump(r: redis.Redis) -> dict[str, Any]:
    """Every key of the database as plain Python (see the module docstring for the shapes)."""
    out: dict[str, Any] = {}
    for raw in r.scan_iter(count=1000):
        key = raw.decode()
        kind = r.type(raw).decode()
        value: Any
        if kind == "string":
            value = _text(r.get(raw))
        elif kind == "list":
            value = [_text(v) for v in r.lrange(raw, 0, -1)]
        elif kind == "set":
            value = Set(_text(v) for v in r.smembers(raw))
        elif kind == "hash":
            value = Hash({k.decode(): _text(v) for k, v in r.hgetall(raw).items()})
        elif kind == "zset":
            value = ZSet({m.decode(): s for m, s in r.zrange(raw, 0, -1, withscores=True)})
        elif kind == "stream":
            value = Stream({k.decode(): _text(v) for k, v in fields.items()} for _id, fields in r.xrange(raw))
        else:
            raise AssertionError(f"unexpected type {kind} of {key}")
        if r.pttl(raw) >= 0:
            value = Volatile(value)
        out[key] = value
    return out


def assert_db(r: redis.Redis, expected: dict[str, Any]) -> None:
    """The whole database equals ``expected``; on failure, show only the keys that differ."""
    actual = dump(r)
    diff = {
        key: {"actual": actual.get(key, "<missing>"), "expected": expected.get(key, "<missing>")}
        for key in sorted(set(actual) | set(expected))
        if actual.get(key) != expected.get(key)
    }
    assert not diff, "database differs from the expected state:\n" + "\n".join(
        f"  {key}:\n    actual:   {d['actual']!r}\n    expected: {d['expected']!r}" for key, d in diff.items()
    )


def fake_clock() -> FakeClock:
    return FakeClock(NOW)


# -- table-driven script cases -----------------------------------------------------------------------------------


@dataclass
class Case:
    """Seed ``before``, run the one call ``call(transitions)`` builds, and compare the whole database with
    ``after``. A refused call (``raises``) or a no-op leaves ``after`` as None: nothing may change."""

    id: str
    before: dict[str, Any]
    call: Callable[[Transitions], Call]
    after: dict[str, Any] | None = None
    returns: Any = b"OK"
    raises: type[EngineError] | None = None
    detail: str | None = None  # the refused call's error detail (the script's reply after the code)
    limits: Limits | None = None


def run_case(r: redis.Redis, redis_url: str, case: Case) -> None:
    assert case.raises is None or case.after is None, "a refused call changes nothing"
    seed(r, case.before)
    assert_db(r, case.before)  # the seed is exactly the state the case names
    broker = Broker(redis_url, clock=fake_clock(), limits=case.limits)
    try:
        call = case.call(broker.transitions)
        if case.raises is not None:
            with pytest.raises(case.raises) as refused:
                broker.run(call)
            assert refused.value.op == call.op
            if case.detail is not None:
                assert refused.value.message == case.detail
        else:
            assert broker.run(call) == case.returns
    finally:
        broker.close()
    assert_db(r, case.before if case.after is None else case.after)


def cases(*table: Case) -> Any:
    """``@cases(...)`` parametrizes a test over a table of Case, named by their ids."""
    return pytest.mark.parametrize("case", table, ids=[c.id for c in table])


# -- a worker in a thread, for the tests of waiting clients ---------------------------------------------------


def finishing_worker(redis_url: str, queue: str, then, start: threading.Event | None = None) -> threading.Thread:
    """A thread that takes one task from ``queue`` and finishes it with ``then(broker, leased)``."""

    def work() -> None:
        if start is not None:
            assert start.wait(30)
        broker = Broker(redis_url, clock=FakeClock(NOW))
        try:
            (leased,) = broker.run(broker.transitions.dequeue(queue, 1, 30, "w1", "tok-"))
            then(broker, leased)
        finally:
            broker.close()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread
