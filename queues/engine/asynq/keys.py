"""Every Redis key name of asynq's layout (v0.25-0.26), built in one place.

asynq fixes its prefix (``asynq``) and puts the queue name in Cluster hash-tag braces, so a queue's keys share one
slot. Global keys (the queue set, servers, workers, schedulers, the cancel channel) sit outside any queue.

It deliberately shares its name with ``queues/engine/keys.py``, whose job it does over asynq's keys.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from ..clock import utc_day

PREFIX = "asynq"
ALL_QUEUES = f"{PREFIX}:queues"  # SET of queue names
ALL_SERVERS = f"{PREFIX}:servers"  # ZSET of server-info keys, scored by their expiry (unix seconds)
ALL_WORKERS = f"{PREFIX}:workers"  # ZSET of workers keys, scored likewise
ALL_SCHEDULERS = f"{PREFIX}:schedulers"  # ZSET of scheduler-entries keys, scored likewise
CANCEL_CHANNEL = f"{PREFIX}:cancel"  # PUBLISH a task id here to cancel its running handler

#: The task states asynq writes in a task hash's ``state`` field.
STATES = ("pending", "active", "scheduled", "retry", "archived", "completed", "aggregating")


def server_info_key(host: str, pid: int, server_id: str) -> str:
    return f"{PREFIX}:servers:{{{host}:{pid}:{server_id}}}"


def workers_key(host: str, pid: int, server_id: str) -> str:
    return f"{PREFIX}:workers:{{{host}:{pid}:{server_id}}}"


def scheduler_entries_key(scheduler_id: str) -> str:
    return f"{PREFIX}:schedulers:{{{scheduler_id}}}"


def scheduler_history_key(entry_id: str) -> str:
    return f"{PREFIX}:scheduler_history:{entry_id}"


def day(when: datetime) -> str:
    """The UTC date of a daily counter's key, as asynq formats it (``YYYY-MM-DD``, as taskq's own counters)."""
    return utc_day(when.timestamp())


@dataclass(frozen=True)
class AsynqQueueKeys:
    """Key names of one asynq queue."""

    queue: str

    @cached_property
    def base(self) -> str:
        # Built once per instance: every transition asks a queue's keys for several names.
        return f"{PREFIX}:{{{self.queue}}}:"

    @property
    def task_prefix(self) -> str:
        return self.base + "t:"

    def task(self, task_id: str) -> str:
        return self.task_prefix + task_id

    def state(self, state: str) -> str:
        """The key that lists tasks of ``state``: a LIST for pending and active, a ZSET for the rest (aggregating
        tasks sit in their group's ZSET instead: see ``group``)."""
        return self.base + state

    pending = property(lambda self: self.base + "pending")
    active = property(lambda self: self.base + "active")
    scheduled = property(lambda self: self.base + "scheduled")
    retry = property(lambda self: self.base + "retry")
    archived = property(lambda self: self.base + "archived")
    completed = property(lambda self: self.base + "completed")
    lease = property(lambda self: self.base + "lease")
    paused = property(lambda self: self.base + "paused")
    processed_total = property(lambda self: self.base + "processed")
    failed_total = property(lambda self: self.base + "failed")
    groups = property(lambda self: self.base + "groups")
    aggregation_sets = property(lambda self: self.base + "aggregation_sets")

    def processed(self, when: datetime) -> str:
        return self.processed_on(day(when))

    def failed(self, when: datetime) -> str:
        return self.failed_on(day(when))

    def processed_on(self, date: str) -> str:
        """The counter of tasks processed on ``date`` (YYYY-MM-DD, UTC)."""
        return f"{self.base}processed:{date}"

    def failed_on(self, date: str) -> str:
        """The counter of tasks failed on ``date`` (YYYY-MM-DD, UTC)."""
        return f"{self.base}failed:{date}"

    def unique(self, task_type: str, payload: bytes | None) -> str:
        """asynq's unique lock: the type and the MD5 of the payload (Go writes no digest for a nil payload; an empty
        one still gets the digest of nothing, which a Python caller cannot tell from nil, so b"" counts as given)."""
        digest = "" if payload is None else hashlib.md5(payload, usedforsecurity=False).hexdigest()
        return f"{self.base}unique:{task_type}:{digest}"

    @property
    def group_prefix(self) -> str:
        """What a group's key starts with: the group's name follows (see ``group``)."""
        return self.base + "g:"

    def group(self, group: str) -> str:
        return self.group_prefix + group

    def aggregation_set(self, group: str, set_id: str) -> str:
        return f"{self.group(group)}:{set_id}"
