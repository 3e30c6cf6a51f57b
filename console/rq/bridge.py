"""Read and act on django-rq queues through RQ's own API.

The queues are the ones configured in django-rq's ``RQ_QUEUES`` (read at each call, so ``override_settings`` and
the test fixtures apply). Every Redis access goes through ``django_rq.get_queue`` and RQ's ``Queue``, registries
and ``Job``, never raw keys, so the console keeps working when RQ changes its layout.

Reads never change anything. RQ's registries clean themselves up when counted or listed with ``cleanup=True``
(expired entries are dropped, and the started registry moves jobs of dead workers to failed); the console reads
with ``cleanup=False`` because a GET must not mutate. RQ workers run that cleanup themselves, so a count may
briefly include entries whose job hash has already expired; those show as "expired" rows in job lists.

What a page shows of a job is masked by ``TASKS_REDACT`` as taskq's tasks are, for everyone (``_Shown``): the job's
``func_name`` plays the task type, redacted keys are masked at any depth of the arguments, keyword arguments,
return value and meta, and their values wherever they appear in the description and the traceback.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import redis
from django.conf import settings

from taskq.queues.engine import extras

try:
    from django_rq import get_queue
    from django_rq.connection_utils import filter_connection_params, get_redis_connection
    from rq.exceptions import InvalidJobOperation, NoSuchJobError
    from rq.job import JOB_ID_PATTERN, Job, JobStatus
    from rq.queue import Queue
    from rq.registry import BaseRegistry
    from rq.results import Result
    from rq.utils import get_call_string
except ImportError:
    extras.require("rq", "The RQ bridge (taskq.console.rq)", op="taskq.console.rq")
    raise

from taskq.queues.engine.broker.redis_errors import translated
from taskq.queues.engine.errors import OperationError, RedisUnavailableError
from taskq.queues.engine.quoting import shown
from taskq.queues.engine.redaction import MASK, TOO_DEEP, Redaction
from taskq.queues.redaction_access import rules

logger = logging.getLogger(__name__)

#: The registries shown per queue, in the order of a job's life. "queued" is the queue's list itself.
REGISTRIES: tuple[str, ...] = ("queued", "started", "scheduled", "deferred", "finished", "failed")

#: Registries listed newest first: their score is "end time + TTL", so descending order puts recent jobs on top.
_NEWEST_FIRST = frozenset({"finished", "failed"})

#: Where a job of each status lives. Stopped jobs go to the failed registry (RQ's worker puts them there).
_REGISTRY_OF_STATUS = {
    JobStatus.QUEUED.value: "queued",
    JobStatus.STARTED.value: "started",
    JobStatus.SCHEDULED.value: "scheduled",
    JobStatus.DEFERRED.value: "deferred",
    JobStatus.FINISHED.value: "finished",
    JobStatus.FAILED.value: "failed",
    JobStatus.STOPPED.value: "failed",
}

MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 25
# RQ itself puts no bound on ids; 10 KB ids from a URL are refused before they become Redis keys.
MAX_JOB_ID_LENGTH = 256
# Tracebacks and return values are shown, not stored: keep a page from carrying megabytes.
MAX_TEXT_LENGTH = 20_000
#: How long each argument's repr may be in a call, as RQ writes a job's default description.
CALL_ARG_LENGTH = 75
UNDECODABLE = "<cannot be decoded here>"
#: What a job's call reads when its data cannot be decoded and TASKS_REDACT is set: the stored description quotes
#: the arguments, whose secrets cannot be found without decoding them.
UNDECODABLE_MASKED = f"{MASK} (the job's data cannot be decoded here, so its call is not shown)"


class RQBridgeError(OperationError):
    """Base class of the bridge's errors: ``op`` names where it happened (e.g. ``rq.requeue_failed``)."""


class UnknownQueueError(RQBridgeError, LookupError):
    """The queue is not configured in ``RQ_QUEUES``."""

    code = "queue_not_found"


class UnknownRegistryError(RQBridgeError, ValueError):
    """The registry is not one of :data:`REGISTRIES`."""

    code = "bad_registry"


class JobNotFoundError(RQBridgeError, LookupError):
    """No job with that id belongs to that queue (never existed, expired, deleted, or another queue's)."""

    code = "job_not_found"


class InvalidJobStateError(RQBridgeError):
    """The job exists but is not in a state that allows the action (e.g. requeueing a job that has not failed)."""

    code = "precondition"


class InvalidPageError(RQBridgeError, ValueError):
    """``page`` is below 1 or ``size`` is outside 1..:data:`MAX_PAGE_SIZE`."""

    code = "bad_page"


@dataclass(frozen=True)
class RQQueueSummary:
    """One django-rq queue and its job count per registry."""

    name: str
    queued: int
    started: int
    scheduled: int
    deferred: int
    finished: int
    failed: int
    #: Marks the row as RQ's beside taskq's own queues in shared templates.
    kind: str = "rq"

    @property
    def counts(self) -> list[tuple[str, int]]:
        """``(registry, count)`` in :data:`REGISTRIES` order, for templates."""
        return [(name, getattr(self, name)) for name in REGISTRIES]


@dataclass(frozen=True)
class RQJobRow:
    """One row of a job list. ``missing`` rows are registry entries whose job hash has expired or was deleted."""

    id: str
    missing: bool = False
    description: str = ""
    status: str = ""
    created_at: datetime | None = None
    enqueued_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    scheduled_at: datetime | None = None


@dataclass(frozen=True)
class RQJobPage:
    """A page of one registry's job list; ``total`` is the registry's size, read with the page."""

    queue: str
    registry: str
    page: int
    size: int
    total: int
    jobs: list[RQJobRow]

    @property
    def num_pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def has_previous(self) -> bool:
        return self.page > 1

    @property
    def has_next(self) -> bool:
        return self.page < self.num_pages


@dataclass(frozen=True)
class RQJobDetail:
    """Everything the console shows about one job. Text fields are truncated to :data:`MAX_TEXT_LENGTH`."""

    id: str
    queue: str
    status: str
    registry: str
    description: str
    func_name: str
    created_at: datetime | None
    enqueued_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    scheduled_at: datetime | None
    timeout: Any
    result_ttl: int | None
    failure_ttl: int | None
    ttl: int | None
    worker_name: str | None
    retries_left: int | None
    dependency_ids: list[str] = field(default_factory=list)
    meta: str = ""
    exc_string: str = ""
    return_value: str = ""

    @property
    def can_requeue(self) -> bool:
        return self.registry == "failed"

    @property
    def can_delete(self) -> bool:
        # A running job keeps running after its hash is deleted, and its worker then writes a half job back.
        return self.status != JobStatus.STARTED.value


# --- public API ---------------------------------------------------------------------------------------------


def rq_queue_names() -> list[str]:
    """The queue names configured in ``RQ_QUEUES``, sorted (django-rq's own order)."""
    return sorted(_configured_queues())


def rq_queue_summaries() -> list[RQQueueSummary]:
    """One summary per configured RQ queue with its count per registry.

    Counts are O(1) reads (LLEN / ZCARD through RQ's API), without RQ's cleanup (see the module docstring).

    Raises:
        RedisUnavailableError: a queue's Redis cannot be reached.
    """
    op = "rq.queue_summaries"
    names = rq_queue_names()
    summaries = []
    with _queues(names, op) as queues:
        for queue in queues:
            summaries.append(_summary(queue))
    return summaries


def rq_queue_summary(queue_name: str) -> RQQueueSummary:
    """The summary of one queue.

    Raises:
        UnknownQueueError, RedisUnavailableError.
    """
    op = "rq.queue_summary"
    _check_queue(queue_name, op)
    with _queues([queue_name], op) as (queue,):
        return _summary(queue)


def rq_jobs(queue_name: str, registry: str, page: int = 1, size: int = DEFAULT_PAGE_SIZE) -> RQJobPage:
    """One page of a registry's jobs, read by range (LRANGE / ZRANGE), never the whole registry.

    Args:
        queue_name: a queue configured in ``RQ_QUEUES``.
        registry: one of :data:`REGISTRIES`.
        page: 1-based; a page past the end comes back empty with the real ``total``.
        size: jobs per page, 1..:data:`MAX_PAGE_SIZE`.

    Raises:
        UnknownQueueError, UnknownRegistryError, InvalidPageError, RedisUnavailableError.
    """
    op = "rq.jobs"
    _check_queue(queue_name, op)
    _check_registry(registry, op)
    if page < 1:
        raise InvalidPageError(f"page must be 1 or more, got {page}", op=op)
    if not 1 <= size <= MAX_PAGE_SIZE:
        raise InvalidPageError(f"size must be between 1 and {MAX_PAGE_SIZE}, got {size}", op=op)
    start = (page - 1) * size
    with _queues([queue_name], op) as (queue,):
        total = _count(queue, registry)
        job_ids = _job_ids(queue, registry, start, size)
        jobs = queue.job_class.fetch_many(job_ids, connection=queue.connection, serializer=queue.serializer)
        scheduled = _registry(queue, "scheduled") if registry == "scheduled" else None
        redaction = rules()
        rows = [_row(job_id, job, scheduled, redaction) for job_id, job in zip(job_ids, jobs, strict=True)]
    return RQJobPage(queue=queue_name, registry=registry, page=page, size=size, total=total, jobs=rows)


def rq_job(queue_name: str, job_id: str) -> RQJobDetail:
    """The detail of one job of the queue.

    Raises:
        UnknownQueueError, JobNotFoundError, RedisUnavailableError.
    """
    op = "rq.job"
    _check_queue(queue_name, op)
    with _queues([queue_name], op) as (queue,):
        job = _fetch(queue, job_id, op)
        return _detail(queue, job, rules())


def requeue_failed(queue_name: str, job_id: str) -> str:
    """Put a failed job back on its queue, through RQ's ``FailedJobRegistry.requeue``.

    Returns:
        The job id.

    Raises:
        UnknownQueueError, JobNotFoundError, InvalidJobStateError (not in the failed registry),
        RedisUnavailableError.
    """
    op = "rq.requeue_failed"
    _check_queue(queue_name, op)
    with _queues([queue_name], op) as (queue,):
        job = _fetch(queue, job_id, op)
        try:
            # The registry's ZREM decides: when two operators requeue at once, only one wins.
            queue.failed_job_registry.requeue(job)
        except InvalidJobOperation:
            raise InvalidJobStateError(
                f"job {job_id} is not in the failed registry of {shown(queue_name)} (status {_status(job)})", op=op
            ) from None
    return job_id


def delete_job(queue_name: str, job_id: str) -> str:
    """Delete a job (not a running one) with RQ's ``Job.delete``: out of its queue or registry, hash removed.

    Returns:
        The registry the job was in (one of :data:`REGISTRIES`, or "" for a status without one, e.g. canceled).

    Raises:
        UnknownQueueError, JobNotFoundError, InvalidJobStateError (the job is running), RedisUnavailableError.
    """
    op = "rq.delete_job"
    _check_queue(queue_name, op)
    with _queues([queue_name], op) as (queue,):
        job = _fetch(queue, job_id, op)
        if _status(job) == JobStatus.STARTED.value:
            raise InvalidJobStateError(f"job {job_id} is running; wait for it to end before deleting it", op=op)
        registry = _REGISTRY_OF_STATUS.get(_status(job), "")
        job.delete()
    return registry


# --- helpers ------------------------------------------------------------------------------------------------


def _configured_queues() -> dict[str, Any]:
    return dict(getattr(settings, "RQ_QUEUES", None) or {})


def _check_queue(queue_name: str, op: str) -> None:
    if queue_name not in _configured_queues():
        raise UnknownQueueError(f"no RQ queue named {shown(queue_name)} in RQ_QUEUES", op=op)


def _check_registry(registry: str, op: str) -> None:
    if registry not in REGISTRIES:
        raise UnknownRegistryError(
            f"unknown registry {shown(registry)}; expected one of {', '.join(REGISTRIES)}", op=op
        )


@contextlib.contextmanager
def _queues(names: list[str], op: str) -> Iterator[list[Queue]]:
    """django-rq queues for ``names``, one Redis connection per distinct connection config, closed afterwards.

    django-rq's ``get_queue`` opens a new connection pool per call; sharing one per config keeps a summary of
    twenty queues on one pool. Connection failures become ``RedisUnavailableError``.
    """
    config = _configured_queues()
    connections: list[tuple[dict[str, Any], redis.Redis]] = []

    def connection_for(name: str) -> redis.Redis:
        params = filter_connection_params(config[name])
        for known, conn in connections:
            if known == params:
                return conn
        conn = get_redis_connection(config[name])
        connections.append((params, conn))
        return conn

    try:
        with translated(op):
            yield [get_queue(name, connection=connection_for(name)) for name in names]
    except RedisUnavailableError as exc:
        logger.warning("%s: RQ's Redis is unavailable: %s", op, exc.message)
        raise RedisUnavailableError(f"RQ's Redis cannot be reached: {exc.message}", op=op) from exc
    finally:
        for _params, conn in connections:
            conn.close()


def _registry(queue: Queue, name: str) -> BaseRegistry:
    registries: dict[str, BaseRegistry] = {
        "started": queue.started_job_registry,
        "scheduled": queue.scheduled_job_registry,
        "deferred": queue.deferred_job_registry,
        "finished": queue.finished_job_registry,
        "failed": queue.failed_job_registry,
    }
    return registries[name]


def _summary(queue: Queue) -> RQQueueSummary:
    counts = {name: _count(queue, name) for name in REGISTRIES}
    return RQQueueSummary(name=queue.name, **counts)  # type: ignore[arg-type]  # every field of REGISTRIES is an int


def _count(queue: Queue, registry: str) -> int:
    if registry == "queued":
        return queue.count
    return _registry(queue, registry).get_job_count(cleanup=False)


def _job_ids(queue: Queue, registry: str, start: int, size: int) -> list[str]:
    if registry == "queued":
        return queue.get_job_ids(offset=start, length=size)
    return _registry(queue, registry).get_job_ids(
        start, start + size - 1, desc=registry in _NEWEST_FIRST, cleanup=False
    )


def _fetch(queue: Queue, job_id: str, op: str) -> Job:
    """The job, if it exists and belongs to ``queue``; anything else is ``JobNotFoundError``."""
    # Checked before any Redis call: RQ's fetch splits on ":" (execution keys), so "a:b" would fetch job "a".
    if len(job_id) > MAX_JOB_ID_LENGTH or not JOB_ID_PATTERN.fullmatch(job_id):
        raise JobNotFoundError(f"no job {job_id[:80]!r} in RQ queue {shown(queue.name)} (not a valid RQ job id)", op=op)
    try:
        job = queue.job_class.fetch(job_id, connection=queue.connection, serializer=queue.serializer)
    except NoSuchJobError:
        raise JobNotFoundError(f"no job {shown(job_id)} in RQ queue {shown(queue.name)}", op=op) from None
    if job.origin != queue.name:
        raise JobNotFoundError(
            f"no job {shown(job_id)} in RQ queue {shown(queue.name)} (it belongs to {shown(job.origin)})", op=op
        )
    return job


def _status(job: Job) -> str:
    status = job.get_status(refresh=False)
    return status.value if isinstance(status, JobStatus) else str(status or "")


def _row(job_id: str, job: Job | None, scheduled: BaseRegistry | None, redaction: Redaction) -> RQJobRow:
    if job is None:
        return RQJobRow(id=job_id, missing=True)
    scheduled_at = None
    if scheduled is not None:
        with contextlib.suppress(TypeError):  # not (or no longer) in the registry: zscore gave None
            scheduled_at = scheduled.get_scheduled_time(job)  # type: ignore[attr-defined]
    return RQJobRow(
        id=job.id,
        description=_truncate(_Shown.of(job, redaction).description(job.description or ""), 300),
        status=_status(job),
        created_at=job.created_at,
        enqueued_at=job.enqueued_at,
        started_at=job.started_at,
        ended_at=job.ended_at,
        scheduled_at=scheduled_at,
    )


def _detail(queue: Queue, job: Job, redaction: Redaction) -> RQJobDetail:
    status = _status(job)
    registry = _REGISTRY_OF_STATUS.get(status, "")
    scheduled_at = None
    if registry == "scheduled":
        with contextlib.suppress(TypeError):
            scheduled_at = queue.scheduled_job_registry.get_scheduled_time(job)
    shown = _Shown.of(job, redaction)
    exc_string, return_value = _latest_result(job, shown)
    return RQJobDetail(
        id=job.id,
        queue=queue.name,
        status=status,
        registry=registry,
        description=_truncate(shown.description(job.description or ""), MAX_TEXT_LENGTH),
        func_name=shown.func_name if shown.decoded else UNDECODABLE,
        created_at=job.created_at,
        enqueued_at=job.enqueued_at,
        started_at=job.started_at,
        ended_at=job.ended_at,
        scheduled_at=scheduled_at,
        timeout=job.timeout,
        result_ttl=job.result_ttl,
        failure_ttl=job.failure_ttl,
        ttl=job.ttl,
        worker_name=job.worker_name,
        retries_left=job.retries_left,
        dependency_ids=sorted(job.dependency_ids),
        meta=_truncate(shown.text(repr(shown.value(job.meta))), MAX_TEXT_LENGTH) if job.meta else "",
        exc_string=exc_string,
        return_value=return_value,
    )


def _latest_result(job: Job, shown: _Shown) -> tuple[str, str]:
    """``(traceback, repr of the return value)`` of the job's latest result as a person may see them, each ""
    when absent."""
    result = _decoded(job.latest_result, default=None)
    if not isinstance(result, Result):
        return "", ""
    if result.type == Result.Type.SUCCESSFUL:
        return "", _truncate(shown.text(repr(shown.value(result.return_value))), MAX_TEXT_LENGTH)
    return _truncate(shown.text(result.exc_string or ""), MAX_TEXT_LENGTH), ""


class _Cut:
    """An argument cut at the redaction's depth bound, as a call shows it: the note, not a 75-character start
    that would hide why the rest is missing."""

    def __repr__(self) -> str:
        return TOO_DEEP


def _whole_if_cut(arg: Any) -> Any:
    return _Cut() if TOO_DEEP in repr(arg) else arg


@dataclass(frozen=True)
class _Shown:
    """A job as a person may see it under ``TASKS_REDACT``: ``func_name`` plays the task type (its prefix rules
    mask everything of the job), and the decoded arguments say which secrets to mask in free text. Values go
    through ``Redaction.mask_value`` even without rules: its walk is bounded, so the ``repr`` of an argument
    nested ten thousand deep reads "too deeply nested to display" instead of failing the page."""

    redaction: Redaction
    decoded: bool
    func_name: str = ""
    args: Any = ()
    kwargs: Any = None

    @classmethod
    def of(cls, job: Job, redaction: Redaction) -> _Shown:
        call = _decoded(lambda: (job.func_name or "", job.args, job.kwargs), default=None)
        if call is None:
            return cls(redaction, decoded=False)
        func_name, args, kwargs = call
        return cls(redaction, True, func_name, args, kwargs)

    def value(self, value: Any) -> Any:
        """A Python value of the job (a return value, meta) masked, and cut at the redaction's depth bound."""
        return self.redaction.mask_value(self.func_name, value)

    def text(self, text: str) -> str:
        """Free text of the job (a traceback, a description) with the values of its arguments' redacted keys
        masked; all of it when the arguments cannot be decoded and there are rules."""
        if not self.decoded:
            return UNDECODABLE_MASKED if self.redaction and text else text
        return self.redaction.mask_value_text(self.func_name, [self.args, self.kwargs], text)

    def call(self) -> str:
        """The call as RQ writes a job's default description, from the masked arguments."""
        if self.redaction.covers_type(self.func_name):
            return f"{self.func_name}({MASK})"
        args = [_whole_if_cut(arg) for arg in self.value(list(self.args or ()))]
        kwargs = {key: _whole_if_cut(arg) for key, arg in self.value(dict(self.kwargs or {})).items()}
        return get_call_string(self.func_name, args, kwargs, max_length=CALL_ARG_LENGTH) or ""

    def description(self, stored: str) -> str:
        """The job's description: the call rendered from the masked arguments when it is RQ's default (a call of
        the job's function); else the producer's own text, masked. The stored default is never shown: RQ cuts
        each argument's repr at 75 characters, which may cut a secret so that masking no longer finds it."""
        if not self.decoded:
            return self.text(stored)
        if not stored or stored.startswith(f"{self.func_name}("):
            return self.call()
        return self.text(stored)


def _decoded(read: Any, default: Any = "<cannot be decoded here>") -> Any:
    # Job data and results are pickled by the producer: unpickling may need modules the console does not have,
    # or meet data written by another RQ version. The page shows that instead of failing.
    try:
        with translated("rq.decode"):
            return read()
    except RedisUnavailableError:
        raise
    except Exception:  # any unpickling failure, whatever the producer's classes raise
        logger.info("rq: could not decode job data", exc_info=True)
        return default


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"
