"""The key names Lua builds by hand agree with ``queues/engine/keys.py``, for every per-queue key kind, in the
plain and the Cluster layout.

Scripts get most keys from Python (KEYS, and the task-key prefix in ARGV). A few they derive from the task-key
prefix or the event stream's name: ``queue_key`` and ``trimming`` in ``lua/_lib.lua`` (run here, in the real
Redis, with the names Python hands a script), and the group, aggregation-set, dependency and workflow keys of
``lua/delete_queue.lua`` (its table cases in ``test_scripts_operator.py`` seed those keys by ``keys.py``'s names
and check that a forced delete leaves none). Every kind ``QueueKeys`` defines must be listed below as derived in
Lua (and so checked) or handed over by Python, so a new kind fails here until someone says which it is.
"""

from __future__ import annotations

import inspect

import pytest

from queues.engine.keys import Keys, QueueKeys
from queues.engine.scripts import LUA_DIR

#: Kinds Lua derives itself -> (how ``keys.py`` names one, the Lua expression that builds it; ``ctx`` is a script
#: context over the queue's names as Python hands them, ``base`` the task prefix minus its ``t:``, as in
#: delete_queue.lua).
DERIVED_IN_LUA = {
    "task": (lambda q: q.task("t1"), 'ctx.prefix .. "t1"'),
    "pending": (lambda q: q.pending, 'queue_key(ctx, "pending")'),
    "archived": (lambda q: q.archived, 'queue_key(ctx, "archived")'),
    "waiting": (lambda q: q.waiting, 'queue_key(ctx, "waiting")'),
    "workflows": (lambda q: q.workflows, 'queue_key(ctx, "workflows")'),
    "workflow": (lambda q: q.workflow("w1"), 'queue_key(ctx, "wf:" .. "w1")'),
    "dependents": (lambda q: q.dependents("t1"), 'queue_key(ctx, "deps:" .. "t1")'),
    "group": (lambda q: q.group("g1"), 'base .. "g:" .. "g1"'),
    "aggregation_set": (lambda q: q.aggregation_set("s1"), 'base .. "agg:" .. "s1"'),
}
#: Kinds every script that touches them receives from Python.
HANDED_BY_PYTHON = {
    "base", "task_prefix", "lease", "scheduled", "retry", "completed", "paused", "starts", "events", "type_counts",
    "processed", "failed", "processed_on", "failed_on", "unique_prefix", "unique", "cron_last", "cron_history",
    "groups", "aggregation_sets", "state_key",
}  # fmt: skip
#: Derived in Lua, but read through ``trimming``'s HMGET (checked by the round trip below).
EVENT_OFFSET = "event_offset"


def key_kinds() -> set[str]:
    return {
        name
        for name, member in vars(QueueKeys).items()
        if not name.startswith("_") and (isinstance(member, property) or inspect.isfunction(member))
    } - {"prefix", "queue"}


def test_every_key_kind_is_classified():
    classified = set(DERIVED_IN_LUA) | HANDED_BY_PYTHON | {EVENT_OFFSET}
    assert key_kinds() == classified, (
        f"unclassified: {sorted(key_kinds() - classified)}; gone: {sorted(classified - key_kinds())}"
    )


def run_lib(r, queue_keys: QueueKeys, body: str) -> object:
    """Run ``body`` after ``lua/_lib.lua`` with a context over the queue's names as scripts get them."""
    script = (LUA_DIR / "_lib.lua").read_text() + (
        "\nlocal ctx = new_context(KEYS[1], KEYS[2], ARGV[1], 0, 1000, 'test')\n"
        "local base = string.sub(ARGV[1], 1, #ARGV[1] - 2)\n" + body
    )
    return r.eval(script, 2, queue_keys.type_counts, queue_keys.events, queue_keys.task_prefix)


LAYOUTS = [Keys("tq"), Keys("tq", cluster=True), Keys("my:app", cluster=True)]
QUEUES = ["default", "emails:eu", "a b-c.d"]


@pytest.mark.parametrize("keys", LAYOUTS, ids=lambda k: f"{k.prefix}{'-cluster' if k.cluster else ''}")
@pytest.mark.parametrize("queue", QUEUES)
def test_names_lua_derives_are_the_names_keys_py_gives(r, keys, queue):
    q = keys.queue(queue)
    kinds = sorted(DERIVED_IN_LUA)
    built = run_lib(r, q, "return {" + ", ".join(DERIVED_IN_LUA[k][1] for k in kinds) + "}")
    assert dict(zip(kinds, [b.decode() for b in built], strict=True)) == {k: DERIVED_IN_LUA[k][0](q) for k in kinds}


@pytest.mark.parametrize("keys", LAYOUTS, ids=lambda k: f"{k.prefix}{'-cluster' if k.cluster else ''}")
def test_trimming_reads_the_offset_hash_where_keys_py_puts_it(r, keys):
    q = keys.queue("emails")
    r.hset(q.event_offset, mapping={"committed": "17-3", "cap": 500})
    assert run_lib(r, q, "trimming(ctx); return {ctx.trim.minid, ctx.trim.cap}") == [b"17-3", 500]


def test_per_queue_keys_are_the_same_in_both_layouts_and_share_one_slot():
    plain, cluster = Keys("tq").queue("emails"), Keys("tq", cluster=True).queue("emails")
    for kind, (name_of, _lua) in DERIVED_IN_LUA.items():
        assert name_of(plain) == name_of(cluster), kind
        assert "{emails}" in name_of(cluster), kind
    assert plain.event_offset == cluster.event_offset and "{emails}" in cluster.event_offset
