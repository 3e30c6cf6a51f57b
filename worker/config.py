"""Worker settings: which queues, how many at once, and the timing of the lease and background components.

``WorkerConfig.from_settings(taskq_settings, **options)`` is the one way from taskq's settings to a worker's: the
command line's options over the settings over the defaults."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from typing import Any

from taskq.queues.engine import DEFAULT_PREFIX, DEFAULT_REDIS_URL, GroupSettings, Limits, ValidationError
from taskq.queues.engine import validation as check
from taskq.queues.engine.quoting import shown
from taskq.queues.engine.redaction import NO_REDACTION, Redaction
from taskq.queues.engine.settings import DEFAULTS, TaskqSettings
from taskq.queues.sparkconf import DEFAULT_MASTER, SparkSettings

#: Characters that make a ``--queues`` entry a glob pattern (fnmatch: ``*``, ``?``, ``[...]``) rather than a name.
PATTERN_CHARS = check.GLOB_CHARACTERS


def is_pattern(entry: str) -> bool:
    return not PATTERN_CHARS.isdisjoint(entry)


def entry_for(queue: str) -> str:
    """The ``--queues`` entry that serves exactly ``queue``: its name, or for a name with glob characters (which
    enqueue refuses now, but Redis may hold from before) a pattern that matches only it, each such character a
    class of one (``*`` -> ``[*]``, ``[`` -> ``[[]``). Quote it for a shell: ``shlex.quote``."""
    if not is_pattern(queue):
        return queue
    return "".join(f"[{c}]" if c in PATTERN_CHARS else c for c in queue)


def split_patterns(queues: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """The plain names and the glob patterns of a parsed ``--queues``, each with its weight, in the given order."""
    names = {q: w for q, w in queues.items() if not is_pattern(q)}
    patterns = {q: w for q, w in queues.items() if is_pattern(q)}
    return names, patterns


def parse_queues(spec: str) -> dict[str, int]:
    """``"critical=6,default=3,low=1"`` -> {"critical": 6, "default": 3, "low": 1}; a bare name weighs 1. An entry
    may be a glob pattern (``tenant-*=1``), validated like a name (no braces) and split off by ``split_patterns``."""
    queues: dict[str, int] = {}
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        name, _, weight = part.partition("=")
        name = check.queue_name(name.strip(), "taskworker --queues")
        try:
            value = int(weight) if weight else 1
        except ValueError:
            raise ValidationError(
                f"weight of queue {shown(name)} must be an integer, got {shown(weight)}", op="taskworker --queues"
            ) from None
        queues[name] = check.count(value, f"weight of queue {shown(name)}", 1, 1000, "taskworker --queues")
    if not queues:
        raise ValidationError("no queues given", op="taskworker --queues")
    return queues


@dataclass(frozen=True)
class SubmitSettings:
    """What a ``spark:submit`` task may run, and where (worker/spark_submit.py): the master of a payload that names
    none (SPARK_MASTER), and the directories its application must be in (SPARK_SUBMIT_ALLOWED_DIRS; empty: any)."""

    master: str = DEFAULT_MASTER
    allowed_dirs: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, taskq: TaskqSettings) -> SubmitSettings:
        return cls(master=taskq.spark_master or DEFAULT_MASTER, allowed_dirs=tuple(taskq.spark_submit_allowed_dirs))


def environment_submit_settings() -> SubmitSettings:
    """The submit settings of a worker built without taskq's settings (in Python, without Django): the
    environment's, as its handlers' other settings, so the allowed directories, a security setting, hold there too."""
    return SubmitSettings.from_settings(TaskqSettings.from_env(os.environ))


POOLS = ("thread", "process", "asyncio", "auto")
EVENT_LOOPS = ("asyncio", "uvloop")  # the asyncio pool's (see worker/asyncio_pool/event_loops.py)
MAX_ACK_LINGER = 0.1  # seconds: a longer wait would hold every outcome back for nothing


@dataclass
class WorkerConfig:
    redis_url: str = DEFAULT_REDIS_URL
    prefix: str = DEFAULT_PREFIX
    queues: dict[str, int] = field(default_factory=lambda: {"default": 1})
    # Glob patterns -> weight: every known or defined queue a pattern matches is served with the pattern's weight
    # (the first matching pattern wins; a name in ``queues`` wins over all patterns). Resolved every
    # ``definitions_interval`` and at once when a matching queue's pending list gets its first task.
    queue_patterns: dict[str, int] = field(default_factory=dict)
    # Serve the queue definitions mirrored from the admin (``queues`` only while none is defined) instead of
    # ``queues``; taskworker sets it when started without --queues.
    follow_definitions: bool = False
    definitions_interval: float = 1.0  # how often the definitions' version is checked
    strict: bool = False
    concurrency: int = 10
    # Where handlers run: "thread" (async ones on the event loop thread) or "process" (every handler in a child
    # process, stopped for real on timeout or cancel; see worker/process_pool.py); "asyncio": fetch, handlers and
    # acks on one event loop, sync handlers on its threads (worker/asyncio_pool/); "auto": "asyncio" when every
    # handler is async, else "thread".
    pool: str = "thread"
    event_loop: str = "asyncio"  # the asyncio pool's event loop: "asyncio", or "uvloop" (the taskq[uvloop] extra)
    max_tasks_per_child: int | None = None  # process pool: replace a child after this many tasks (leaky handlers)
    shutdown_timeout: float = DEFAULTS.shutdown_timeout
    server_record_seconds: float = DEFAULTS.server_record_seconds  # how long the record of an ended server is kept
    lease_seconds: float = DEFAULTS.lease_seconds  # TASKS_LEASE_SECONDS, by the same name down to dequeue.lua
    heartbeat_interval: float | None = None  # None: lease / 6
    recoverer_interval: float | None = None  # None: lease / 2
    clock_skew: float | None = None  # None: lease / 6; how long past its expiry a lease is left alone
    forwarder_interval: float = DEFAULTS.forwarder_seconds
    janitor_interval: float = DEFAULTS.janitor_seconds
    fetch_batch: int = 100  # most tasks taken per dequeue call
    # Most tasks leased ahead of a free slot, waiting in this worker (see worker/processor.py); only from queues
    # without a concurrency cap or rate limit. None: five times the concurrency, at most 50. 0 turns it off.
    prefetch: int | None = None
    idle_wait: float = 1.0  # longest sleep when idle; a published wake-up ends it at once
    # Fetch-on-ack: a handler slot freed by a success is filled by the script that acknowledges it (one script call
    # per task instead of two; see worker/processor.py). False: every slot is refilled by the fetch thread.
    fetch_on_ack: bool = True
    # Seconds the acker waits for more outcomes before it writes a small batch (see worker/acker.py); 0: at once.
    ack_linger: float = 0.002
    limits: Limits = field(default_factory=Limits)
    metrics_port: int | None = None  # serve Prometheus metrics of this worker on this port (0: any free port)
    metrics_host: str = "0.0.0.0"
    health_port: int | None = None  # serve GET /healthz of this worker on this port (0: any free port)
    health_host: str = "0.0.0.0"
    # Group aggregation: the defaults of every queue (a queue definition may override them) and the round interval.
    group_settings: GroupSettings = field(default_factory=GroupSettings)
    aggregator_interval: float = DEFAULTS.aggregator_seconds
    spark: SparkSettings = field(default_factory=SparkSettings)  # session of Spark tasks (built on first use)
    spark_submit: SubmitSettings = field(default_factory=environment_submit_settings)  # spark:submit tasks
    export_dir: str | None = None  # run the event exporter (one active across workers) into this directory
    export_event_cap: int = DEFAULTS.event_export_cap  # hard cap of an exported queue's event stream (the safety net)
    redaction: Redaction = NO_REDACTION  # TASKS_REDACT: what of a failure's message and traceback is masked when stored
    server_id: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}")

    def __post_init__(self) -> None:
        check.count(self.concurrency, "concurrency", 1, 10_000, "taskworker")
        if self.prefetch is None:
            self.prefetch = min(5 * self.concurrency, 50)
        check.count(self.prefetch, "prefetch", 0, 1_000, "taskworker --prefetch")
        if self.pool not in POOLS:
            raise ValidationError(
                f"pool must be one of {', '.join(POOLS)}, got {shown(self.pool)}", op="taskworker --pool"
            )
        if self.event_loop not in EVENT_LOOPS:
            raise ValidationError(
                f"event loop must be one of {', '.join(EVENT_LOOPS)}, got {shown(self.event_loop)}",
                op="taskworker --event-loop",
            )
        if self.max_tasks_per_child is not None:
            if self.pool != "process":
                raise ValidationError(
                    "max tasks per child needs the process pool (--pool process)", op="taskworker --max-tasks-per-child"
                )
            check.count(
                self.max_tasks_per_child, "max tasks per child", 1, 1_000_000_000, "taskworker --max-tasks-per-child"
            )
        check.seconds(self.ack_linger, "ack linger", "taskworker --ack-linger", allow_zero=True)
        if self.ack_linger > MAX_ACK_LINGER:
            raise ValidationError(
                f"ack linger must be at most {MAX_ACK_LINGER} s, got {self.ack_linger}", op="taskworker --ack-linger"
            )
        check.seconds(self.lease_seconds, "lease", "taskworker")
        check.seconds(self.shutdown_timeout, "shutdown timeout", "taskworker", allow_zero=True)
        check.seconds(self.server_record_seconds, "TASKS_SERVER_RECORD_SECONDS", "taskworker")
        if self.metrics_port is not None:
            check.count(self.metrics_port, "metrics port", 0, 65535, "taskworker")
        if self.health_port is not None:
            check.count(self.health_port, "health port", 0, 65535, "taskworker")

    @classmethod
    def from_settings(cls, taskq: TaskqSettings, **options: Any) -> WorkerConfig:
        """A worker as taskq's settings configure it, with ``options`` (WorkerConfig's fields, as the command line
        gives them) over them: an option that is None was not given, and leaves the setting, or the default."""
        given = {name: value for name, value in options.items() if value is not None}
        configured: dict[str, Any] = {mine: getattr(taskq, theirs) for mine, theirs in _FROM_SETTINGS.items()}
        configured.update(
            limits=Limits.from_settings(taskq),
            group_settings=GroupSettings.from_settings(taskq),
            spark=SparkSettings.from_settings(taskq),
            spark_submit=SubmitSettings.from_settings(taskq),
            export_dir=taskq.event_export_dir if taskq.event_export else None,
            redaction=Redaction.build(
                taskq.redact_types, taskq.redact_keys, taskq.max_payload_depth, taskq.redact_patterns
            ),
        )
        return cls(**(configured | given))

    @property
    def heartbeat_every(self) -> float:
        return self.heartbeat_interval or self.lease_seconds / 6

    @property
    def recoverer_every(self) -> float:
        return self.recoverer_interval or self.lease_seconds / 2

    @property
    def skew(self) -> float:
        return self.lease_seconds / 6 if self.clock_skew is None else self.clock_skew


#: WorkerConfig's field -> the TaskqSettings field it takes its value from. The worker's names for its intervals
#: (``heartbeat_interval``...) predate the settings object; they are the worker's Python API and stay.
_FROM_SETTINGS = {
    "redis_url": "redis_url",
    "prefix": "key_prefix",
    "shutdown_timeout": "shutdown_timeout",
    "server_record_seconds": "server_record_seconds",
    "lease_seconds": "lease_seconds",
    "heartbeat_interval": "heartbeat_seconds",
    "recoverer_interval": "recoverer_seconds",
    "clock_skew": "clock_skew_seconds",
    "forwarder_interval": "forwarder_seconds",
    "janitor_interval": "janitor_seconds",
    "aggregator_interval": "aggregator_seconds",
    "export_event_cap": "event_export_cap",
}
