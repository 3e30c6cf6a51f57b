"""The Inspector: reads (queue info, history, task lists, servers) over seeded states, and every action."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import redis

from taskq.queues.engine import (
    Client,
    DailyStats,
    FailedPreconditionError,
    FakeClock,
    Inspector,
    Keys,
    QueueInfo,
    QueueNotEmptyError,
    QueueNotFoundError,
    ServerInfo,
    TaskNotFoundError,
    ValidationError,
)
from taskq.queues.engine.clock import utc_day
from tests.redis_servers import started_redis

from .dbstate import Hash, Set, Volatile, ZSet, assert_db, dump, seed
from .task_state import DAY, NOW, NOW_MS, Q, counts, task

REGISTERED = {"tq:queues": Set({"default"})}


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


@pytest.fixture
def inspector(r, redis_url: str, clock: FakeClock) -> Iterator[Inspector]:
    """Not the root's: an operator named ops@example.com, the name its actions' events carry."""
    i = Inspector(redis_url, clock=clock, actor="ops@example.com")
    yield i
    i.broker.close()


# One queue with tasks in every state; ids name their position in the expected listing order.
QUEUE = REGISTERED | {
    **{Q.task(f"p{n}"): task("pending", since=NOW_MS - 10_000 + n) for n in (1, 2, 3)},
    Q.pending: ["p3", "p2", "p1"],  # p1 waited longest
    **{Q.task(f"a{n}"): task("active", lease=f"tok-{n}") for n in (1, 2)},
    Q.lease: ZSet({"a2": NOW_MS + 9000, "a1": NOW_MS + 1000}),
    **{Q.task(f"s{n}"): task("scheduled") for n in (1, 2, 3)},
    Q.scheduled: ZSet({"s3": NOW_MS + 3000, "s1": NOW_MS + 1000, "s2": NOW_MS + 2000}),
    Q.task("r1"): task("retry", retried=2, error="boom", failed_at=NOW_MS - 5),
    Q.retry: ZSet({"r1": NOW_MS + 500}),
    **{Q.task(f"x{n}"): task("archived", error="dead") for n in (1, 2)},
    Q.archived: ZSet({"x1": NOW_MS - 100, "x2": NOW_MS - 200}),  # newest first
    Q.task("c1"): task("completed", completed_at=NOW_MS - 50, result='{"ok":1}'),
    Q.completed: ZSet({"c1": NOW_MS + 3_600_000}),
    Q.paused: str(NOW_MS),
    Q.processed: "100",
    Q.failed: "20",
    Q.processed_on(DAY): Volatile("7"),
    Q.failed_on(DAY): Volatile("2"),
    Q.processed_on("2023-11-13"): Volatile("3"),
    Q.failed_on("2023-11-13"): Volatile("1"),
    Q.type_counts: counts(
        pending__email=3,
        active__email=2,
        scheduled__email=3,
        retry__email=1,
        archived__email=2,
        completed__email=1,
        processed__email=100,
        failed__email=20,
        pending__sms=0,
    ),
}


def test_queues(r, inspector):
    seed(r, {"tq:queues": Set({"b", "a"})})
    assert inspector.queues() == ["a", "b"]


def test_queue_info(r, inspector, clock):
    seed(r, QUEUE)
    info = inspector.queue_info("default")
    assert info.memory_bytes > 0
    assert info.latency == pytest.approx(9.999)  # p1, the next to run, has waited since NOW - 9.999 s
    info.memory_bytes, info.latency = 0, 0.0
    assert info == QueueInfo(
        "default",
        pending=3,
        active=2,
        scheduled=3,
        retry=1,
        archived=2,
        completed=1,
        paused=True,
        processed_today=7,
        failed_today=2,
        processed_total=100,
        failed_total=20,
    )
    assert info.size == 11
    clock.advance(5)
    assert inspector.queue_info("default").latency == pytest.approx(14.999)
    assert dump(r) == QUEUE  # reads write nothing


def test_queue_info_of_an_empty_queue(r, inspector):
    seed(r, REGISTERED)
    assert inspector.queue_info("default") == QueueInfo("default")


def test_history(r, inspector):
    seed(r, QUEUE)
    assert inspector.history("default", days=3) == [
        DailyStats(DAY, 7, 2),
        DailyStats("2023-11-13", 3, 1),
        DailyStats("2023-11-12", 0, 0),
    ]
    assert len(inspector.history("default")) == 7
    for days in (0, 91, "7", 1.5):
        with pytest.raises(ValidationError):
            inspector.history("default", days=days)


def test_histories_of_many_queues_at_once(r, inspector):
    """What ``history`` reads of each queue, in one round trip; a queue not registered (deleted since it was
    listed) is left out, not an error: the dashboard lists what it read a moment before."""
    emails = Keys().queue("emails")
    seed(r, QUEUE | {"tq:queues": Set({"default", "emails"}), emails.processed_on(DAY): Volatile("4")})
    found = inspector.histories(["default", "emails", "gone"], days=2)
    assert found == {
        "default": [DailyStats(DAY, 7, 2), DailyStats("2023-11-13", 3, 1)],
        "emails": [DailyStats(DAY, 4, 0), DailyStats("2023-11-13", 0, 0)],
    }
    assert found["default"] == inspector.history("default", days=2)
    assert inspector.histories([], days=2) == {}
    with pytest.raises(ValidationError):
        inspector.histories(["default", "bad{name}"])


def test_type_counts(r, inspector):
    seed(r, QUEUE)
    assert inspector.type_counts("default") == {
        "email": {
            "pending": 3,
            "active": 2,
            "scheduled": 3,
            "retry": 1,
            "archived": 2,
            "completed": 1,
            "processed": 100,
            "failed": 20,
        }
    }  # zero counts are left out


@pytest.mark.parametrize(
    ("state", "order"),
    [
        ("pending", ["p1", "p2", "p3"]),  # next to run first
        ("active", ["a1", "a2"]),  # soonest lease expiry first
        ("scheduled", ["s1", "s2", "s3"]),
        ("retry", ["r1"]),
        ("archived", ["x1", "x2"]),  # newest first
        ("completed", ["c1"]),
        ("aggregating", []),
    ],
)
def test_list_tasks_order_and_pages(r, inspector, state, order):
    seed(r, QUEUE)
    assert [t.id for t in inspector.list_tasks("default", state)] == order
    pages = [[t.id for t in inspector.list_tasks("default", state, page=n, size=2)] for n in (1, 2, 3)]
    assert pages == [order[:2], order[2:4], []]
    assert all(t.state == state for t in inspector.list_tasks("default", state))


# Archived tasks with ties (archived in the same millisecond) and a gap; ids in listing order, newest first.
TIED = REGISTERED | {
    **{Q.task(f"t{n}"): task("archived", error="dead") for n in range(1, 6)},
    Q.archived: ZSet({"t1": NOW_MS, "t2": NOW_MS - 10, "t3": NOW_MS - 10, "t4": NOW_MS - 10, "t5": NOW_MS - 20}),
}


def test_list_tasks_after_walks_every_task_once_in_order(r, inspector):
    seed(r, TIED)
    seen, mark = [], None
    while True:
        page, mark = inspector.list_tasks_after("default", "archived", 2, mark)
        seen += [t.id for t in page]
        if mark is None:
            break
    # ZREVRANGE orders ties by member, descending.
    assert seen == ["t1", "t4", "t3", "t2", "t5"]


@pytest.mark.parametrize(
    ("removed", "rest"),
    [
        (None, ["t2", "t5"]),  # the marked task is where it was: right after it
        ("t3", ["t4", "t2", "t5"]),  # gone: after every task newer than it, so t4 of its millisecond comes again
        ("t1", ["t2", "t5"]),  # a newer one gone: the marked one still anchors the page
    ],
)
def test_list_tasks_after_a_mark(r, inspector, removed, rest):
    seed(r, TIED)
    page, mark = inspector.list_tasks_after("default", "archived", 3)
    assert [t.id for t in page] == ["t1", "t4", "t3"] and mark == (float(NOW_MS - 10), "t3")
    if removed:
        r.zrem(Q.archived, removed)
    page, mark = inspector.list_tasks_after("default", "archived", 5, mark)
    assert [t.id for t in page] == rest and mark is None


def test_list_tasks_after_refuses_other_states(r, inspector):
    seed(r, TIED)
    with pytest.raises(ValidationError):
        inspector.list_tasks_after("default", "pending", 2)


def test_listed_task_details(r, inspector):
    seed(r, QUEUE)
    (s1,) = inspector.list_tasks("default", "scheduled", size=1)
    assert s1.next_process_at == at(NOW_MS + 1000)
    (r1,) = inspector.list_tasks("default", "retry")
    assert (r1.retried, r1.last_error, r1.last_failed_at, r1.next_process_at) == (
        2,
        "boom",
        at(NOW_MS - 5),
        at(NOW_MS + 500),
    )
    (c1,) = inspector.list_tasks("default", "completed")
    assert (c1.expires_at, c1.completed_at, c1.result_json()) == (at(NOW_MS + 3_600_000), at(NOW_MS - 50), {"ok": 1})
    p1 = inspector.list_tasks("default", "pending")[0]
    assert (p1.json(), p1.next_process_at) == ({"to": "ada"}, at(NOW_MS - 9999))


def test_get_task(r, inspector):
    seed(r, QUEUE | {Q.task("a1"): task("active", lease="tok-1", progress="3/10")})
    assert inspector.get_task("default", "a1").progress == (3, 10)
    assert inspector.get_task("default", "s2").next_process_at == at(NOW_MS + 2000)
    assert inspector.get_task("default", "c1").expires_at == at(NOW_MS + 3_600_000)
    with pytest.raises(TaskNotFoundError, match="nope"):
        inspector.get_task("default", "nope")
    with pytest.raises(ValidationError):
        inspector.get_task("default", "i" * 10 * 1024)


@pytest.mark.parametrize(
    ("state", "page", "size"),
    [
        ("dead", 1, 20),
        ("ACTIVE", 1, 20),
        ("pending", 0, 20),
        ("pending", -1, 20),
        ("pending", "2", 20),
        ("pending", 1.0, 20),
        ("pending", 1, 0),
        ("pending", 1, 1001),
        ("pending", 1, True),
        ("pending", None, 20),
    ],
)
def test_list_tasks_bad_arguments(r, inspector, state, page, size):
    seed(r, QUEUE)
    with pytest.raises(ValidationError):
        inspector.list_tasks("default", state, page=page, size=size)


UNKNOWN_QUEUE_CALLS = [
    ("queue_info", ()),
    ("history", ()),
    ("type_counts", ()),
    ("pause_queue", ()),
    ("unpause_queue", ()),
    ("delete_queue", ()),
    ("list_tasks", ("pending",)),
    ("get_task", ("t",)),
    ("delete_task", ("t",)),
    ("run_task", ("t",)),
    ("archive_task", ("t",)),
    ("cancel_task", ("t",)),
    ("delete_all", ("pending",)),
    ("run_all", ("retry",)),
    ("archive_all", ("pending",)),
    ("cancel_all", ()),
]


@pytest.mark.parametrize(("method", "args"), UNKNOWN_QUEUE_CALLS, ids=[m for m, _ in UNKNOWN_QUEUE_CALLS])
def test_unknown_queue(r, inspector, method, args):
    # The queue's keys exist (e.g. left by a producer without registration): only the registry counts.
    state = {k: v for k, v in QUEUE.items() if k != "tq:queues"} | {"tq:queues": Set({"other"})}
    seed(r, state)
    with pytest.raises(QueueNotFoundError, match='"default"'):
        getattr(inspector, method)("default", *args)
    with pytest.raises(ValidationError):
        getattr(inspector, method)("bad{name}", *args)
    assert_db(r, state)


# -- actions ------------------------------------------------------------------------------------------------------


def test_task_actions(r, inspector):
    seed(r, QUEUE)
    inspector.run_task("default", "x1")
    assert inspector.get_task("default", "x1").state == "pending"
    inspector.archive_task("default", "s1")
    assert inspector.get_task("default", "s1").state == "archived"
    inspector.delete_task("default", "r1")
    with pytest.raises(TaskNotFoundError):
        inspector.get_task("default", "r1")
    events = [e for _, e in r.xrange(Q.events)]
    assert {e[b"worker"] for e in events} == {b"ops@example.com"}
    before = dump(r)
    with pytest.raises(FailedPreconditionError):
        inspector.delete_task("default", "a1")
    with pytest.raises(FailedPreconditionError):
        inspector.run_task("default", "p1")
    with pytest.raises(FailedPreconditionError):
        inspector.archive_task("default", "c1")
    with pytest.raises(TaskNotFoundError):
        inspector.run_task("default", "nope")
    with pytest.raises(ValidationError):
        inspector.delete_task("default", "")
    assert dump(r) == before


@pytest.fixture
def many(r, redis_url, clock) -> int:
    """2,500 pending tasks: more than one chunk of a bulk action."""
    with Client(redis_url, clock=clock) as client:
        client.enqueue_many([("n", {"i": i}) for i in range(2500)])
    return 2500


def test_bulk_actions_run_every_chunk(r, inspector, many):
    assert inspector.archive_all("default", "pending") == many
    assert inspector.queue_info("default").archived == many
    assert inspector.run_all("default", "archived") == many
    assert inspector.queue_info("default").pending == many
    assert inspector.delete_all("default", "pending") == many
    assert inspector.queue_info("default").size == 0
    assert [k for k in dump(r) if ":t:" in k] == []
    assert inspector.delete_all("default", "pending") == 0


@pytest.mark.parametrize(
    ("method", "state"),
    [
        ("delete_all", "active"),
        ("delete_all", "aggregating"),
        ("delete_all", "nope"),
        ("run_all", "pending"),
        ("run_all", "completed"),
        ("run_all", "active"),
        ("archive_all", "archived"),
        ("archive_all", "active"),
    ],
)
def test_bulk_actions_refuse_a_state(r, inspector, method, state):
    seed(r, QUEUE)
    with pytest.raises(ValidationError):
        getattr(inspector, method)("default", state)
    assert_db(r, QUEUE)


def test_pause_and_unpause(r, inspector):
    seed(r, REGISTERED)
    inspector.pause_queue("default")
    assert inspector.queue_info("default").paused
    with pytest.raises(FailedPreconditionError):
        inspector.pause_queue("default")
    inspector.unpause_queue("default")
    assert not inspector.queue_info("default").paused
    with pytest.raises(FailedPreconditionError):
        inspector.unpause_queue("default")


def test_delete_queue(r, inspector):
    other = {"tq:{other}:pending": ["o"], "tq:{other}:t:o": task("pending")}
    seed(r, QUEUE | other | {"tq:queues": Set({"default", "other"})})
    with pytest.raises(QueueNotEmptyError, match="active"):
        inspector.delete_queue("default")
    with pytest.raises(QueueNotEmptyError, match="active"):
        inspector.delete_queue("default", force=True)
    r.delete(Q.lease, Q.task("a1"), Q.task("a2"))
    before = dump(r)
    with pytest.raises(QueueNotEmptyError, match="force"):
        inspector.delete_queue("default")
    assert dump(r) == before
    inspector.delete_queue("default", force=True)
    assert inspector.queues() == ["other"]
    assert_db(
        r,
        other | {"tq:queues": Set({"other"})},  # the daily counters go with the totals
    )


def test_today_never_exceeds_total_when_a_deleted_queue_is_used_again(r, redis_url, inspector, clock):
    """Issue 16: deleting a queue dropped its totals but left today's counters, so a queue of the same name used
    again the same day read "processed today 830, total 827". Deleting a queue deletes all its counters."""
    from taskq.queues.engine.broker import Broker

    def run_one() -> None:
        with Client(redis_url, clock=clock) as client:
            broker = Broker(redis_url, clock=clock)
            client.enqueue("email", {}, queue="default")
            [leased] = broker.run(broker.transitions.dequeue("default", 1, 60, "w", "tok-"))
            broker.run(broker.transitions.done("default", [(leased.id, leased.token)], "w"))
            broker.close()

    run_one()
    clock.advance(-40 * 86400)  # a counter of an earlier day, still kept for the charts
    run_one()
    clock.advance(40 * 86400)
    inspector.delete_queue("default")
    run_one()
    info = inspector.queue_info("default")
    assert (info.processed_today, info.processed_total) == (1, 1)
    assert [d.processed for d in inspector.history("default", 90) if d.processed] == [1]


def test_delete_empty_queue(r, inspector):
    seed(r, REGISTERED | {Q.type_counts: counts(pending__email=0)})
    inspector.delete_queue("default")
    assert dump(r) == {}
    with pytest.raises(QueueNotFoundError):
        inspector.queue_info("default")


def _messages(pubsub, n: int) -> list[bytes]:
    out: list[bytes] = []
    while len(out) < n:
        message = pubsub.get_message(ignore_subscribe_messages=True, timeout=10)
        assert message is not None, "no cancel request published"
        out.append(message["data"])
    return out


def test_cancel_task_publishes_the_id(r, inspector):
    seed(r, QUEUE)
    pubsub = r.pubsub()
    # Pub/sub ignores database numbers, so the channel names the database: only our own subscriber hears it.
    pubsub.subscribe(f"tq:cancel:{r.connection_pool.connection_kwargs.get('db', 0)}")
    assert pubsub.get_message(timeout=10)["type"] == "subscribe"
    assert inspector.cancel_task("default", "a1") == 1
    assert _messages(pubsub, 1) == [b'["default", "a1"]']
    with pytest.raises(FailedPreconditionError, match="pending"):
        inspector.cancel_task("default", "p1")
    with pytest.raises(TaskNotFoundError):
        inspector.cancel_task("default", "nope")
    assert inspector.cancel_all("default") == 2
    assert sorted(_messages(pubsub, 2)) == [b'["default", "a1"]', b'["default", "a2"]']
    pubsub.close()
    assert_db(r, QUEUE)


# -- servers ------------------------------------------------------------------------------------------------------


def test_servers(r, inspector):
    doc = {
        "id": "host1:42:ab",
        "host": "host1",
        "pid": 42,
        "started": NOW_MS - 60_000,
        "status": "active",
        "queues": {"default": 3, "low": 1},
        "strict": True,
        "concurrency": 8,
    }
    seed(
        r,
        {
            "tq:servers": ZSet({"host1:42:ab": NOW_MS + 15_000, "gone:1:x": NOW_MS - 1, "nokey:2:y": NOW_MS + 15_000}),
            "tq:server:host1:42:ab": json.dumps(doc),
            "tq:server:gone:1:x": json.dumps(doc | {"id": "gone:1:x"}),
            "tq:workers:host1:42:ab": Hash(
                {
                    "t2": json.dumps({"task": "t2", "queue": "default", "started": NOW_MS - 10}),
                    "t1": json.dumps({"task": "t1", "queue": "low", "started": NOW_MS - 20}),
                }
            ),
        },
    )
    assert inspector.servers() == [
        ServerInfo(
            id="host1:42:ab",
            host="host1",
            pid=42,
            started_at=at(NOW_MS - 60_000),
            status="active",
            queues={"default": 3, "low": 1},
            strict=True,
            concurrency=8,
            active=[
                {"task": "t1", "queue": "low", "started": NOW_MS - 20},
                {"task": "t2", "queue": "default", "started": NOW_MS - 10},
            ],
        )
    ]


def test_no_servers(r, inspector):
    assert inspector.servers() == []


def test_day_of_the_fake_clock():
    assert utc_day(NOW) == DAY == "2023-11-14"


def test_an_active_task_whose_lease_ran_out_is_flagged_orphaned(r, redis_url):
    from taskq.queues.engine import Client, FakeClock, Inspector

    clock = FakeClock()
    client = Client(redis_url, clock=clock)
    inspector = Inspector(redis_url, clock=clock)
    client.enqueue("email", b"x")
    broker = client.broker
    [leased] = broker.run(broker.transitions.dequeue("default", 1, 30, "w", "t:"))
    live = inspector.get_task("default", leased.id)
    assert (live.orphaned, live.lease_expires_at.timestamp()) == (False, clock.now() + 30)
    clock.advance(31)
    assert inspector.get_task("default", leased.id).orphaned
    assert [t.orphaned for t in inspector.list_tasks("default", "active")] == [True]


def test_search_filters_by_type_prefix_and_text_and_says_how_much_it_read(r, redis_url):
    from taskq.queues.engine import Client, Inspector

    client = Client(redis_url)
    client.enqueue_many(
        [("email:deliver", {"to": f"user{n}@example.com"}) for n in range(30)] + [("sms:send", {"to": "+100"})] * 5
    )
    inspector = Inspector(redis_url)
    found = inspector.search_tasks("default", "pending", task_type="email:", text="user1")
    assert sorted(t.json()["to"] for t in found.tasks) == sorted(
        f"user{n}@example.com" for n in [1] + list(range(10, 20))
    )
    assert (found.scanned, found.total, found.complete) == (35, 35, True)
    bounded = inspector.search_tasks("default", "pending", task_type="sms", scan_limit=10)
    assert (bounded.scanned, bounded.total, bounded.complete) == (10, 35, False)
    assert inspector.search_tasks("default", "pending", text="nowhere").tasks == []
    assert len(inspector.search_tasks("default", "pending", limit=3).tasks) == 3


def test_search_is_paged_over_every_match_it_found(r, redis_url):
    from taskq.queues.engine import Client, Inspector

    Client(redis_url).enqueue_many([("email:deliver", {"n": n}) for n in range(7)] + [("sms:send", {"n": 0})] * 3)
    inspector = Inspector(redis_url)
    pages = [inspector.search_tasks("default", "pending", task_type="email:", page=p, limit=3) for p in (1, 2, 3)]
    assert [len(found.tasks) for found in pages] == [3, 3, 1]
    assert {found.pages for found in pages} == {3}
    assert [t.id for found in pages for t in found.tasks] == pages[0].match_ids  # every match, each once, in order
    past_the_end = inspector.search_tasks("default", "pending", task_type="email:", page=9, limit=3)
    assert (past_the_end.page, [t.id for t in past_the_end.tasks]) == (3, pages[0].match_ids[6:])


def test_search_of_aggregating_tasks_reads_each_task_once_past_the_first_page(r, redis_url):
    """A search reads 1,000 tasks a round trip: the second round of aggregating tasks read tasks 500-999 again
    (page 2 of a smaller page size) instead of 1,000-1,499, so half of them were matched twice, half never."""
    from taskq.queues.engine import Client, Inspector

    client = Client(redis_url, policies=False)
    for n in range(1500):
        client.enqueue("email:line", {"line": n}, group="user:42", queue="notify")
    found = Inspector(redis_url).search_tasks("notify", "aggregating", task_type="email:", limit=1000)
    assert (found.scanned, found.total, found.complete) == (1500, 1500, True)
    assert len(found.match_ids) == len(set(found.match_ids)) == 1500


def test_existing_tasks_tells_which_tasks_are_gone_in_one_pipeline(r, redis_url):
    from taskq.queues.engine import Client, Inspector

    client = Client(redis_url)
    kept, deleted = client.enqueue("a", b"1").id, client.enqueue("a", b"2").id
    inspector = Inspector(redis_url)
    inspector.delete_task("default", deleted)
    refs = [("default", kept), ("default", deleted), ("other", kept), ("bad{queue}", kept), ("default", "x" * 500)]
    assert inspector.existing_tasks(refs) == {("default", kept)}
    assert inspector.existing_tasks([]) == set()


def test_workflow_summaries_read_state_progress_and_failure_of_each_kept_workflow(r, redis_url):
    from taskq.queues.engine import Client, Inspector, chain, sig

    client = Client(redis_url)
    client.submit(chain(sig("a"), sig("b")), workflow_id="wf-run")
    failed = client.submit(chain(sig("a"), sig("b")), workflow_id="wf-fail")
    inspector = Inspector(redis_url)
    inspector.delete_task("default", failed.members[0].id)  # deleted before it ran: the workflow fails
    found = inspector.workflow_summaries("default", ["wf-run", "wf-fail", "wf-never"])
    assert {wf: info.state for wf, info in found.items()} == {"wf-run": "running", "wf-fail": "failed"}
    assert [m.state for m in found["wf-run"].members] == ["pending", "waiting"]
    assert (found["wf-fail"].failed_member, found["wf-fail"].error) == (failed.members[0].id, "deleted by operator")
    assert [(len(i.steps), i.succeeded) for i in found.values()] == [(2, 0), (2, 0)]
    assert inspector.workflow_summaries("default", []) == {}


def test_task_events_are_the_tasks_own_transitions_oldest_first(r, redis_url):
    from taskq.queues.engine import Client, Inspector

    client = Client(redis_url)
    info = client.enqueue("email", b"x")
    client.enqueue_many([("other", b"y")] * 1500)  # more than one page of the stream to search through
    broker = client.broker
    leased = broker.run(broker.transitions.dequeue("default", 1, 30, "w1", "t:"))
    assert leased[0].id == info.id
    broker.run(broker.transitions.retry("default", info.id, leased[0].token, 0, "boom", worker="w1"))
    events = Inspector(redis_url).task_events("default", info.id)
    assert [(e.from_state, e.to_state) for e in events] == [("", "pending"), ("pending", "active"), ("active", "retry")]
    assert (events[1].worker, events[2].error) == ("w1", "boom")


def test_edit_and_run_a_retry_task_in_its_queue(r, inspector):
    seed(r, QUEUE)
    info = inspector.edit_task("default", "r1", b'{"to":"bob"}', max_retry=3, timeout=9)
    assert (info.state, info.payload, info.max_retry, info.timeout, info.retried) == (
        "pending",
        b'{"to":"bob"}',
        3,
        9.0,
        0,
    )
    assert r.lrange(Q.pending, 0, 0) == [b"r1"] and r.zscore(Q.retry, "r1") is None
    assert inspector.edit_task("default", "x1", b"raw \x00 bytes").payload == b"raw \x00 bytes"


def test_edit_and_run_into_another_queue_keeps_the_id(r, inspector):
    seed(r, QUEUE)
    info = inspector.edit_task("default", "x2", b"{}", to_queue="repair")
    assert (info.queue, info.id, info.state, info.type, info.payload) == ("repair", "x2", "pending", "email", b"{}")
    assert r.zscore(Q.archived, "x2") is None and not r.exists(Q.task("x2"))
    assert "repair" in inspector.queues()


@pytest.mark.parametrize(
    ("task_id", "options", "error"),
    [
        ("p1", {}, FailedPreconditionError),  # pending: run it as it is
        ("a1", {}, FailedPreconditionError),
        ("nope", {}, TaskNotFoundError),
        ("r1", {"max_retry": -1}, ValidationError),
        ("r1", {"timeout": 0}, ValidationError),
        ("r1", {"to_queue": "a{b"}, ValidationError),
        ("r1", {"to_queue": ".."}, ValidationError),
        ("r1", {"to_queue": "tenant-*"}, ValidationError),
        ("r1", {"payload": b"x" * (1024 * 1024 + 1)}, ValidationError),
    ],
)
def test_a_refused_edit_changes_nothing(r, inspector, task_id, options, error):
    seed(r, QUEUE)
    before = dump(r)
    payload = options.pop("payload", b"{}")
    with pytest.raises(error):
        inspector.edit_task("default", task_id, payload, **options)
    assert dump(r) == before


def test_an_edit_into_a_queue_that_has_the_id_changes_nothing(r, inspector):
    from taskq.queues.engine import TaskIdConflictError

    seed(r, QUEUE | {"tq:{repair}:t:x1": task("pending"), "tq:{repair}:pending": ["x1"]})
    before = dump(r)
    with pytest.raises(TaskIdConflictError, match='queue "repair" already holds a task "x1"'):
        inspector.edit_task("default", "x1", b"{}", to_queue="repair")
    assert dump(r) == before


def test_memory_counts_aggregating_and_waiting_tasks_and_reads_the_same_while_nothing_changes(r, redis_url):
    """Issue 23: Memory read "0 bytes" beside 7 aggregating tasks (they sit in one sorted set per group)."""
    from taskq.queues.engine import Client, Inspector

    client = Client(redis_url, policies=False)
    for n in range(5):
        client.enqueue("email:line", {"line": n}, group="user:42", queue="notify")
    for n in range(2):
        client.enqueue("email:line", {"line": n}, group="user:7", queue="notify")
    inspector = Inspector(redis_url)
    grouped = inspector.queue_info("notify")
    assert grouped.aggregating == 7 and grouped.memory_bytes > 7 * 50
    assert inspector.queue_info("notify").memory_bytes == grouped.memory_bytes
    client.enqueue("report", b"x", after=["not-yet"], queue="deps")
    assert inspector.queue_info("deps").memory_bytes > 0


def test_queue_infos_without_a_memory_sample_read_no_task_and_no_structure(tmp_path):
    """The time series sampler asks for sizes and latency only (memory_sample=0). Reading memory then
    would walk every task: MEMORY USAGE with SAMPLES 0 reads every element, and a range to -1 lists every id (a
    burst of 300,000 MEMORY USAGE calls once a minute under a 300,000-task backlog, found in a worker's profile)."""
    with started_redis(tmp_path) as url:
        conn = redis.Redis.from_url(url)
        clock = FakeClock(NOW)
        seed(conn, QUEUE)
        inspector = Inspector(url, clock=clock)
        try:
            conn.config_resetstat()
            (info,) = inspector.queue_infos(["default"], memory_sample=0)
            commands = conn.info("commandstats")
        finally:
            inspector.broker.close()
            conn.close()
    assert (info.pending, info.active, info.scheduled, info.memory_bytes) == (3, 2, 3, 0)
    assert info.latency == pytest.approx(9.999)
    assert not {"cmdstat_memory", "cmdstat_lrange", "cmdstat_zrange", "cmdstat_sscan"} & set(commands)
