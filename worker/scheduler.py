"""The periodic scheduler: enqueues the task of every entry (defined in code or in the admin) at each tick.

Any number of schedulers may run at once for availability. Each round every scheduler looks at every entry; the
tick it would fire is enqueued by one script that also moves the entry's last handled tick (``fire_tick``), so
exactly one of them enqueues it and the others are refused. A scheduler killed mid-round loses nothing: it either
ran the script for a tick or it did not, and the others fire what it did not.

An entry an operator paused (``tasks cron pause``, the Schedulers page) is honoured inside ``fire_tick``: its
ticks are marked handled without a task, so no scheduler enqueues one after the pause returned, and a resumed
entry runs from its next tick on.

Ticks missed while no scheduler ran (or reached later than ``grace`` seconds after they were due) follow the
entry's policy: ``skip`` drops them, ``run_once`` enqueues the latest of them once. An entry seen for the first
time starts from now: its past ticks were never missed.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from typing import Any

from taskq.queues.engine import Clock, EngineError, RedisUnavailableError, TaskIdConflictError, ValidationError
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.clock import to_ms
from taskq.queues.engine.periodic import Entry, ScheduleRegistry, schedules
from taskq.queues.engine.policies import PolicyCache
from taskq.queues.engine.scheduler_store import SchedulerStore
from taskq.queues.engine.settings import DEFAULTS, TaskqSettings

from .component import Component
from .layout_guard import LayoutGuard
from .stop_signals import run_until_signalled

log = logging.getLogger("taskq.worker.scheduler")


def new_scheduler_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Scheduler(Component):
    name = "scheduler"

    def __init__(
        self,
        store: SchedulerStore,
        registry: ScheduleRegistry = schedules,
        *,
        interval: float = DEFAULTS.scheduler_interval,
        grace: float = DEFAULTS.scheduler_grace_seconds,
        heartbeat_interval: float = 5.0,
        follow_admin: bool = True,
        scheduler_id: str | None = None,
    ) -> None:
        super().__init__(interval)
        self.store = store
        self.registry = registry
        self.clock: Clock = store.broker.clock
        self.grace = grace
        self.heartbeat_interval = heartbeat_interval
        self.follow_admin = follow_admin
        self.id = scheduler_id or new_scheduler_id()
        self.started = self.clock.now()
        self.admin_entries: list[Entry] = []
        self._admin_version: int | None = None
        self._next_heartbeat = 0.0
        self._reported: set[tuple[str, int]] = set()  # skipped ticks already logged
        self.layout = LayoutGuard(store.broker, "scheduler")

    # -- one round --------------------------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """Code entries, then admin entries that are not the very same entry (same id)."""
        found = {e.id: e for e in self.registry.entries()}
        for entry in self.admin_entries:
            found.setdefault(entry.id, entry)
        return list(found.values())

    def refresh(self) -> None:
        """Re-read the admin's entries when their version moved (one GET per round otherwise)."""
        if not self.follow_admin:
            return
        if self._admin_version is not None and self.store.config_version() == self._admin_version:
            return
        self.admin_entries, self._admin_version = self.store.read_config()
        log.info(
            "%d admin-defined periodic entr%s (version %d)",
            len(self.admin_entries),
            "y" if len(self.admin_entries) == 1 else "ies",
            self._admin_version,
        )

    def run_once(self) -> None:
        if not self.layout.check():  # the keyspace moved to another key layout: write nothing, stop
            return
        self.refresh()
        entries = self.entries()
        now = self.clock.now()
        last = self.store.last_ticks(entries)
        for entry in entries:
            try:
                self.consider(entry, now, last[entry.id])
            except RedisUnavailableError:
                raise
            except EngineError as exc:  # one bad entry (say, a payload over a policy's limit) must not stop the rest
                log.error("periodic entry %s (%s %s): %s", entry.id, entry.spec, entry.type, exc)
        if now >= self._next_heartbeat:
            self.heartbeat(entries)
            self._next_heartbeat = now + self.heartbeat_interval

    def consider(self, entry: Entry, now: float, last: float | None) -> str | None:
        """Fire the entry's due tick, if any; returns what happened (for tests and logs)."""
        if last is None:
            self.store.baseline(entry, now)
            return "baseline"
        tick = entry.schedule.latest_between(last, now)
        if tick is None:
            return None
        if entry.missed == "skip" and now - tick > self.grace:
            key = (entry.id, to_ms(tick))
            if key not in self._reported:
                self._reported.add(key)
                log.warning(
                    "periodic entry %s (%s %s): skipping tick(s) up to %s missed while no scheduler ran",
                    entry.id,
                    entry.spec,
                    entry.type,
                    to_ms(tick),
                )
            return "skipped"
        try:
            outcome = self.store.fire(entry, tick, actor=f"scheduler:{self.id}")
        except TaskIdConflictError:
            return "taken"  # another scheduler fired it first
        # A paused entry's ticks come every round it stays paused: not worth a line each.
        level = logging.DEBUG if outcome == "paused" else logging.INFO
        log.log(level, "periodic entry %s (%s %s): tick %d %s", entry.id, entry.spec, entry.type, to_ms(tick), outcome)
        return outcome

    def heartbeat(self, entries: list[Entry]) -> None:
        info = {"id": self.id, "host": socket.gethostname(), "pid": os.getpid(), "started": to_ms(self.started)}
        self.store.write_scheduler(info, entries, ttl=max(3 * self.heartbeat_interval, 2 * self.interval))

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        try:
            self.store.clear_scheduler(self.id)
        except EngineError as exc:
            log.warning("could not deregister scheduler %s: %s", self.id, exc)


def build(
    redis_url: str, prefix: str, *, registry: ScheduleRegistry = schedules, clock: Clock | None = None, **options: Any
) -> Scheduler:
    """A scheduler on its own connection, applying the admin's unique and retention policies as clients do."""
    broker = Broker(redis_url, prefix=prefix, clock=clock)
    store = SchedulerStore(broker, PolicyCache(broker.keys))
    return Scheduler(store, registry, **options)


def from_settings(
    settings: TaskqSettings, *, interval: float | None = None, grace: float | None = None, **options: Any
) -> Scheduler:
    """A scheduler as taskq's settings configure it, with the command line's ``interval`` and ``grace`` over them
    (None: not given). ValidationError for an interval outside (0, 60] seconds or a negative grace."""
    interval = settings.scheduler_interval if interval is None else interval
    grace = settings.scheduler_grace_seconds if grace is None else grace
    if not 0 < interval <= 60 or grace < 0:
        raise ValidationError(
            f"the interval (--interval, TASKS_SCHEDULER_INTERVAL) must be in (0, 60] seconds and the grace (--grace, "
            f"TASKS_SCHEDULER_GRACE_SECONDS) at least 0, got {interval:g} and {grace:g}",
            op="taskscheduler",
        )
    return build(settings.redis_url, settings.key_prefix, interval=interval, grace=grace, **options)


def run(scheduler: Scheduler) -> None:
    """Run until SIGTERM or SIGINT, then deregister. Raises LayoutVersionError, before starting or after stopping,
    for a keyspace at another key layout."""

    def start() -> None:
        scheduler.start()
        entries = scheduler.entries()
        log.info(
            "scheduler %s running %d code entr%s (and the admin's)",
            scheduler.id,
            len(entries),
            "y" if len(entries) == 1 else "ies",
        )

    def stop() -> None:
        scheduler.stop()
        scheduler.store.broker.close()

    scheduler.layout.check_at_start()
    run_until_signalled(start, stop, scheduler.layout.refused)
    scheduler.layout.raise_refusal()
