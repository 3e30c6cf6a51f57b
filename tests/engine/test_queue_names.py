"""Queue names for new tasks (issue 22): '.', '..' and names with glob characters are refused at every way a task
gets a new queue, with a message naming the rule; names already in Redis stay readable, movable and deletable."""

from __future__ import annotations

import json

import pytest

from taskq.queues.engine import Client, FakeClock, Inspector, ValidationError, chain, schedule, sig
from taskq.queues.engine import validation as check
from taskq.queues.engine.keys import Keys

from .dbstate import Set, ZSet, dump, seed
from .task_state import task

REFUSED = [
    (".", "steps of a URL path"),
    ("..", "steps of a URL path"),
    ("*", "glob pattern"),
    ("tenant-*", "glob pattern"),
    ("tenant-?", "glob pattern"),
    ("a[b]", "glob pattern"),
]
ALLOWED = ["default", "team/jobs", "a.b", "...", ".hidden", "til~de", "a]b", "has space", "a!b"]


@pytest.mark.parametrize(("name", "rule"), REFUSED)
def test_new_queue_names_are_refused_naming_the_rule(name, rule):
    with pytest.raises(ValidationError, match=rule) as refused:
        check.new_queue_name(name, "client.enqueue")
    assert refused.value.op == "client.enqueue" and json.dumps(name) in refused.value.message
    assert check.queue_name(name) == name  # readers still take it


@pytest.mark.parametrize("name", ALLOWED)
def test_other_names_are_fine(name):
    assert check.new_queue_name(name) == name


@pytest.mark.parametrize(("name", "rule"), REFUSED)
def test_every_way_a_task_gets_a_new_queue_refuses_it(r, redis_url, clock: FakeClock, name, rule):
    with Client(redis_url, clock=clock) as client:
        with pytest.raises(ValidationError, match=rule):
            client.enqueue("t", {}, queue=name)
        with pytest.raises(ValidationError, match=rule):
            client.enqueue_many([("t", {})], queue=name)
        with pytest.raises(ValidationError, match=rule):
            client.enqueue_many([{"type": "t", "queue": name}])
        with pytest.raises(ValidationError, match=rule):
            client.submit(chain(sig("a"), sig("b")), queue=name)
    with pytest.raises(ValidationError, match=rule):
        schedule("* * * * *", "t", queue=name)
    assert dump(r) == {}


# A task another client (or an older taskq) wrote into queue '*', and one in '..'.
KEYS = Keys()


@pytest.mark.parametrize("name", ["*", ".."])
def test_a_queue_already_in_redis_stays_reachable(r, redis_url, clock: FakeClock, name):
    q = KEYS.queue(name)
    seed(r, {KEYS.queues: Set({name}), q.task("x1"): task("archived", error="dead"), q.archived: ZSet({"x1": 1})})
    inspector = Inspector(redis_url, clock=clock)
    try:
        assert name in inspector.queues() and inspector.queue_info(name).archived == 1
        assert [t.id for t in inspector.list_tasks(name, "archived", page=1, size=10)] == ["x1"]
        assert inspector.edit_task(name, "x1", b"{}", to_queue=name).queue == name  # staying is no new queue
        inspector.pause_queue(name)
        assert inspector.queue_info(name).paused
        inspector.delete_task(name, "x1")
        inspector.delete_queue(name, force=True)
        assert name not in inspector.queues()
    finally:
        inspector.broker.close()
