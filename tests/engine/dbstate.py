"""Seeding a Redis database with an explicit state, and dumping the whole database back into plain Python.

A state is a dict ``{key: value}``; the value's type says which Redis type the key has:

    str                  string
    list                 list (index 0 is the head, as LRANGE returns it)
    Set(...)             set
    Hash({...})          hash (field -> str)
    ZSet({...})          sorted set (member -> float score)
    Stream([...])        stream: the entries' fields in order; the generated ids are not compared
    Volatile(v, ttl_ms)  any of the above with a TTL; only the presence of a TTL is compared, never its length

``dump`` returns the same shapes, so a test compares ``dump(r) == expected`` over every key of the database. What
the engine writes into such states (task hashes, counts, events) is built by ``task_state``; a script run against
them, by ``script_runs``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import redis


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


class JsonText(str):
    """A string value written as JSON by a script (``cjson.encode``, whose key order is Lua's table order): equal
    to any string that parses to the same value. Seeded as its compact JSON."""

    def __new__(cls, value: Any) -> JsonText:
        text = super().__new__(cls, json.dumps(value, separators=(",", ":")))
        text.value = value
        return text

    value: Any

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, str):
            return False
        try:
            return bool(json.loads(other) == self.value)
        except ValueError:
            return False

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__


@dataclass(frozen=True)
class Volatile:
    """A key with a TTL. ``ttl_ms`` is used when seeding and ignored when comparing."""

    value: Any
    ttl_ms: int = field(default=60_000, compare=False)


# -- building states from others -----------------------------------------------------------------------------


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
