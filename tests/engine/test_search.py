"""The search language (parse: every key, quoting, named errors) and Inspector.search over real Redis: queues and
types by glob, states, errors, payload paths, age, words, paging, the bound on the work, masked payloads."""

from __future__ import annotations

import re

import pytest

from taskq.queues.engine import Client, Inspector
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.inspection.groups_workflows import Groups
from taskq.queues.engine.inspection.inspector_core import InspectorCore
from taskq.queues.engine.inspection.queue_stats import QueueReads
from taskq.queues.engine.inspection.task_reads import TaskReads
from taskq.queues.engine.inspection.task_search import TaskSearch
from taskq.queues.engine.redaction import Redaction
from taskq.queues.engine.search import Query, QuerySyntaxError, parse

from .task_state import NOW


def test_parse_every_key():
    q = parse('queue:critical,mail-* type:email:* state:retry,archived error:"SMTP 451" payload.to:ada@example.com '
              "payload.items.0.sku:A1 age:>1h age:<2d id:t1,t2 overdue")  # fmt: skip
    assert (q.queues, q.types, q.states, q.errors, q.ids, q.words) == (
        ("critical", "mail-*"), ("email:*",), ("retry", "archived"), ("smtp 451",), ("t1", "t2"), ("overdue",),
    )  # fmt: skip
    assert q.payload == ((("to",), "ada@example.com"), (("items", "0", "sku"), "A1"))
    assert (q.older_than, q.newer_than) == (3600, 172800)
    assert parse("") == Query() and parse('"two words"').words == ("two words",)


@pytest.mark.parametrize(
    ("text", "says", "at"),
    [
        ("colour:red", 'unknown key "colour"', 1),
        ("type:email colour:red", 'unknown key "colour"', 12),
        ("state:sleeping", 'unknown state "sleeping"', 1),
        ("age:1h", "age needs > or <", 1),
        ("age:>soon", "a number and a unit", 1),
        ('error:"SMTP', "a quote is not closed", 7),
        ("queue:", "queue: needs a value", 1),
        ("x" * 1001, "at most 1000 characters", None),  # read no further: no place to name
    ],
)
def test_a_search_that_cannot_be_read_is_named(text, says, at):
    """What is wrong, and where: the character the wrong part starts at, to find it in a long search."""
    with pytest.raises(QuerySyntaxError, match=says) as refused:
        parse(text)
    where = re.search(r"\(at character (\d+) of the search ", refused.value.message)
    assert (int(where[1]) if where else None) == at


@pytest.fixture
def tasks(r, redis_url, clock):
    with Client(redis_url, clock=clock) as client:
        client.enqueue("email:deliver", {"to": "ada@example.com", "n": 1}, queue="critical", task_id="e1")
        client.enqueue("email:deliver", {"to": "bob@example.com", "n": 2}, queue="critical", task_id="e2")
        client.enqueue("sms:send", {"to": "+4912345"}, queue="mail-eu", task_id="s1")
        clock.advance(7200)
        client.enqueue("email:digest", {"to": "ada@example.com"}, queue="mail-eu", task_id="d1")
        client.enqueue("report:build", {"secret": "hunter2"}, queue="low", task_id="r1", process_in=60)


def ids(page) -> list[str]:
    return [t.id for t in page.matches]


def test_searching_across_queues(r, redis_url, clock, tasks):
    with Inspector(redis_url, clock=clock) as insp:
        assert ids(insp.search("type:email:*")) == ["d1", "e1", "e2"]  # newest first; ties by queue, then id
        assert ids(insp.search("queue:mail-* payload.to:ada@example.com")) == ["d1"]
        assert ids(insp.search("payload.to:*@example.com age:>1h")) == ["e1", "e2"]
        assert ids(insp.search("age:<1h")) == ["r1", "d1"]  # queues by name: low before mail-eu
        assert ids(insp.search("state:scheduled")) == ["r1"] and ids(insp.search("payload.n:2")) == ["e2"]
        assert ids(insp.search("hunter2")) == ["r1"] and ids(insp.search("nobody")) == []
        page = insp.search("", page=2, size=2)
        assert (len(page.matches), [t.id for t in page.tasks], page.pages, page.complete) == (5, ["e1", "e2"], 3, True)
        bounded = insp.search("", scan_limit=3)
        assert (bounded.scanned, bounded.total, bounded.complete, len(bounded.matches)) == (3, 5, False, 3)
        masked = insp.search("hunter2", redaction=Redaction.build(keys=["secret"]))
        assert masked.matches == []  # a masked value is not searched: the search would tell what it holds


def test_errors_are_matched_case_insensitively(r, redis_url, clock, tasks):
    from taskq.queues.engine.broker import Broker

    broker = Broker(redis_url, clock=clock)
    (leased,) = broker.run(broker.transitions.dequeue("critical", 1, 60, "w", "t-"))
    broker.run(
        broker.transitions.retry("critical", leased.id, leased.token, NOW + 9000, "SMTP 451 Greylisted", worker="w")
    )
    broker.close()
    with Inspector(redis_url, clock=clock) as insp:
        assert ids(insp.search('error:"smtp 451"')) == [leased.id] == ids(insp.search("greylisted state:retry"))
        assert ids(insp.search("error:550")) == []
        assert ids(insp.search("id:e2,s1")) == ["e2", "s1"]


class TrafficBetweenReads(QueueReads):
    """The queue reads of a search on real Redis, letting a producer enqueue ``arrivals`` more tasks right after
    they counted the lists and before the search reads them: the moment traffic hits a search, made deterministic
    instead of timed."""

    def __init__(self, core, arrivals):
        super().__init__(core)
        self.arrivals = arrivals

    def counted(self, queues, also=None):
        counted = super().counted(queues, also)
        self.arrivals()
        return counted


def test_a_search_under_traffic_never_reads_more_tasks_than_it_counted(r, redis_url, clock, tasks):
    with Client(redis_url, clock=clock) as client:

        def arrivals():
            for n in range(2):
                client.enqueue("email:deliver", {"to": f"late{n}@example.com"}, queue="critical")

        broker = Broker(redis_url, clock=clock)
        core = InspectorCore(broker)
        search = TaskSearch(core, TaskReads(core, Groups(core)), TrafficBetweenReads(core, arrivals))
        page = search.search("queue:critical")
        broker.close()
    # Counted: e1 and e2. The list held four when read; the page read them all ("4 of 2") and matched the newcomers.
    assert (page.scanned, page.total, page.complete, sorted(ids(page))) == (2, 2, True, ["e1", "e2"])
