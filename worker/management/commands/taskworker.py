"""``python manage.py taskworker``: run a worker process."""

from __future__ import annotations

import sys
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError

from taskq.queues import conf, tasks_checks
from taskq.queues.engine import LayoutVersionError, ValidationError
from taskq.worker import heap
from taskq.worker.asynq.runtime import AsynqRuntime
from taskq.worker.config import WorkerConfig, parse_queues, split_patterns
from taskq.worker.discovery import add_import_option, import_handlers, log_to_stderr
from taskq.worker.server import Server
from taskq.worker.supervisor import Supervisor, child_arguments, process_count, process_index


class Command(BaseCommand):
    help = "Run a task worker: fetch tasks from the given queues and run their handlers."

    #: The ``--queues`` of this run (None: the queue definitions), for its system checks.
    queues_option: str | None = None

    def execute(self, *args: Any, **options: Any) -> Any:
        self.queues_option = options.get("queues")
        return super().execute(*args, **options)

    def check(self, *args: Any, **kwargs: Any) -> None:
        """The system checks, as a worker about to serve its ``--queues``: taskq.W104 must not warn that nobody
        reads them (this worker is not running yet, so no live server does). Without ``--queues`` it serves the
        queue definitions, or ``default`` while none is defined, which W104 leaves out already."""
        queues: dict[str, int] = {}
        patterns: dict[str, int] = {}
        if self.queues_option is not None:
            try:
                queues, patterns = split_patterns(parse_queues(self.queues_option))
            except ValidationError:
                pass  # handle() refuses a bad --queues, naming what is wrong with it
        with tasks_checks.serving(queues, patterns):
            super().check(*args, **kwargs)

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--queues",
            default=None,
            help="queues and weights, e.g. critical=6,default=3,low=1; glob patterns such as "
            "'tenant-*=1' serve every matching queue, also ones created later (default: the "
            "queue definitions from the admin, followed while the worker runs; 'default' "
            "while none is defined)",
        )
        parser.add_argument(
            "--strict",
            action="store_true",
            help="strict priority: queues in order of their rank (definitions), then weight",
        )
        parser.add_argument("--concurrency", type=int, default=10, help="handlers running at once (default 10)")
        parser.add_argument(
            "--processes",
            default="1",
            help="worker processes under one supervisor, each with every other option (its own concurrency, "
            "pool and fetch loop; metrics and health ports offset by its index); 'auto': one per CPU (default 1)",
        )
        parser.add_argument(
            "--pool",
            default="thread",
            help="where handlers run: 'thread' (default; async handlers on an event loop), "
            "'process' (child processes, stopped for real on timeout or cancel), 'asyncio' (fetch, async handlers "
            "and acks on one event loop; sync handlers on its threads) or 'auto' ('asyncio' when every handler is "
            "async, else 'thread')",
        )
        parser.add_argument(
            "--event-loop",
            default="asyncio",
            help="with --pool asyncio: the event loop, 'asyncio' (default) or 'uvloop' (pip install 'taskq[uvloop]')",
        )
        parser.add_argument(
            "--max-tasks-per-child",
            type=int,
            default=None,
            help="with --pool process: replace a handler process after this many tasks",
        )
        parser.add_argument(
            "--prefetch",
            type=int,
            default=None,
            help="most tasks leased ahead of a free slot, from queues without a cap or rate limit "
            "(default: 5 x the concurrency, at most 50; 0: off)",
        )
        parser.add_argument(
            "--no-fetch-on-ack",
            dest="fetch_on_ack",
            action="store_false",
            default=None,
            help="refill the slot of a success from the fetch thread, not in the call that acknowledges it",
        )
        parser.add_argument(
            "--ack-linger",
            type=float,
            default=None,
            help="seconds the acker waits for more outcomes before it writes a small batch (default 0.002; 0: at "
            "once; at most 0.1)",
        )
        parser.add_argument(
            "--shutdown-timeout",
            type=float,
            default=None,
            help="seconds running tasks get to finish on SIGTERM before they are requeued",
        )
        parser.add_argument(
            "--metrics-port",
            type=int,
            default=None,
            help="serve this worker's Prometheus metrics (run times, in flight, fetch latency) on this port",
        )
        parser.add_argument("--metrics-host", default="0.0.0.0", help="address the metrics port binds to")
        parser.add_argument(
            "--health-port",
            type=int,
            default=None,
            help="serve GET /healthz on this port: 200 while the worker's loops run and its "
            "heartbeat reaches Redis, 503 otherwise",
        )
        parser.add_argument("--health-host", default="0.0.0.0", help="address the health port binds to")
        add_import_option(parser, "handlers")

    def handle(self, *args: Any, **options: Any) -> None:
        log_to_stderr()
        on_asynq = conf.taskq_settings().key_format == "asynq"
        try:
            if on_asynq:
                refuse_on_asynq(options)
            processes = process_count(options["processes"])
            config = self.config(options)
        except (ValidationError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        try:
            import_handlers([app.name for app in apps.get_app_configs()], options["imports"])
        except ImportError as exc:
            raise CommandError(f"cannot import handlers: {exc}") from None
        if on_asynq:
            AsynqRuntime(config).run()
            return
        if processes > 1:
            # The children run this same command line; call_command has none to give them.
            if "taskworker" not in sys.argv:
                raise CommandError("--processes above 1 needs a command line: run manage.py taskworker")
            Supervisor([sys.executable, *child_arguments(sys.argv)], processes, config.shutdown_timeout).run()
            return
        try:
            server = Server(config)
            heap.settle()  # the process is built: what start-up made lives as long as it does (see worker/heap.py)
            server.run()
        except LayoutVersionError as exc:  # exit non-zero, naming both layouts, instead of corrupting the keyspace
            raise CommandError(str(exc)) from None

    @staticmethod
    def config(options: dict[str, Any]) -> WorkerConfig:
        """The worker of the command line's options over taskq's settings over the defaults."""
        queues, patterns = split_patterns(parse_queues("default" if options["queues"] is None else options["queues"]))
        return WorkerConfig.from_settings(
            conf.taskq_settings(),
            queues=queues,
            queue_patterns=patterns,
            follow_definitions=options["queues"] is None,
            strict=options["strict"],
            concurrency=options["concurrency"],
            pool=options["pool"],
            event_loop=options["event_loop"],
            max_tasks_per_child=options["max_tasks_per_child"],
            prefetch=options["prefetch"],
            fetch_on_ack=options["fetch_on_ack"],
            ack_linger=options["ack_linger"],
            shutdown_timeout=options["shutdown_timeout"],
            metrics_port=offset(options["metrics_port"]),
            metrics_host=options["metrics_host"],
            health_port=offset(options["health_port"]),
            health_host=options["health_host"],
        )


#: The options that only taskq's own key format can honour -> why (what asynq's format lacks), with the value each
#: takes when it is not given.
TASKQ_ONLY = {
    "processes": ("1", "the supervisor of several processes is taskq's"),
    "pool": ("thread", "the process pool writes through taskq's fenced leases, which asynq's keys do not have"),
    "max_tasks_per_child": (None, "it belongs to the process pool"),
    "event_loop": ("asyncio", "it belongs to taskq's asyncio pool"),
    "prefetch": (None, "asynq leases one task per free slot"),
    "fetch_on_ack": (None, "asynq acknowledges each task by itself"),
    "ack_linger": (None, "asynq acknowledges each task by itself"),
    "metrics_port": (None, "the worker's metrics are taskq's"),
    "health_port": (None, "the worker's health endpoint is taskq's"),
}


def refuse_on_asynq(options: dict[str, Any]) -> None:
    """Refuse, naming the option and why, what a worker on asynq's keys (``TASKS_KEY_FORMAT = "asynq"``) cannot
    do: taskq-only options, and ``--queues`` glob patterns (asynq's queues announce no new work to follow)."""
    for name, (unset, why) in TASKQ_ONLY.items():
        if options.get(name, unset) != unset:
            flag = "--no-fetch-on-ack" if name == "fetch_on_ack" else "--" + name.replace("_", "-")
            raise ValidationError(f"{flag} does not apply on asynq's keys (TASKS_KEY_FORMAT = asynq): {why}")
    if options["queues"] is not None and split_patterns(parse_queues(options["queues"]))[1]:
        raise ValidationError(
            "--queues patterns do not apply on asynq's keys (TASKS_KEY_FORMAT = asynq): name each queue"
        )


def offset(port: int | None) -> int | None:
    """A port as this process serves it: the given one, plus the process's index under ``--processes``."""
    return None if port is None else port + process_index()
