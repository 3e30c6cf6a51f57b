"""Queue definitions and policies as the engine sees them: what the Django admin defines, mirrored into Redis so
that producers and workers apply it without a database.

* queue definitions: weight, strict-priority rank, concurrency cap and rate limit of each queue (a worker serves
  the defined queues when it is started without ``--queues``; caps and rate limits hold for every worker);
* unique policies: task-type prefix -> default unique TTL (the longest matching prefix wins, as handlers route);
* retention rules: (queue or any, type prefix or any) -> completed retention, archive max size and max age.
  For each value the most specific rule that sets it wins: queue+type, then queue, then type, then the default
  rule. Archive limits are per queue (the archive is), so only queue rules and the default rule carry them.

``PolicyStore`` writes the whole set in one MULTI and bumps a version counter; ``PolicyCache`` keeps a copy and
checks the counter at most once per refresh interval, so an enqueue costs one extra round trip at most once a
second, and a second one only when the policies changed.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from .broker import Broker
from .keys import Keys
from .sans_io import Batch, Command, Flow
from .transitions import ArchiveLimits, RateLimit

log = logging.getLogger("taskq.queues.engine.policies")


@dataclass(frozen=True)
class QueueSpec:
    """One defined queue. ``rank`` orders queues under strict priority (lower first); ``concurrency_cap`` is the
    most tasks of the queue active at once across all workers (0: no cap); ``rate_limit`` the most tasks started
    in any ``rate_period`` seconds across all workers (0: no limit)."""

    name: str
    weight: int = 1
    rank: int = 0
    concurrency_cap: int = 0
    # Group aggregation of the queue (see aggregation.py); None: the worker's defaults (settings).
    group_grace: float | None = None
    group_max_delay: float | None = None
    group_max_size: int | None = None
    rate_limit: int = 0
    rate_period: float = 1.0

    def __post_init__(self) -> None:
        # A bad rate limit raises ValidationError here (a ValueError: from_hashes skips such an entry, warning).
        RateLimit(self.rate_limit, self.rate_period)

    @property
    def rate(self) -> RateLimit:
        return RateLimit(self.rate_limit, self.rate_period)

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"weight": self.weight, "rank": self.rank, "cap": self.concurrency_cap}
        if self.rate_limit:
            doc.update(rate_limit=self.rate_limit, rate_period=self.rate_period)
        for name in ("group_grace", "group_max_delay", "group_max_size"):
            if getattr(self, name) is not None:
                doc[name] = getattr(self, name)
        return doc


@dataclass(frozen=True)
class RetentionRule:
    """A retention rule; ``queue`` or ``type_prefix`` empty means any. ``None`` values are left to less specific
    rules (and, for archive limits, to the engine's ``Limits``)."""

    queue: str = ""
    type_prefix: str = ""
    retention: float | None = None
    archive_max_size: int | None = None
    archive_max_age: float | None = None

    def matches(self, queue: str, task_type: str) -> bool:
        return (not self.queue or self.queue == queue) and task_type.startswith(self.type_prefix)

    def specificity(self) -> tuple[int, int]:
        """queue+type > queue > type > default; among type rules the longer prefix wins."""
        tier = (2 if self.queue else 0) + (1 if self.type_prefix else 0)
        return tier, len(self.type_prefix)


#: How many (queue, type) pairs a PolicySet remembers the defaults of before it starts over.
_MAX_REMEMBERED = 10_000


@dataclass(frozen=True)
class PolicySet:
    """Everything the admin defines, as read from Redis at ``version``."""

    queues: dict[str, QueueSpec] = field(default_factory=dict)
    unique: dict[str, float] = field(default_factory=dict)
    retention: tuple[RetentionRule, ...] = ()
    version: int = 0
    #: (queue, type) -> (unique TTL, retention) as ``task_defaults`` found them; a PolicySet never changes (a new
    #: one replaces it when the admin's policies do), so what it answered once stays true.
    _defaults: dict[tuple[str, str], tuple[float | None, float | None]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def task_defaults(self, queue: str, task_type: str) -> tuple[float | None, float | None]:
        """(``unique_ttl(task_type)``, ``completed_retention(queue, task_type)``), found once per queue and type:
        every enqueue asks for them."""
        key = (queue, task_type)
        found = self._defaults.get(key)
        if found is None:
            if len(self._defaults) >= _MAX_REMEMBERED:
                self._defaults.clear()
            found = self._defaults[key] = (self.unique_ttl(task_type), self.completed_retention(queue, task_type))
        return found

    def unique_ttl(self, task_type: str) -> float | None:
        """The default unique TTL of ``task_type``: the policy of the longest prefix of it, if any."""
        best = max((prefix for prefix in self.unique if task_type.startswith(prefix)), key=len, default=None)
        return None if best is None else self.unique[best]

    def _first(self, rules: list[RetentionRule], value: Callable[[RetentionRule], Any]) -> Any:
        for rule in sorted(rules, key=RetentionRule.specificity, reverse=True):
            if value(rule) is not None:
                return value(rule)
        return None

    def completed_retention(self, queue: str, task_type: str) -> float | None:
        """Seconds a completed task of this queue and type is kept, from the most specific rule that says."""
        found = self._first([r for r in self.retention if r.matches(queue, task_type)], lambda r: r.retention)
        return None if found is None else float(found)

    def archive_limits(self, queue: str) -> ArchiveLimits:
        rules = [r for r in self.retention if not r.type_prefix and (not r.queue or r.queue == queue)]
        return ArchiveLimits(
            self._first(rules, lambda r: r.archive_max_size), self._first(rules, lambda r: r.archive_max_age)
        )

    # -- the Redis form -------------------------------------------------------------------------------------------

    def to_hashes(self) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        queues = {q.name: json.dumps(q.to_doc()) for q in self.queues.values()}
        unique = {prefix: repr(float(ttl)) for prefix, ttl in self.unique.items()}
        retention = {
            json.dumps([r.queue, r.type_prefix]): json.dumps(
                {"retention": r.retention, "archive_max_size": r.archive_max_size, "archive_max_age": r.archive_max_age}
            )
            for r in self.retention
        }
        return queues, unique, retention

    @classmethod
    def from_hashes(
        cls,
        queues: Mapping[bytes, bytes],
        unique: Mapping[bytes, bytes],
        retention: Mapping[bytes, bytes],
        version: int,
    ) -> PolicySet:
        """Parse what ``to_hashes`` wrote. An entry this version cannot read is skipped with a warning, so one bad
        entry never stops producers or workers."""
        specs: dict[str, QueueSpec] = {}
        for name, raw in queues.items():
            try:
                doc = json.loads(raw)
                specs[name.decode()] = QueueSpec(
                    name.decode(),
                    int(doc.get("weight", 1)),
                    int(doc.get("rank", 0)),
                    int(doc.get("cap", 0)),
                    _number(doc.get("group_grace"), float),
                    _number(doc.get("group_max_delay"), float),
                    _number(doc.get("group_max_size"), int),
                    int(doc.get("rate_limit", 0)),
                    float(doc.get("rate_period", 1.0)),
                )
            except (ValueError, TypeError, AttributeError) as exc:
                log.warning("skipping queue definition %r: %s", name, exc)
        ttls: dict[str, float] = {}
        for prefix, raw in unique.items():
            try:
                ttls[prefix.decode()] = float(raw)
            except ValueError as exc:
                log.warning("skipping unique policy %r: %s", prefix, exc)
        rules = []
        for where, raw in retention.items():
            try:
                queue, type_prefix = json.loads(where)
                doc = json.loads(raw)
                rules.append(
                    RetentionRule(
                        str(queue),
                        str(type_prefix),
                        _number(doc.get("retention"), float),
                        _number(doc.get("archive_max_size"), int),
                        _number(doc.get("archive_max_age"), float),
                    )
                )
            except (ValueError, TypeError, AttributeError) as exc:
                log.warning("skipping retention rule %r: %s", where, exc)
        return cls(specs, ttls, tuple(rules), version)


def _number(value: Any, kind: Callable[[Any], Any]) -> Any:
    return None if value is None else kind(value)


def read_flow(keys: Keys) -> Flow:
    """Read the whole set and its version in one MULTI, so a concurrent write is seen entirely or not at all."""
    replies = yield Batch(
        [
            Command("hgetall", (keys.config_queues,)),
            Command("hgetall", (keys.config_unique,)),
            Command("hgetall", (keys.config_retention,)),
            Command("get", (keys.config_version,)),
        ]
    )
    queues, unique, retention, version = replies
    return PolicySet.from_hashes(queues, unique, retention, int(version or 0))


class PolicyStore:
    """Reads and writes the policy set (the Django app writes it; the worker's watcher reads it)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.keys = broker.keys

    def write(self, policies: PolicySet) -> int:
        """Replace the whole set atomically and bump the version; returns the new version."""
        queues, unique, retention = policies.to_hashes()
        hashes: list[tuple[str, dict[Any, Any]]] = [
            (self.keys.config_queues, queues),
            (self.keys.config_unique, unique),
            (self.keys.config_retention, retention),
        ]
        commands = [Command("delete", (self.keys.config_queues, self.keys.config_unique, self.keys.config_retention))]
        commands += [Command("hset", (key,), {"mapping": mapping}) for key, mapping in hashes if mapping]
        commands.append(Command("incr", (self.keys.config_version,)))
        return int(self.broker.execute("policies.write", Batch(commands))[-1])

    def version(self) -> int:
        return int(self.broker.send("policies.version", "get", self.keys.config_version) or 0)

    def read(self) -> PolicySet:
        return cast(PolicySet, self.broker.drive("policies.read", read_flow(self.keys)))


class PolicyCache:
    """The latest policy set, re-read when the version counter moved, checked at most every ``refresh`` seconds
    (monotonic time, not the engine's clock: this is a cache, not task time). Thread-safe."""

    def __init__(self, keys: Keys, refresh: float = 1.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.keys = keys
        self.refresh = refresh
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._current = PolicySet()
        self._checked: float | None = None

    @property
    def current(self) -> PolicySet:
        with self._lock:
            return self._current

    def fresh(self) -> PolicySet | None:
        """The current set when the last check is recent enough, else None (then run ``flow``). Without a lock:
        reading one attribute is atomic, and a check that races a refresh sees the set before or after it."""
        checked = self._checked
        if checked is not None and self._monotonic() - checked < self.refresh:
            return self._current
        return None

    def flow(self) -> Flow:
        """Return the current set, first checking the version (and re-reading) when the last check is stale."""
        now = self._monotonic()
        with self._lock:
            if self._checked is not None and now - self._checked < self.refresh:
                return self._current
            known = self._current
        version = int((yield Command("get", (self.keys.config_version,))) or 0)
        fresh = known if version == known.version else (yield from read_flow(self.keys))
        with self._lock:
            # Two threads may refresh at once: the newer read wins.
            if fresh.version >= self._current.version or version == 0:
                self._current = fresh
            self._checked = now
            return self._current

    def get(self, broker: Broker, op: str = "policies.get") -> PolicySet:
        """The current set, refreshed through ``broker`` when stale."""
        return cast(PolicySet, broker.drive(op, self.flow()))
