"""A periodic entry's runs, enqueued by a scheduler and run by a real worker, each record its outcome and run time
in the entry's history: completed (even when the task is deleted on success), failed, archived. The handlers move
the shared FakeClock while they run, so the run time recorded is exactly that move."""

from __future__ import annotations

import pytest
from worker_support import state_of, wait_for

from taskq.queues.engine import FakeClock, ScheduleRegistry, Task, handler, schedule
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.scheduler_store import SchedulerStore
from taskq.worker.scheduler import Scheduler

Q = "cron"


def never(*_args: object) -> float:
    return 10_000.0  # a failed run stays in retry


@pytest.fixture
def scheduler(redis_url, clock: FakeClock):
    broker = Broker(redis_url, clock=clock)
    yield Scheduler(SchedulerStore(broker), ScheduleRegistry(), scheduler_id="sched-1")
    broker.close()


def fire_one(scheduler: Scheduler, clock: FakeClock, entry) -> str:
    """Let the scheduler see the entry (with the others it has), then fire its next tick; returns the task id of
    that run."""
    scheduler.registry.add(entry)
    scheduler.run_once()  # first sight: the baseline
    tick = entry.schedule.next_after(clock.now())
    clock.set(tick)
    scheduler.run_once()
    return entry.task_id(int(tick * 1000))


def the_run(scheduler: Scheduler, entry, task_id: str, outcome: str):
    def recorded():
        runs = [r for r in scheduler.store.history_of(entry) if r.task_id == task_id]
        return runs[0] if runs and runs[0].outcome == outcome else None

    return wait_for(recorded, what=f"{task_id} recorded as {outcome}")


@pytest.mark.parametrize("retention", [0, 60], ids=["deleted-on-success", "kept"])
def test_a_completed_run_is_recorded_with_its_run_time(make_server, registry, scheduler, clock, inspector, retention):
    @handler("cron:ok", registry=registry)
    def ok(task: Task) -> None:
        clock.advance(0.5)

    entry = schedule("@every 10s", "cron:ok", {}, queue=Q, registry=ScheduleRegistry(), retention=retention)
    task_id = fire_one(scheduler, clock, entry)
    make_server(queues={Q: 1})
    run = the_run(scheduler, entry, task_id, "completed")
    assert (run.ran, run.attempts, run.ended_at is not None) == (0.5, 1, True)
    assert state_of(inspector, Q, task_id) == ("completed" if retention else None)


def test_a_failed_run_is_recorded_then_archived_when_its_retries_are_spent(
    make_server, registry, scheduler, clock, inspector
):
    @handler("cron:bad", registry=registry, retry_delay=never)
    def bad(task: Task) -> None:
        clock.advance(0.25)
        raise RuntimeError("boom")

    retried = schedule("@every 10s", "cron:bad", {"n": 1}, queue=Q, registry=ScheduleRegistry(), max_retry=1)
    spent = schedule("@every 10s", "cron:bad", {"n": 2}, queue=Q, registry=ScheduleRegistry(), max_retry=0)
    # Each fire moves the clock 10 s on while the worker runs. A fetch in flight at that moment leases with the
    # time it read before the move: a lease shorter than the move would look expired at once, and the recoverer
    # would end the attempt before its handler does.
    make_server(queues={Q: 1}, lease_seconds=60.0)
    # One run at a time: two handlers moving the shared clock at once would each see both moves.
    retried_id = fire_one(scheduler, clock, retried)
    failed = the_run(scheduler, retried, retried_id, "failed")
    scheduler.registry.clear()
    spent_id = fire_one(scheduler, clock, spent)
    archived = the_run(scheduler, spent, spent_id, "archived")
    assert (failed.ran, failed.attempts) == (0.25, 1)
    assert (archived.ran, archived.attempts) == (0.25, 1)
    assert state_of(inspector, Q, retried_id) == "retry" and state_of(inspector, Q, spent_id) == "archived"
