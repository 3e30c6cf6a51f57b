"""The key layout stamp (``<prefix>:layout``), the clients' refusal of another layout, the message version, and the
migration runner behind ``tasks migrate-keys``, against the real test database."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator

import pytest

from taskq.queues.engine import (
    LAYOUT_VERSION,
    AsyncClient,
    Client,
    EngineError,
    FakeClock,
    Inspector,
    LayoutVersionError,
    MessageVersionError,
    TaskMessage,
)
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.message import encode_default_options
from taskq.queues.engine.migration import SCAN_COUNT, Step, migrate_keys

from .dbstate import Set, dump, seed
from .task_state import KEYS, NOW, Q, task
from .test_inspector import QUEUE

LAYOUT = KEYS.layout
IDLE = KEYS.queue("idle")


@pytest.fixture
def client(r, redis_url, clock):
    """A taskq Client on the test's clock (pytest-django's ``client`` is not used here)."""
    with Client(redis_url, clock=clock) as c:
        yield c


def test_layout_is_1_and_the_key_is_tq_layout():
    assert LAYOUT_VERSION == 1
    assert LAYOUT == "tq:layout"


def test_first_write_on_an_empty_keyspace_stamps_it(r, client):
    client.enqueue("email", {"to": "ada"})
    assert r.get(LAYOUT) == b"1"


def test_bad_input_does_not_stamp(r, client):
    with pytest.raises(ValueError):
        client.enqueue("", {})
    assert dump(r) == {}


def test_unstamped_keyspace_with_our_keys_is_layout_1_and_stamped(r, client):
    client.enqueue("email", {"to": "ada"})
    r.delete(LAYOUT)  # as a keyspace written before the stamp existed
    fresh = Client(conn=client.broker.conn, clock=FakeClock(NOW))  # a process that has not checked the layout yet
    fresh.enqueue("email", {"to": "bob"})
    assert r.get(LAYOUT) == b"1"
    assert r.llen(Q.pending) == 2


@pytest.mark.parametrize("stamp", ["2", "99"])
def test_client_refuses_a_newer_layout_and_writes_nothing(r, client, stamp):
    r.set(LAYOUT, stamp)
    with pytest.raises(LayoutVersionError) as refused:
        client.enqueue("email", {"to": "ada"})
    assert (refused.value.found, refused.value.expected) == (int(stamp), 1)
    assert f"key layout {stamp}" in str(refused.value) and "layout 1" in str(refused.value)
    assert refused.value.code == "layout_mismatch"
    with pytest.raises(LayoutVersionError):
        client.enqueue_many([("email", {"to": "bob"})])
    assert dump(r) == {LAYOUT: stamp}


def test_async_client_refuses_a_newer_layout(r, redis_url):
    r.set(LAYOUT, "2")

    async def main():
        async with AsyncClient(redis_url, clock=FakeClock(NOW)) as client:
            await client.enqueue("email", {"to": "ada"})

    with pytest.raises(LayoutVersionError, match="key layout 2"):
        asyncio.run(main())
    assert dump(r) == {LAYOUT: "2"}


def test_a_stamp_that_is_not_a_version_is_refused(r, client):
    r.set(LAYOUT, "v1")
    with pytest.raises(LayoutVersionError, match="not a version number"):
        client.enqueue("email", {})
    assert dump(r) == {LAYOUT: "v1"}


# -- a newer release (played by ``expected=2``) on the keyspaces it may meet --------------------------------------


def test_newer_release_stamps_an_empty_keyspace(r, broker):
    assert broker.check_layout("test", expected=2) == 2
    assert dump(r) == {LAYOUT: "2"}


def test_newer_release_refuses_an_unstamped_keyspace_that_holds_keys(r, broker):
    r.sadd(KEYS.queues, "default")
    with pytest.raises(LayoutVersionError, match="migrate-keys") as refused:
        broker.check_layout("test", expected=2)
    assert (refused.value.found, refused.value.expected) == (1, 2)
    assert r.get(LAYOUT) is None  # stamping 2 would claim a conversion nobody made


def test_newer_release_refuses_an_older_stamp(r, broker):
    r.set(LAYOUT, "1")
    with pytest.raises(LayoutVersionError, match="key layout 1, but this taskq reads and writes layout 2.*migrate"):
        broker.check_layout("test", expected=2)


# -- the message version ------------------------------------------------------------------------------------------


def test_messages_carry_version_1():
    encoded = TaskMessage("a", "email", b"{}", "default", created_ms=5).encode_options()
    assert json.loads(encoded) == {"v": 1, "created": 5}


@pytest.mark.parametrize("created", [1, 5, 1764193811000, 2**53])
def test_default_options_read_without_json_as_json_reads_them(created):
    """A task with every option at its default is read without json.loads (the worker decodes every task it runs);
    the message is the one json.loads of the same bytes gives."""
    encoded = encode_default_options(created)
    assert json.loads(encoded) == {"v": 1, "created": created}
    fast = TaskMessage.decode("a", "default", b"email", b"{}", encoded)
    spaced = json.dumps({"v": 1, "created": created}).encode()  # not the exact form: read by json.loads
    assert fast == TaskMessage.decode("a", "default", b"email", b"{}", spaced)
    assert fast == TaskMessage("a", "email", b"{}", "default", created_ms=created)


@pytest.mark.parametrize(
    "options", [b'{"v":1,"created":05}', b'{"v":1,"created":-5}', b'{"v":1,"created":5 }', b'{"v":1,"created":}']
)
def test_options_that_only_look_like_the_default_form_are_read_as_json_reads_them(options):
    try:
        expected = json.loads(options)["created"]
    except ValueError:  # a leading zero, no number: a record no reader can decode
        with pytest.raises(ValueError):
            TaskMessage.decode("a", "default", b"email", b"{}", options)
    else:
        assert TaskMessage.decode("a", "default", b"email", b"{}", options).created_ms == expected


def test_an_unversioned_message_reads_as_version_1():
    message = TaskMessage.decode("a", "default", b"email", b"{}", b'{"created":5,"max_retry":3}')
    assert (message.max_retry, message.created_ms) == (3, 5)


@pytest.mark.parametrize("version", [2, "1", None])
def test_a_newer_or_malformed_message_version_is_refused(version):
    options = json.dumps({"v": version, "created": 5}).encode()
    with pytest.raises(MessageVersionError, match="message version") as refused:
        TaskMessage.decode("a", "default", b"email", b"{}", options)
    assert isinstance(refused.value, ValueError)  # so every reader treats it as a record it cannot decode


# -- migrate_keys -------------------------------------------------------------------------------------------------


def test_migrate_an_unstamped_keyspace_dry_run_then_real_then_again(r, client, broker):
    client.enqueue("email", {"to": "ada"})
    r.delete(LAYOUT)
    before = dump(r)

    dry = migrate_keys(broker, dry_run=True)
    assert (dry.before, dry.after, dry.dry_run) == (None, 1, True)
    assert dry.changes == ["stamp layout 1 (the keyspace holds taskq keys from before the stamp)"]
    assert dump(r) == before

    real = migrate_keys(broker)
    assert real.changes == dry.changes
    assert dump(r) == {**before, LAYOUT: "1"}

    again = migrate_keys(broker)
    assert (again.before, again.after, again.changes) == (1, 1, [])
    assert dump(r) == {**before, LAYOUT: "1"}


def test_migrate_an_empty_keyspace_says_so(r, broker):
    assert migrate_keys(broker).changes == ["stamp layout 1 (the keyspace holds no taskq keys)"]
    assert dump(r) == {LAYOUT: "1"}


def test_migrate_finds_a_key_of_ours_past_the_first_scan_step(r, broker):
    """The SCAN for keys of ours goes on past steps that find none (another application's keys come first)."""
    r.mset({f"other-app:{n}": "x" for n in range(3 * SCAN_COUNT)})
    r.set(Q.paused, "1")  # one key of ours, beside thousands of others
    assert migrate_keys(broker, dry_run=True).changes == [
        "stamp layout 1 (the keyspace holds taskq keys from before the stamp)"
    ]
    r.delete(Q.paused)
    assert migrate_keys(broker, dry_run=True).changes == ["stamp layout 1 (the keyspace holds no taskq keys)"]


def test_migrate_refuses_a_newer_keyspace(r, broker):
    r.set(LAYOUT, "3")
    with pytest.raises(LayoutVersionError, match="key layout 3"):
        migrate_keys(broker)
    assert dump(r) == {LAYOUT: "3"}


def rename_pending(broker: Broker, dry_run: bool) -> list[str]:
    """A step as a real layout change would write one: idempotent, and silent under dry_run."""
    old, new = Q.pending, Q.base + "ready"
    if not broker.send("migrate", "exists", old):
        return []
    if not dry_run:
        broker.send("migrate", "rename", old, new)
    return [f"rename {old} -> {new}"]


STEPS = {1: Step(2, "pending lists are called ready", rename_pending)}


def test_migrate_runs_registered_steps_in_order_and_stamps_each(r, client, broker):
    client.enqueue("email", {"to": "ada"})
    before = dump(r)

    dry = migrate_keys(broker, dry_run=True, target=2, steps=STEPS)
    assert dry.changes == ["layout 1 -> 2: pending lists are called ready", f"  rename {Q.pending} -> {Q.base}ready"]
    assert dump(r) == before

    real = migrate_keys(broker, target=2, steps=STEPS)
    assert (real.before, real.after, real.changes) == (1, 2, dry.changes)
    after = dump(r)
    assert after[LAYOUT] == "2" and Q.pending not in after and after[Q.base + "ready"] == before[Q.pending]

    assert migrate_keys(broker, target=2, steps=STEPS).changes == []
    assert dump(r) == after
    # and today's code now refuses the keyspace
    with pytest.raises(LayoutVersionError, match="key layout 2"):
        Client(conn=broker.conn).enqueue("email", {})


def test_migrate_without_a_step_names_the_gap(r, broker):
    r.set(LAYOUT, "1")
    with pytest.raises(EngineError, match="no migration from key layout 1 to 2"):
        migrate_keys(broker, target=2, steps={})
    assert dump(r) == {LAYOUT: "1"}


# -- the inspector's operator actions -----------------------------------------------------------------------------

INSPECTED = QUEUE | {"tq:queues": Set({"default", "idle"}), IDLE.task("i1"): task("pending"), IDLE.pending: ["i1"]}

#: Every action of the Inspector (what the console, the admin and the CLI call), on tasks it may act on.
ACTIONS: dict[str, Callable[[Inspector], object]] = {
    "pause_queue": lambda i: i.pause_queue("idle"),
    "unpause_queue": lambda i: i.unpause_queue("default"),
    "delete_queue": lambda i: i.delete_queue("idle", force=True),
    "delete_task": lambda i: i.delete_task("default", "p1"),
    "run_task": lambda i: i.run_task("default", "x1"),
    "archive_task": lambda i: i.archive_task("default", "s1"),
    "cancel_task": lambda i: i.cancel_task("default", "a1"),
    "delete_all": lambda i: i.delete_all("default", "completed"),
    "run_all": lambda i: i.run_all("default", "retry"),
    "archive_all": lambda i: i.archive_all("default", "pending"),
    "cancel_all": lambda i: i.cancel_all("default"),
}


@pytest.fixture
def cancels(r) -> Iterator[Callable[[], list[bytes]]]:
    """The cancel requests published on the test database's channel, read after the action."""
    pubsub = r.pubsub()
    pubsub.subscribe(KEYS.cancel_channel(int(r.connection_pool.connection_kwargs.get("db", 0) or 0)))
    assert pubsub.get_message(timeout=10)["type"] == "subscribe"

    def heard() -> list[bytes]:
        messages = []
        while (message := pubsub.get_message(ignore_subscribe_messages=True, timeout=0.2)) is not None:
            messages.append(message["data"])
        return messages

    yield heard
    pubsub.close()


@pytest.mark.parametrize("action", ACTIONS)
def test_inspector_actions_refuse_a_newer_layout_and_change_nothing(r, inspector, cancels, action):
    seed(r, INSPECTED | {LAYOUT: "2"})
    before = dump(r)
    with pytest.raises(LayoutVersionError) as refused:
        ACTIONS[action](inspector)
    assert (refused.value.found, refused.value.expected) == (2, 1)
    assert "key layout 2, but this taskq reads and writes layout 1" in str(refused.value)
    assert refused.value.op.startswith("inspector.")
    assert dump(r) == before
    assert cancels() == []


@pytest.mark.parametrize("action", ACTIONS)
def test_inspector_actions_act_on_our_layout_and_leave_an_unstamped_keyspace_unstamped(r, inspector, cancels, action):
    """The same calls do act on layout 1; they check the stamp but never write it (table tests compare every key)."""
    seed(r, INSPECTED)
    ACTIONS[action](inspector)
    after = dump(r)
    assert after != INSPECTED or cancels(), "the action did nothing"
    assert LAYOUT not in after


def test_the_inspector_checks_the_layout_again_after_layout_recheck_seconds(r, redis_url):
    seed(r, INSPECTED | {LAYOUT: "1"})
    trusting, rechecking = Inspector(redis_url, layout_recheck=3600), Inspector(redis_url, layout_recheck=0)
    try:
        trusting.pause_queue("idle")
        rechecking.unpause_queue("default")
        r.set(LAYOUT, "2")  # migrate-keys moved the keyspace on meanwhile
        trusting.unpause_queue("idle")  # within its recheck time, it trusts its last check
        with pytest.raises(LayoutVersionError, match="key layout 2"):
            rechecking.pause_queue("default")
        assert not r.exists(Q.paused)
    finally:
        trusting.broker.close()
        rechecking.broker.close()
