"""The cron CLI and page work against real schedulers, two of them at once. A paused code entry enqueues nothing
for three ticks, and resumes.

Two Scheduler instances (each on its own connection, as two ``taskscheduler`` processes would be) share one code
entry, ``@every 1s``, and a FakeClock near the real time (the CLI and the page read heartbeats against the system
clock). Each tick both run their round at the same moment, in two threads; the tick is then enqueued once however
the two raced. The operator pauses the entry with the CLI and resumes it from the page.
"""

from __future__ import annotations

import io
import json
import threading
import time

import pytest

from taskq.queues.cli import main
from taskq.queues.engine import FakeClock, ScheduleRegistry, schedule
from tests.console.console_support import logged_in, make_user
from taskq.worker.scheduler import Scheduler, build

pytestmark = pytest.mark.django_db

Q = "ticks"


def cli(*argv: str) -> dict:
    stdout, stderr = io.StringIO(), io.StringIO()
    assert main([*argv, "--json"], stdout=stdout, stderr=stderr) == 0, stderr.getvalue()
    return json.loads(stdout.getvalue())


@pytest.fixture
def schedulers(engine, redis_url):
    registry = ScheduleRegistry()
    entry = schedule("@every 1s", "health:ping", {"n": 1}, queue=Q, registry=registry)
    clock = FakeClock(float(int(time.time())))
    pair = [
        build(redis_url, "tq", registry=registry, clock=clock, scheduler_id=f"sched-{n}", heartbeat_interval=0)
        for n in (1, 2)
    ]
    yield entry, clock, pair
    for scheduler in pair:
        scheduler.store.broker.close()


def tick(clock: FakeClock, pair: list[Scheduler]) -> None:
    """One second on, and both schedulers run their round at once."""
    clock.advance(1)
    start = threading.Barrier(len(pair))
    failures: list[BaseException] = []

    def round_of(scheduler: Scheduler) -> None:
        start.wait()
        try:
            scheduler.run_once()
        except BaseException as exc:  # reported by the test thread below
            failures.append(exc)

    threads = [threading.Thread(target=round_of, args=(s,)) for s in pair]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures


def runs(entry) -> list[str]:
    """The task ids of the entry's runs, newest first, as ``tasks cron history`` reads them."""
    return [h["task_id"] for h in cli("cron", "history", entry.id)["history"]]


def test_a_paused_code_entry_enqueues_nothing_for_three_ticks_and_resumes(schedulers, engine):
    entry, clock, pair = schedulers
    for scheduler in pair:
        scheduler.run_once()  # both see the entry; the first sight is its baseline
    tick(clock, pair)
    (doc,) = cli("cron", "ls")["entries"]
    assert (doc["id"], doc["source"], doc["schedulers"]) == (entry.id, "code", ["sched-1", "sched-2"])
    assert runs(entry) == [entry.task_id(int(clock.now() * 1000))]  # one run, not two
    assert engine.queue_info(Q).pending == 1

    assert cli("cron", "pause", entry.id) == {"id": entry.id, "paused": True}
    for _ in range(3):
        tick(clock, pair)
        assert engine.queue_info(Q).pending == 1 and len(runs(entry)) == 1
    (doc,) = cli("cron", "ls")["entries"]
    assert doc["paused"]["by"].startswith("cli:")
    page = logged_in(make_user("olga", "operate_console"))
    body = page.get("/schedulers/").content.decode()
    assert f'action="/schedulers/{entry.id}/resume/"' in body and "paused; would run:" in body

    assert page.post(f"/schedulers/{entry.id}/resume/").status_code == 302
    tick(clock, pair)
    resumed = entry.task_id(int(clock.now() * 1000))
    assert runs(entry)[0] == resumed and len(runs(entry)) == 2  # the next tick, none of the paused ones
    assert engine.queue_info(Q).pending == 2
    tick(clock, pair)
    assert len(runs(entry)) == 3
