"""The key names Lua builds by hand agree with ``queues/engine/keys.py``, for every key kind, in the plain and the
Cluster layout.

Scripts get most keys from Python (KEYS, and the task-key prefix in ARGV). A few they build themselves, from the
task-key prefix or the event stream's name, in three places: ``queue_key`` and ``trimming`` in ``lua/_lib.lua``,
and ``base .. "<literal>"`` in ``lua/delete_queue.lua``. The literals are read from the .lua files, and each must
be listed below with the keys.py kind it builds; the names are then built by the Lua itself, in the real Redis
(``queue_key`` and ``trimming`` called, ``delete_queue`` run over keys seeded by keys.py's names), and compared.
So a spelling changed on either side fails here, and so does a new literal or a new key kind until it is listed.
"""

from __future__ import annotations

import inspect
import re
from functools import cached_property
from typing import Any

import pytest
import redis

from taskq.queues.engine import QueueNotEmptyError
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.keys import Keys, QueueKeys
from taskq.queues.engine.scripts import LUA_DIR
from taskq.queues.engine.transitions import Transitions

from .dbstate import Hash, Set, ZSet, seed
from .task_state import NOW_MS, task

#: ``queue_key(ctx, "<literal>"[ .. id])`` in the .lua files -> the kind keys.py names it by. A literal ending in
#: ":" is followed by an id, as the kind's builder takes one.
QUEUE_KEY = {
    "pending": "pending",
    "archived": "archived",
    "waiting": "waiting",
    "workflows": "workflows",
    "wf:": "workflow",
    "deps:": "dependents",
    "cron:history:": "cron_history",
    "rec:": "task_record",
}
#: ``base .. "<literal>" .. <id>`` in delete_queue.lua (``base``: the task prefix minus its ``t:``) -> the kind.
DELETE_QUEUE = {"g:": "group", "agg:": "aggregation_set", "deps:": "dependents", "wf:": "workflow"}
#: ``ctx.events .. "<literal>"`` in _lib.lua's ``trimming`` -> the kind.
EVENTS_SUFFIX = {":exporter": "event_offset"}
#: ``ctx.prefix .. id`` and ``ARGV[1] .. id``: the task hash, the task prefix (handed by Python) and an id.
TASK = "task"

#: Kinds every script that touches them receives from Python, in KEYS or ARGV: per queue, then global.
HANDED_BY_PYTHON = {
    "base", "task_prefix", "lease", "scheduled", "retry", "completed", "paused", "starts", "events", "type_counts",
    "processed", "failed", "processed_on", "failed_on", "unique_prefix", "unique", "cron_last", "cron_paused",
    "groups", "aggregation_sets", "state_key", "barrier", "series", "errors", "errors_seen",
}  # fmt: skip
GLOBAL_HANDED_BY_PYTHON = {
    "queues", "layout", "servers", "server", "workers", "export_lease", "export_status", "config_queues",
    "config_unique", "config_retention", "config_version", "schedulers", "scheduler", "config_periodic",
    "config_periodic_version", "cancel_channel", "series", "control", "control_channel", "control_ack",
    "ended_server", "ended_servers", "api_consumed",
}  # fmt: skip
#: Members of the key classes that name no key: their fields, the per-queue factory, the global keys' leading
#: part, and the inverse of ``pending``.
NOT_KINDS = {"prefix", "queue", "cluster", "scope", "queue_of_pending"}

LAYOUTS = [Keys("tq"), Keys("tq", cluster=True), Keys("my:app", cluster=True)]
QUEUES = ["default", "emails:eu", "a b-c.d"]
layouts = pytest.mark.parametrize("keys", LAYOUTS, ids=lambda k: f"{k.prefix}{'-cluster' if k.cluster else ''}")


def kinds_of(cls: type) -> set[str]:
    """The key kinds a keys.py class defines: its public properties and methods."""
    members = {
        name
        for name, member in vars(cls).items()
        if not name.startswith("_") and (isinstance(member, property | cached_property) or inspect.isfunction(member))
    }
    return members - NOT_KINDS


def name_of(q: QueueKeys, kind: str, item_id: str = "x") -> str:
    """keys.py's name of ``kind`` in queue ``q`` (with ``item_id`` for a kind that names one of many)."""
    member = getattr(q, kind)
    return member(item_id) if callable(member) else member


def literals(pattern: str) -> set[str]:
    """The string literals ``pattern`` (one group) captures anywhere in the .lua files."""
    return {m for path in LUA_DIR.glob("*.lua") for m in re.findall(pattern, path.read_text())}


def test_every_key_kind_is_listed():
    per_queue = {TASK} | set(QUEUE_KEY.values()) | set(DELETE_QUEUE.values()) | set(EVENTS_SUFFIX.values())
    assert kinds_of(QueueKeys) == per_queue | HANDED_BY_PYTHON, (
        f"unlisted: {sorted(kinds_of(QueueKeys) - per_queue - HANDED_BY_PYTHON)}; "
        f"gone: {sorted(per_queue | HANDED_BY_PYTHON - kinds_of(QueueKeys))}"
    )
    assert kinds_of(Keys) == GLOBAL_HANDED_BY_PYTHON, f"unlisted or gone: {kinds_of(Keys) ^ GLOBAL_HANDED_BY_PYTHON}"


def test_every_literal_lua_builds_a_key_from_is_listed():
    assert literals(r'queue_key\(ctx, "([^"]*)"') == set(QUEUE_KEY)
    assert literals(r'\bbase \.\. "([^"]*)"') == set(DELETE_QUEUE)
    assert literals(r'ctx\.events \.\. "([^"]*)"') == set(EVENTS_SUFFIX)
    # Those builders take a literal first, and a name starting with the task prefix only ever appends an id, so
    # the lists above are complete (a message like "offset " .. ARGV[1] .. " is behind" names no key).
    assert literals(r'(?<!function )queue_key\(ctx, ([^"])') == set()
    assert literals(r'\bbase \.\. ([^"])') == set()
    assert literals(r'(?<!\.\. )(?:ctx\.prefix|ARGV\[1\]) \.\. (")') == set()


def run_lib(r: redis.Redis, keys: Keys, queue: str, body: str) -> Any:
    """Run ``body`` after ``lua/_lib.lua``, with ``ctx`` the script context over the KEYS and ARGV every transition
    script starts with (``Transitions.script_context``)."""
    script_keys, args = Transitions(keys.prefix, cluster=keys.cluster).script_context(keys.queue(queue), "test")
    script = (LUA_DIR / "_lib.lua").read_text() + (
        "\nlocal ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])\n" + body
    )
    return r.eval(script, len(script_keys), *script_keys, *args)


@layouts
@pytest.mark.parametrize("queue", QUEUES)
def test_queue_key_builds_the_names_keys_py_gives(r, keys, queue):
    q = keys.queue(queue)
    calls = [
        f'queue_key(ctx, "{lit}" .. "x")' if lit.endswith(":") else f'queue_key(ctx, "{lit}")' for lit in QUEUE_KEY
    ]
    built = run_lib(r, keys, queue, f"return {{ctx.prefix .. 'x', {', '.join(calls)}}}")
    assert [b.decode() for b in built] == [name_of(q, TASK)] + [name_of(q, kind) for kind in QUEUE_KEY.values()]


@layouts
def test_trimming_reads_the_offset_hash_where_keys_py_puts_it(r, keys):
    (kind,) = EVENTS_SUFFIX.values()
    q = keys.queue("emails")
    r.hset(name_of(q, kind), mapping={"committed": "17-3", "cap": 500})
    assert run_lib(r, keys, "emails", "trimming(ctx); return {ctx.trim.minid, ctx.trim.cap}") == [b"17-3", 500]


def hidden_tasks(q: QueueKeys) -> dict[str, Any]:
    """Tasks only the names delete_queue builds reach, seeded by keys.py's names: one aggregating in a group, one
    in an aggregation set, one waiting for a dependency (with the dependency's set of waiters and the workflow)."""
    assert set(DELETE_QUEUE.values()) == {"group", "aggregation_set", "dependents", "workflow"}, "seed a new kind"
    return {
        q.task("g1"): task("aggregating", group="batch"),
        q.groups: Set({"batch"}),
        q.group("batch"): ZSet({"g1": NOW_MS}),
        q.task("g2"): task("aggregating", group="batch"),
        q.aggregation_sets: ZSet({"s7:batch": NOW_MS}),
        q.aggregation_set("s7"): ZSet({"g2": NOW_MS}),
        q.task("w"): task("waiting", after='["gone"]', wf="f1"),
        q.waiting: ZSet({"w": NOW_MS}),
        q.dependents("gone"): Set({"w"}),
        q.workflows: ZSet({"f1": NOW_MS}),
        q.workflow("f1"): Hash({"state": "running"}),
    }


@layouts
@pytest.mark.parametrize("queue", QUEUES)
def test_delete_queue_finds_and_deletes_the_keys_keys_py_names(r, redis_url, keys, queue):
    seed(r, hidden_tasks(keys.queue(queue)))
    transitions = Transitions(keys.prefix, cluster=keys.cluster)
    broker = Broker(redis_url, prefix=keys.prefix)
    try:
        # Unforced, it counts the tasks of the group and the aggregation set it found by name, and deletes nothing.
        with pytest.raises(QueueNotEmptyError, match="3 tasks left"):
            broker.run(transitions.delete_queue(queue, False))
        assert broker.run(transitions.delete_queue(queue, True)) == b"OK"
    finally:
        broker.close()
    assert r.keys("*") == [], "delete_queue left keys it did not find by name"


def test_per_queue_keys_are_the_same_in_both_layouts_and_share_one_slot():
    plain, cluster = Keys("tq").queue("emails"), Keys("tq", cluster=True).queue("emails")
    built_in_lua = {TASK} | set(QUEUE_KEY.values()) | set(DELETE_QUEUE.values()) | set(EVENTS_SUFFIX.values())
    for kind in built_in_lua:
        assert name_of(plain, kind) == name_of(cluster, kind), kind
        assert "{emails}" in name_of(cluster, kind), kind
