"""Searching tasks: within one queue and state by type prefix and text (``search_tasks``, ``SearchResult``), and
across queues in the search language of ``search`` (``SearchPage``).

A search reads tasks in pages of ``MAX_PAGE_SIZE`` up to a bound (``SCAN_LIMIT``), so it stays fast on huge
queues, and says how many it read of how many there are: one that stopped at the bound says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from .. import search as search_language
from .. import validation as check
from ..keys import STATES
from ..message import TaskInfo
from ..redaction import Redaction
from ..search import Query
from .inspector_core import MAX_PAGE_SIZE, InspectorCore
from .queue_stats import QueueReads
from .task_reads import TaskReads

SCAN_LIMIT = 10_000  # tasks a filter looks at, at most, per request: it says how many it looked at
#: Tasks ``payload_sample`` reads at most (the query box's payload paths: a glance, not a search), and how many
#: from one queue and state, so one crowded list does not fill the sample alone.
PAYLOAD_SAMPLE = 200
PAYLOAD_SAMPLE_PER_LIST = 50
#: Queues it reads the counts of, at most (the first by name among those the search reads).
PAYLOAD_SAMPLE_QUEUES = 50
#: A filter of ``search_tasks`` on a task's raw type, payload and last error (``_matches`` with its terms bound).
_Match = Callable[[bytes, bytes | None, bytes | None], bool]
Item = TypeVar("Item")


def page_count(items: int, size: int) -> int:
    """How many pages of ``size`` the ``items`` fill (one, when there are none: an empty list still has a page)."""
    return max(1, -(-items // size))


class _Bounded:
    """What a bounded search read: ``scanned`` of the ``total`` tasks where it looked."""

    scanned: int
    total: int

    @property
    def complete(self) -> bool:
        """Whether every task of the searched queues and states was read (no bound stopped the search)."""
        return self.scanned >= self.total


@dataclass
class SearchResult(_Bounded):
    """Tasks of one state matching a filter, found by a bounded scan: ``scanned`` of ``total`` were read.
    ``match_ids`` are every match the scan found, in list order (what an action on every match acts on);
    ``tasks`` the page ``page`` of them, ``size`` a page."""

    tasks: list[TaskInfo]
    scanned: int
    total: int
    match_ids: list[str] = field(default_factory=list)
    page: int = 1
    size: int = 100

    @property
    def pages(self) -> int:
        return page_count(len(self.match_ids), self.size)


@dataclass
class SearchPage(_Bounded):
    """One page of a search's matches, and what the search did: ``matches`` are all it found (for actions on
    every match), among ``scanned`` tasks read of the ``total`` the searched queues and states hold."""

    tasks: list[TaskInfo]
    matches: list[TaskInfo]
    scanned: int
    total: int
    page: int
    size: int
    query: Any = None  # the search.Query

    @property
    def pages(self) -> int:
        return page_count(len(self.matches), self.size)


class TaskSearch:
    """Bounded searches over task lists (``TaskReads``), sized by the queues' counts (``QueueReads``)."""

    def __init__(self, core: InspectorCore, tasks: TaskReads, queues: QueueReads) -> None:
        self.core = core
        self.keys = core.keys
        self.tasks = tasks
        self.queue_reads = queues

    def search_tasks(
        self,
        queue: str,
        state: str,
        *,
        task_type: str | None = None,
        text: str | None = None,
        page: int = 1,
        limit: int = 100,
        scan_limit: int = SCAN_LIMIT,
        redaction: Redaction | None = None,
    ) -> SearchResult:
        """Tasks of ``state`` whose type starts with ``task_type`` and whose payload or last error contains
        ``text``, in list order: the ids of every match among the first ``scan_limit`` tasks (read in pages, so it
        stays fast on huge queues; it says how many it read), and page ``page`` of them decoded, ``limit`` a page
        (a page past the last is the last). With ``redaction``, ``text`` must be in the payload as redacted: a
        search must not reveal what a masked value holds.

        Raises:
            ValidationError: the queue name, state, page or a limit is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        op = "inspector.search_tasks"
        self.core.known(queue, "search_tasks")
        page, limit = self.core.paged(op, page, limit, "limit")
        scan_limit = _scan_limit(scan_limit, op)
        needle = text.encode() if text else None
        prefix = task_type.encode() if task_type else None
        match = partial(_matches, prefix=prefix, needle=needle, redaction=redaction)
        total = self.queue_reads.queue_info(queue).counts().get(state, 0)
        budget = min(total, scan_limit)
        if state == "aggregating":
            decoded, scanned = self._match_aggregating(queue, match, budget)
            ids = [t.id for t in decoded]
            page = min(page, page_count(len(ids), limit))
            tasks = decoded[(page - 1) * limit : page * limit]
        else:
            matches, scanned = self._match_raw(queue, state, match, budget)
            ids = [task_id.decode() for task_id, _ in matches]
            page = min(page, page_count(len(ids), limit))
            tasks = self.tasks.hydrate(queue, matches[(page - 1) * limit : page * limit])
        return SearchResult(tasks, scanned, total, ids, page, limit)

    def _match_raw(
        self, queue: str, state: str, match: _Match, budget: int
    ) -> tuple[list[tuple[bytes, float | None]], int]:
        """The ids (with scores) of the matches among the first ``budget`` tasks of a state, and how many were
        read. Matches on the raw fields: decoding ten thousand tasks to keep three is what made this slow."""
        matches: list[tuple[bytes, float | None]] = []
        scanned = 0
        for ids in _in_pages(partial(self.tasks.id_range, queue, state), budget):
            scanned += len(ids)
            rows = self.tasks.raw_fields("search_tasks", queue, ids)
            matches += [ref for ref, row in zip(ids, rows, strict=True) if row is not None and match(*row)]
        return matches, scanned

    def _match_aggregating(self, queue: str, match: _Match, budget: int) -> tuple[list[TaskInfo], int]:
        """The matches among the first ``budget`` aggregating tasks, read decoded group by group (they have no
        single range to walk), and how many were read. Each round starts at the position where the one before
        stopped: read by page number, a smaller last round read part of the round before again."""
        found: list[TaskInfo] = []
        scanned = 0
        for batch in _in_pages(partial(self.tasks.list_aggregating, queue, None), budget):
            scanned += len(batch)
            found += [t for t in batch if match(t.type.encode(), t.payload, (t.last_error or "").encode())]
        return found, scanned

    def search(
        self,
        query: str | Query,
        *,
        page: int = 1,
        size: int = 20,
        scan_limit: int = SCAN_LIMIT,
        redaction: Redaction | None = None,
    ) -> SearchPage:
        """Tasks of every queue that match a search (``search`` has the language), newest first (by creation),
        one page of them. Reads at most ``scan_limit`` tasks in all (1,000 per round trip) and says how many it
        read of how many the searched queues and states hold: a search that stopped at the bound says so.
        Aggregating tasks are not searched (they are in their groups: see ``groups``). With ``redaction``, payloads
        are matched as masked: a search must not reveal what a masked value holds.

        Raises:
            QuerySyntaxError: the search cannot be read (nothing was searched).
            ValidationError: a page, size or limit is malformed.
            RedisUnavailableError: Redis cannot be reached.
        """
        op = "inspector.search"
        wanted = search_language.parse(query) if isinstance(query, str) else query
        page, size = self.core.paged(op, page, size)
        scan_limit = _scan_limit(scan_limit, op)
        states = [s for s in (wanted.states or STATES) if s != "aggregating"]
        # The counts are all it reads of the queues.
        infos = self.queue_reads.counted([q for q in self.queue_reads.queues() if wanted.queue_matches(q)])[0]
        total = sum(info.counts().get(state, 0) for info in infos for state in states)
        now, found, scanned = self.core.broker.clock.now(), [], 0
        for info in infos:
            for state in states:
                # The lists are counted in one round trip and read in others: under traffic a list holds more when
                # read than when counted. Each is read up to its count, not a page further, so the tasks read never
                # outnumber the total counted ("among 3688 of 3687 tasks"); one that grew since is not chased.
                budget = min(info.counts().get(state, 0), scan_limit - scanned)
                for ids in _in_pages(partial(self.tasks.id_range, info.queue, state), budget):
                    scanned += len(ids)
                    for task in self.tasks.read_tasks("search", info.queue, ids):
                        if redaction:
                            task = redaction.searchable(task)
                        if search_language.matches(wanted, task, now):
                            found.append(task)
        # Newest first: what an operator looks for is most often what just happened.
        found.sort(key=lambda t: (-(t.created_at.timestamp() if t.created_at else 0), t.queue, t.id))
        first = (page - 1) * size
        return SearchPage(found[first : first + size], found, scanned, total, page, size, wanted)

    def payload_sample(
        self, query: str | Query, *, size: int = PAYLOAD_SAMPLE, redaction: Redaction | None = None
    ) -> list[bytes]:
        """The payloads (as ``redaction`` masks them) of at most ``size`` tasks among those ``query`` searches
        (its queues, states and types; the other terms are not applied), the first of each list in turn, at most
        ``PAYLOAD_SAMPLE_PER_LIST`` of one, from the first ``PAYLOAD_SAMPLE_QUEUES`` queues: the console's query
        box collects payload paths from them. Reads the queues' counts, one range per list that has tasks until the
        sample is full, and the payloads in one round trip per queue.

        Raises:
            QuerySyntaxError: the search cannot be read.
            ValidationError: ``size`` is malformed.
            RedisUnavailableError: Redis cannot be reached.
        """
        wanted = search_language.parse(query) if isinstance(query, str) else query
        size = check.count(size, "size", 1, SCAN_LIMIT, "inspector.payload_sample")
        states = [s for s in (wanted.states or STATES) if s != "aggregating"]
        queues = [q for q in self.queue_reads.queues() if wanted.queue_matches(q)][:PAYLOAD_SAMPLE_QUEUES]
        infos = self.queue_reads.counted(queues)[0]  # the counts alone: latency and memory take more round trips
        payloads: list[tuple[str, bytes]] = []  # (type, payload)
        for info in infos:
            ids: list[tuple[bytes, float | None]] = []
            for state in states:
                room = min(size - len(payloads) - len(ids), PAYLOAD_SAMPLE_PER_LIST, info.counts().get(state, 0))
                ids += self.tasks.id_range(info.queue, state, 0, room - 1) if room > 0 else []
            payloads += self._payloads(info.queue, ids, wanted)
        return [redaction.apply(t, p) or b"" for t, p in payloads] if redaction else [p for _t, p in payloads]

    def _payloads(self, queue: str, ids: list[tuple[bytes, float | None]], wanted: Query) -> list[tuple[str, bytes]]:
        """(type, payload) of the tasks of ``ids`` whose type ``wanted`` matches, in one round trip."""
        rows = self.tasks.raw_fields("payload_sample", queue, ids)
        typed = [(row[0].decode("utf-8", "replace"), row[1] or b"") for row in rows if row is not None]
        return [(ttype, payload) for ttype, payload in typed if wanted.type_matches(ttype)]


def _in_pages(read: Callable[[int, int], list[Item]], budget: int) -> Iterator[list[Item]]:
    """``read(start, stop)`` of a list's positions, from the first, one page of up to ``MAX_PAGE_SIZE`` a round
    trip, until ``budget`` items are read or a page comes back empty (the end of the list)."""
    done = 0
    while done < budget:
        page = read(done, done + min(MAX_PAGE_SIZE, budget - done) - 1)
        if not page:
            return
        done += len(page)
        yield page


def _scan_limit(scan_limit: int, op: str) -> int:
    return check.count(scan_limit, "scan_limit", 1, 1_000_000, op)


def _matches(
    task_type: bytes,
    payload: bytes | None,
    error: bytes | None,
    prefix: bytes | None,
    needle: bytes | None,
    redaction: Redaction | None = None,
) -> bool:
    """The search filter, on raw fields: type starts with ``prefix``; payload or last error contains ``needle``
    (each as ``redaction`` shows it, when given)."""
    if prefix and not task_type.startswith(prefix):
        return False
    if not needle:
        return True
    if error and needle in error:
        # Only errors that hold the needle get masked: the patterns then run on a few, not on every task.
        if redaction is None or needle in redaction.mask_string(error.decode("utf-8", "replace")).encode():
            return True
    if needle not in (payload or b""):
        return False
    # Only payloads that hold the needle get parsed, so a redacted search stays about as fast as a plain one.
    return redaction is None or needle in (redaction.apply(task_type.decode("utf-8", "replace"), payload) or b"")
