"""Group aggregation end to end with a worker Server in-process: groups cut by max size, by max delay and by the
grace period (time moved with the FakeClock, never slept), and an aggregator that dies between the cut and the
combined task loses nothing: the set is reclaimed after its deadline and aggregated again."""

from __future__ import annotations

import pytest
from worker_support import wait_for

from taskq.queues.engine import GroupSettings, Task, aggregator, handler
from taskq.queues.engine.aggregation import AGGREGATION_DEADLINE, GroupStore

Q = "default"


@pytest.fixture
def digests(registry, aggregators):
    """An aggregator that joins the lines of a group's tasks, and a handler that records each digest."""
    received: list[list[str]] = []

    @aggregator("email:line", registry=aggregators)
    def digest(group: str, tasks: list[Task]):
        return "email:digest", {"group": group, "lines": [t.json()["line"] for t in tasks]}

    @handler("email:digest", registry=registry)
    def send(task: Task) -> None:
        received.append(task.json()["lines"])

    return received


def enqueue_lines(client, n: int, group: str = "user:42", start: int = 0) -> list[str]:
    """Tasks a millisecond apart, so the group's order (by enqueue time) is the order of their lines."""
    ids = []
    for i in range(start, start + n):
        ids.append(client.enqueue("email:line", {"line": f"l{i}"}, group=group).id)
        client.clock.advance(0.001)
    return ids


def test_cut_by_max_size(make_server, client, inspector, digests):
    enqueue_lines(client, 5)
    assert inspector.queue_info(Q).aggregating == 5
    assert [(g.name, g.size) for g in inspector.groups(Q)] == [("user:42", 5)]
    assert [t.state for t in inspector.list_tasks(Q, "aggregating")] == ["aggregating"] * 5
    make_server(group_settings=GroupSettings(grace=3600, max_size=2))
    wait_for(lambda: len(digests) == 2, what="two full groups combined")
    assert sorted(digests) == [["l0", "l1"], ["l2", "l3"]]
    assert [(g.name, g.size) for g in inspector.groups(Q)] == [("user:42", 1)]  # one short of max size: waits


def test_cut_by_max_delay(make_server, client, clock, inspector, digests):
    enqueue_lines(client, 2)
    server = make_server(group_settings=GroupSettings(grace=3600, max_delay=60))
    clock.advance(30)
    enqueue_lines(client, 1, start=2)
    server.aggregator.run_once()
    assert digests == [] and inspector.queue_info(Q).aggregating == 3
    clock.advance(30)  # the oldest has now waited 60 s, though the newest joined 30 s ago
    wait_for(lambda: digests, what="the group combined at its max delay")
    assert digests == [["l0", "l1", "l2"]]
    assert inspector.queue_info(Q).aggregating == 0 and inspector.groups(Q) == []


def test_cut_by_grace_period(make_server, client, clock, inspector, digests):
    server = make_server(group_settings=GroupSettings(grace=10))
    enqueue_lines(client, 2, group="a")
    clock.advance(9)
    enqueue_lines(client, 1, group="b", start=2)
    clock.advance(2)  # group a: nothing new for 11 s; group b: for 2 s
    wait_for(lambda: digests, what="group a combined after its grace period")
    server.aggregator.run_once()
    assert digests == [["l0", "l1"]]
    assert [(g.name, g.size) for g in inspector.groups(Q)] == [("b", 1)]
    clock.advance(10)
    wait_for(lambda: len(digests) == 2, what="group b combined")
    assert digests[1] == ["l2"]


def test_an_aggregator_killed_between_cut_and_combine_loses_nothing(
    make_server, broker, aggregators, client, clock, inspector, digests, r
):
    enqueue_lines(client, 3)
    # A first aggregator cuts the group, then dies before it enqueues the combined task.
    dead = GroupStore(broker, aggregators, actor="dead")
    set_id, taken = dead.cut(Q, "user:42", GroupSettings(grace=0))
    assert taken == 3 and inspector.groups(Q) == [] and inspector.queue_info(Q).aggregating == 3
    server = make_server(group_settings=GroupSettings(grace=0))
    server.aggregator.run_once()
    assert digests == [] and inspector.queue_info(Q).aggregating == 3  # the set is not the live one's to take
    clock.advance(AGGREGATION_DEADLINE + 1)
    wait_for(lambda: digests, what="the expired set reclaimed and aggregated")
    assert digests == [["l0", "l1", "l2"]] and server.aggregator.reclaimed == 1
    # The dead aggregator waking up cannot finish its set: it was reclaimed.
    from taskq.queues.engine import TaskNotFoundError
    from taskq.queues.engine.message import TaskMessage

    with pytest.raises(TaskNotFoundError):
        dead.finish(Q, "user:42", set_id, TaskMessage("late", "email:digest", b"{}", Q))
    wait_for(lambda: inspector.queue_info(Q).size == 0, what="every task done")


def test_group_settings_of_the_queue_definition_win(make_server, client, broker, digests):
    from taskq.queues.engine.policies import PolicySet, PolicyStore, QueueSpec

    PolicyStore(broker).write(PolicySet({Q: QueueSpec(Q, group_max_size=2)}))
    enqueue_lines(client, 2)
    make_server(group_settings=GroupSettings(grace=3600))
    wait_for(lambda: digests, what="cut at the definition's max size")
    assert digests == [["l0", "l1"]]


def test_group_enqueue_refuses_bad_input(client):
    from taskq.queues.engine import ValidationError

    for options in (
        {"group": ""},
        {"group": "g", "process_in": 5},
        {"group": "g", "after": ["x"]},
        {"group": "g", "unique": 60},
    ):
        with pytest.raises(ValidationError):
            client.enqueue("email:line", {}, **options)
