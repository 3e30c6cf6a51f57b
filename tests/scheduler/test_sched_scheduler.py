"""Schedulers against real Redis with a FakeClock: exactly one enqueue per tick with three schedulers (one of them
killed mid-run), missed-tick policies, first sight of an entry, entry ids, heartbeats and history."""

from __future__ import annotations

import threading

import pytest
from scheduler_support import START

from taskq.queues.engine import Inspector, TaskIdConflictError, ValidationError, schedule
from taskq.queues.engine.clock import to_ms
from taskq.queues.engine.periodic import make_entry
from taskq.queues.engine.scheduler_store import SchedulerStore


def pending_ids(r, queue="default"):
    return sorted(i.decode() for i in r.lrange(f"tq:{{{queue}}}:pending", 0, -1))


def rounds(schedulers, clock, seconds, step=1.0, concurrently=True):
    """Move the clock ``step`` at a time for ``seconds``; every scheduler runs one round per step, at once."""
    for _ in range(int(seconds / step)):
        clock.advance(step)
        if concurrently:
            threads = [threading.Thread(target=s.run_once) for s in schedulers]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            for s in schedulers:
                s.run_once()


class Killed(BaseException):
    """Stands for SIGKILL: not an Exception, so nothing in the scheduler catches it."""


class DyingStore(SchedulerStore):
    """A store whose process dies at the n-th fire: before the script reached Redis, or right after it ran."""

    def __init__(self, broker, die_at: int, after_script: bool) -> None:
        super().__init__(broker)
        self.fires = 0
        self.die_at = die_at
        self.after_script = after_script

    def fire(self, entry, tick, actor="scheduler"):
        self.fires += 1
        if self.fires == self.die_at:
            if self.after_script:
                try:
                    super().fire(entry, tick, actor)
                except TaskIdConflictError:
                    pass  # another scheduler won the tick: this one dies all the same
            raise Killed()
        return super().fire(entry, tick, actor)


@pytest.mark.parametrize("after_script", [False, True], ids=["killed-before-enqueue", "killed-after-enqueue"])
def test_three_schedulers_enqueue_each_tick_exactly_once_even_when_one_dies(
    r, clock, registry, make_scheduler, make_store, after_script
):
    every = schedule("@every 10s", "tick", {"n": 1}, registry=registry)
    cron = schedule("* * * * *", "minute", registry=registry, queue="cron")
    store = make_store()
    dying = DyingStore(store.broker, die_at=4, after_script=after_script)
    schedulers = [make_scheduler(), make_scheduler(), make_scheduler(store=dying)]
    rounds(schedulers, clock, 1)  # first sight: baselines
    alive = list(schedulers)
    for second in range(300):
        clock.advance(1)
        threads = []
        # Started in turn order, the same scheduler would always look last and find each tick already fired, so the
        # dying one might never reach its fatal fire: each round starts another one first.
        turn = second % len(alive)
        for s in alive[turn:] + alive[:turn]:

            def run(s=s):
                try:
                    s.run_once()
                except Killed:
                    alive.remove(s)  # this "process" is gone for good

            threads.append(threading.Thread(target=run))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(alive) == 2 and dying.fires == 4

    first, last = START + 1, START + 301
    expected_every = [every.task_id(to_ms(t)) for t in every.schedule.ticks(first, 100) if t <= last]
    expected_cron = [cron.task_id(to_ms(t)) for t in cron.schedule.ticks(first, 10) if t <= last]
    assert len(expected_every) == 30 and len(expected_cron) == 5
    assert pending_ids(r) == sorted(expected_every)  # every tick once, none twice, none lost
    assert pending_ids(r, "cron") == sorted(expected_cron)
    history = SchedulerStore(store.broker).history_of(every, 1000)
    assert [h.task_id for h in history] == list(reversed(expected_every))


def test_a_late_twin_is_refused_even_after_the_task_is_gone(r, clock, store):
    entry = make_entry("@every 10s", "tick")
    store.baseline(entry, clock.now())
    tick = entry.schedule.next_after(clock.now())
    clock.set(tick)
    assert store.fire(entry, tick) == "enqueued"
    r.delete(f"tq:{{default}}:t:{entry.task_id(to_ms(tick))}")  # it ran and was deleted
    r.delete("tq:{default}:pending")
    with pytest.raises(TaskIdConflictError, match="handled already"):
        store.fire(entry, tick)
    with pytest.raises(TaskIdConflictError):
        store.fire(entry, tick - 10)  # an older tick too
    assert pending_ids(r) == []


def test_skip_policy_drops_ticks_missed_while_no_scheduler_ran(r, clock, registry, make_scheduler):
    entry = schedule("*/5 * * * *", "report", registry=registry, missed="skip")
    scheduler = make_scheduler(grace=60)
    scheduler.run_once()  # baseline at START
    clock.advance(3 * 3600 + 90)  # down for three hours: the latest tick was 90 s ago, past the grace
    assert scheduler.consider(entry, clock.now(), scheduler.store.last_ticks([entry])[entry.id]) == "skipped"
    assert pending_ids(r) == []
    clock.advance(210)  # the next tick is on time again
    scheduler.run_once()
    assert pending_ids(r) == [entry.task_id(to_ms(START + 3 * 3600 + 300))]


def test_skip_policy_still_runs_a_tick_reached_within_the_grace(r, clock, registry, make_scheduler):
    entry = schedule("*/5 * * * *", "report", registry=registry, missed="skip")
    scheduler = make_scheduler(grace=60)
    scheduler.run_once()
    clock.advance(300 + 45)  # 45 s late (a restart): not missed
    scheduler.run_once()
    assert pending_ids(r) == [entry.task_id(to_ms(START + 300))]


def test_run_once_policy_runs_the_latest_missed_tick_once(r, clock, registry, make_scheduler):
    entry = schedule("*/5 * * * *", "report", registry=registry, missed="run_once")
    scheduler = make_scheduler(grace=60)
    scheduler.run_once()
    clock.advance(3 * 3600 + 90)
    scheduler.run_once()
    latest = START + 3 * 3600
    assert pending_ids(r) == [entry.task_id(to_ms(latest))]  # one task for 36 missed ticks
    scheduler.run_once()
    make_scheduler().run_once()  # a second scheduler coming up does not run it again
    assert len(pending_ids(r)) == 1
    assert scheduler.store.last_ticks([entry])[entry.id] == latest


def test_a_new_entry_does_not_run_ticks_from_before_it_was_seen(r, clock, registry, make_scheduler):
    schedule("@every 10s", "tick", registry=registry, missed="run_once")
    scheduler = make_scheduler()
    clock.advance(5)
    scheduler.run_once()
    assert pending_ids(r) == []
    clock.advance(5)  # START + 10: a tick
    scheduler.run_once()
    assert len(pending_ids(r)) == 1


def test_entry_ids_are_deterministic_and_cover_the_definition():
    one = make_entry("*/5 * * * *", "report", {"a": 1}, queue="low", options={"max_retry": 3})
    assert make_entry("*/5  *  * * *", "report", {"a": 1}, queue="low", options={"max_retry": 3}).id == one.id
    assert (
        make_entry("*/5 * * * *", "report", {"a": 1}, queue="low", options={"max_retry": 3}, missed="run_once").id
        == one.id
    )  # the policy is not part of what is enqueued
    others = [
        make_entry("*/10 * * * *", "report", {"a": 1}, queue="low", options={"max_retry": 3}),
        make_entry("*/5 * * * *", "report2", {"a": 1}, queue="low", options={"max_retry": 3}),
        make_entry("*/5 * * * *", "report", {"a": 2}, queue="low", options={"max_retry": 3}),
        make_entry("*/5 * * * *", "report", {"a": 1}, queue="high", options={"max_retry": 3}),
        make_entry("*/5 * * * *", "report", {"a": 1}, queue="low", options={"max_retry": 4}),
        make_entry("*/5 * * * *", "report", {"a": 1}, queue="low", options={"max_retry": 3}, tz="Europe/Paris"),
    ]
    assert len({one.id, *(o.id for o in others)}) == 7


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"task_id": "x"}, "cannot be used on a periodic task"),
        ({"process_at": 5}, "cannot be used on a periodic task"),
        ({"max_retry": -1}, "max_retry"),
        ({"timeout": "soon"}, "timeout"),
        ({"queue": "a{b}"}, "may not contain"),
        ({"tz": "Nowhere/Land"}, "unknown time zone"),
        ({"missed": "sometimes"}, "missed must be one of"),
    ],
)
def test_schedule_validates_everything(registry, kwargs, message):
    with pytest.raises(ValidationError, match=message):
        schedule("* * * * *", "report", registry=registry, **kwargs)
    assert len(registry) == 0


def test_unique_entries_record_a_duplicate_instead_of_piling_up(r, clock, registry, make_scheduler):
    entry = schedule("@every 10s", "slow", registry=registry, unique=3600)
    scheduler = make_scheduler()
    scheduler.run_once()
    rounds([scheduler], clock, 30, step=10)
    assert len(pending_ids(r)) == 1  # the first run still holds its lock
    outcomes = [h.outcome for h in scheduler.store.history_of(entry)]
    assert outcomes == ["duplicate", "duplicate", "enqueued"]


def test_heartbeat_entries_and_history_are_visible(r, clock, registry, make_scheduler, redis_url):
    entry = schedule("@every 10s", "tick", {"x": 1}, registry=registry, queue="q1", max_retry=2)
    scheduler = make_scheduler(heartbeat_interval=5)
    scheduler.run_once()
    rounds([scheduler], clock, 20, step=10)
    store = scheduler.store
    (info,) = store.entries()
    assert info.id == entry.id and info.schedulers == [scheduler.id]
    assert info.previous is not None and info.previous.tick.timestamp() == START + 20
    assert info.next_run.timestamp() == START + 30
    assert [s.id for s in store.schedulers()] == [scheduler.id]
    assert len(store.history(entry.id)) == 2
    task = Inspector(redis_url).get_task("q1", info.previous.task_id)
    assert (task.type, task.payload, task.max_retry) == ("tick", b'{"x":1}', 2)
    scheduler.stop()
    assert store.schedulers() == []
    clock.advance(60)
    assert store.entries() == []  # no scheduler runs it and the admin does not define it


def test_admin_entries_are_picked_up_without_restart(r, clock, make_scheduler):
    scheduler = make_scheduler()
    scheduler.run_once()
    store = scheduler.store
    entry = make_entry("@every 10s", "from-admin", source="admin", name="ping")
    store.write_config([entry])
    clock.advance(1)
    scheduler.run_once()  # sees the new version: baseline
    assert [e.id for e in scheduler.entries()] == [entry.id]
    rounds([scheduler], clock, 10, step=10)
    assert len(pending_ids(r)) == 1
    store.write_config([])  # removed in the admin
    rounds([scheduler], clock, 30, step=10)
    assert scheduler.entries() == [] and len(pending_ids(r)) == 1
