"""Minute and hour time series of each queue, kept by taskq itself in Redis: what the console charts.

Per queue and task type: attempts that succeeded, failed, and of those went to retry; the run time and the wait
before the start, as counts over fixed buckets (``EDGES_MS``), so percentiles come out of any range. Per queue:
its size and latency, sampled once a minute. A hash per queue and minute, and per queue and hour:

    <prefix>:{<queue>}:series:m:<epoch minute>     kept RETENTION["m"] (25 h)
    <prefix>:{<queue>}:series:h:<epoch hour>       kept RETENTION["h"] (31 days)

Fields are ``<metric>|<type>`` (the type last, so any type name splits unambiguously at the first ``|``):
``ok``, ``fail``, ``retry``, ``ms`` (run time sum), ``r<i>`` and ``w<i>`` (run and wait bucket ``i``), plus the
gauges ``size`` and ``latency_ms``. A global hash per minute and hour holds ``ok|<queue>`` and ``fail|<queue>``,
and ``ok`` and ``fail`` for every queue together, so the dashboard reads a few fields of one hash per point
however many queues there are.

Workers add up their attempts in memory (``SeriesTally``) and write them every second or so with their
acknowledgements (``flush_flow``): a few HINCRBYs a second per queue and type, whatever the rate, so the cost per
task amortizes to almost nothing. A worker killed outright loses at most its last unwritten second of series;
the task counts themselves (``processed``, ``failed``) are written by the transitions and never lost.

Deliberately shares its name with ``console/views/series.py``, the console's time charts that read these series
(console views are named after what they show).
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from .keys import Keys
from .sans_io import Batch, Command, Flow

#: Upper edges of the run and wait buckets (ms); bucket i counts values <= EDGES_MS[i], the last one the rest.
EDGES_MS = (1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000)
#: Seconds per point of each resolution, and how long its hashes are kept.
STEP = {"m": 60, "h": 3600}
RETENTION = {"m": 25 * 3600, "h": 31 * 86400}
#: What an attempt's outcome counts as: success, failure that goes to retry, failure that archives.
OUTCOMES = ("ok", "retry", "archive")
#: The range a chart shows when none is asked for.
DEFAULT_RANGE = "1h"
#: The ranges the console charts: name -> (seconds back from now, resolution read).
RANGES = {
    "1h": (3600, "m"),
    "6h": (6 * 3600, "m"),
    "24h": (86400, "m"),
    "7d": (7 * 86400, "h"),
    "30d": (30 * 86400, "h"),
}
GAUGES = ("size", "latency_ms")


def bucket_of(ms: float) -> int:
    return bisect.bisect_left(EDGES_MS, ms)


def point(seconds: float, resolution: str) -> int:
    """The index of the point (epoch minute or hour) that ``seconds`` falls in."""
    return int(seconds // STEP[resolution])


MAX_NAMED_TYPES = 1000


class _TypeFields:
    """The names of a task type's fields in the minute hashes: ok|<type>, r<bucket>|<type> and so on."""

    def __init__(self, task_type: str) -> None:
        self.ok, self.fail, self.retry, self.ms = (f"{name}|{task_type}" for name in ("ok", "fail", "retry", "ms"))
        buckets = range(len(EDGES_MS) + 1)
        self.run = [f"r{bucket}|{task_type}" for bucket in buckets]
        self.waited = [f"w{bucket}|{task_type}" for bucket in buckets]


class SeriesTally:
    """A worker's attempts since its last write, per queue and minute. Thread-safe: the acker and the syncer add,
    the acker drains."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fields: dict[tuple[str, int], Counter[str]] = defaultdict(Counter)
        self._names: dict[str, _TypeFields] = {}  # each task type's field names, built once

    def finished(self, queue: str, task_type: str, outcome: str, run_ms: float, waited_ms: float, at: float) -> None:
        """One attempt ended at ``at`` (epoch seconds): ``outcome`` is one of OUTCOMES."""
        self.finished_many(queue, at, [(task_type, outcome, run_ms, waited_ms)])

    def finished_many(self, queue: str, at: float, ends: Iterable[tuple[str, str, float, float]]) -> None:
        """Attempts of ``queue`` that ended at ``at``, each as (task type, outcome, run ms, waited ms): the acker's
        batch, counted under one lock and with the counts taken by ``Counter.update`` (one pass in C) rather than
        six increments per attempt."""
        counted: list[str] = []
        run_ms_of: Counter[str] = Counter()
        for task_type, outcome, run_ms, waited_ms in ends:
            names = self._names.get(task_type) or self._named(task_type)
            if outcome == "ok":
                counted.append(names.ok)
            else:
                counted.append(names.fail)
                if outcome == "retry":
                    counted.append(names.retry)
            counted.append(names.run[bucket_of(run_ms)])
            counted.append(names.waited[bucket_of(waited_ms)])
            run_ms_of[names.ms] += int(run_ms)
        with self._lock:
            fields = self._fields[(queue, point(at, "m"))]
            fields.update(counted)
            fields.update(run_ms_of)

    def _named(self, task_type: str) -> _TypeFields:
        if len(self._names) >= MAX_NAMED_TYPES:  # bounded whatever types are enqueued: built again when needed
            self._names.clear()
        names = self._names[task_type] = _TypeFields(task_type)
        return names

    def drain(self) -> dict[tuple[str, int], Counter[str]]:
        with self._lock:
            taken, self._fields = self._fields, defaultdict(Counter)
        return taken

    def put_back(self, taken: dict[tuple[str, int], Counter[str]]) -> None:
        """Keep what could not be written for the next try."""
        with self._lock:
            for where, fields in taken.items():
                self._fields[where].update(fields)


def flush_flow(keys: Keys, taken: dict[tuple[str, int], Counter[str]]) -> Flow:
    """Add drained tallies to the minute and hour hashes of their queues and to the global ones, setting each
    hash's expiry. One batch of commands (not atomic across queues: each queue's hashes live in its own slot)."""
    commands: list[Command] = []
    for (queue, minute), fields in taken.items():
        hour = minute * STEP["m"] // STEP["h"]
        for resolution, index in (("m", minute), ("h", hour)):
            key = keys.queue(queue).series(resolution, index)
            commands += [Command("hincrby", (key, name, n)) for name, n in fields.items() if n]
            commands.append(Command("expire", (key, RETENTION[resolution])))
            total = keys.series(resolution, index)
            for metric in ("ok", "fail"):
                n = sum(v for name, v in fields.items() if name.startswith(metric + "|"))
                if n:
                    commands.append(Command("hincrby", (total, f"{metric}|{queue}", n)))
                    commands.append(Command("hincrby", (total, metric, n)))  # every queue's together
            commands.append(Command("expire", (total, RETENTION[resolution])))
    if commands:
        yield Batch(commands)


def gauge_flow(keys: Keys, sizes: dict[str, tuple[int, float]], at: float) -> Flow:
    """Record each queue's size and latency (seconds) at ``at`` in its minute and hour hashes (the hour keeps
    the last sample of the hour)."""
    commands: list[Command] = []
    for queue, (size, latency) in sizes.items():
        for resolution in ("m", "h"):
            key = keys.queue(queue).series(resolution, point(at, resolution))
            commands.append(Command("hset", (key,), {"mapping": {"size": size, "latency_ms": int(latency * 1000)}}))
            commands.append(Command("expire", (key, RETENTION[resolution])))
    if commands:
        yield Batch(commands)


@dataclass
class Point:
    """One minute or hour of one queue (or, for the global series, of every queue)."""

    start: int  # epoch seconds
    fields: dict[str, int] = field(default_factory=dict)

    def total(self, metric: str, name: str | None = None) -> int:
        """``metric`` summed over every type (or queue), or for ``name`` only."""
        if name is not None:
            return self.fields.get(f"{metric}|{name}", 0)
        prefix = metric + "|"
        return sum(v for k, v in self.fields.items() if k.startswith(prefix))


def read_flow(
    keys: Keys, queue: str | None, resolution: str, start: float, end: float, fields: list[str] | None = None
) -> Flow:
    """The points of ``queue`` (None: the global series) from ``start`` to ``end`` (epoch seconds), oldest first,
    one per step, empty where nothing was recorded; with ``fields``, only those fields of each."""
    first, last = point(start, resolution), point(end, resolution)
    indexes = range(first, last + 1)
    names = [keys.queue(queue).series(resolution, i) if queue else keys.series(resolution, i) for i in indexes]
    if not names:
        return []
    if fields:
        values = yield Batch([Command("hmget", (name, *fields)) for name in names])
        replies = [{f: v for f, v in zip(fields, row, strict=True) if v is not None} for row in values]
        return [
            Point(i * STEP[resolution], {k: int(v) for k, v in r.items()})
            for i, r in zip(indexes, replies, strict=True)
        ]
    replies = yield Batch([Command("hgetall", (name,)) for name in names])
    return [
        Point(i * STEP[resolution], {k.decode(): int(v) for k, v in (reply or {}).items()})
        for i, reply in zip(indexes, replies, strict=True)
    ]


def percentile(points: Iterable[Point], prefix: str, q: float, task_type: str | None = None) -> float | None:
    """The ``q`` quantile (0-1) in ms of the run (``prefix`` "r") or wait ("w") buckets over ``points``: the
    upper edge of the bucket it falls in (the last bucket reports its lower edge). None without samples."""
    counts = [0] * (len(EDGES_MS) + 1)
    for p in points:
        for i in range(len(counts)):
            counts[i] += p.total(f"{prefix}{i}", task_type)
    total = sum(counts)
    if not total:
        return None
    rank, seen = q * total, 0
    for i, n in enumerate(counts):
        seen += n
        if seen >= rank and n:
            return float(EDGES_MS[min(i, len(EDGES_MS) - 1)])
    return float(EDGES_MS[-1])


def downsample(points: list[Point], most: int) -> list[Point]:
    """At most ``most`` points, each the sum of consecutive ones (counts and buckets add up); a gauge keeps the
    last value recorded among them."""
    if len(points) <= most:
        return points
    width = -(-len(points) // most)
    merged = []
    for first in range(0, len(points), width):
        group = points[first : first + width]
        fields: Counter[str] = Counter()
        for p in group:
            for name, value in p.fields.items():
                if name in GAUGES:
                    fields[name] = value
                else:
                    fields[name] += value
        merged.append(Point(group[0].start, dict(fields)))
    return merged
