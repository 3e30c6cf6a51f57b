"""System checks of a TaskqBackend (``manage.py check``, and every command that runs checks), reported through the
framework's own check of every TASKS backend:

- taskq.E101: OPTIONS is not a dict, names an option the backend does not read, or gives one a wrong type;
- taskq.E102: a queue of QUEUES that taskq refuses for new tasks (``validation.new_queue_name``);
- taskq.W103: no ``REDIS_URL`` setting (taskq then uses a local Redis, which a deployment rarely means). A
  malformed one is taskq.E103, the queues app's own check (``redis_url_checks``), since nothing of taskq can use it;
- taskq.W104: a queue of QUEUES that no worker is configured for: no queue definition in the admin, no live
  worker reading it (by name or pattern), not ``default`` while nothing is defined (what a plain ``taskworker``
  serves), and not one the command running the checks is about to serve (``serving``: ``taskworker --queues``).
  Tasks enqueued there would wait until a worker serves it;
- taskq.W105: Redis did not answer, so W104 could not be checked.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from fnmatch import fnmatchcase
from typing import Any

from django.core import checks

from taskq.queues.engine.quoting import shown

from . import conf
from .engine import EngineError, ValidationError
from .engine import validation as check
from .policy_sync import policy_store

#: OPTIONS the backend reads, each with its check: a description of the wanted value, and the test.
OPTION_TYPES: dict[str, tuple[str, Any]] = {
    "MAX_RETRIES": ("an integer, 0 or more", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0),
    "TIMEOUT": ("None or a number of seconds above 0", lambda v: v is None or _positive(v)),
    "RESULT_RETENTION": ("a number of seconds above 0", lambda v: _positive(v)),
}


#: The queue names and glob patterns the command running the checks will serve once they pass (see ``serving``);
#: None outside a worker's checks.
_ABOUT_TO_SERVE: ContextVar[tuple[frozenset[str], tuple[str, ...]] | None] = ContextVar(
    "taskq_about_to_serve", default=None
)


@contextmanager
def serving(queues: Collection[str], patterns: Collection[str] = ()) -> Iterator[None]:
    """Run the checks inside as a process about to serve ``queues`` (names) and ``patterns`` (globs): W104 leaves
    them out. A worker's checks run before it starts, so it is not yet among the live servers, and would
    otherwise be told that nobody reads the very queues it was started for."""
    token = _ABOUT_TO_SERVE.set((frozenset(queues), tuple(patterns)))
    try:
        yield
    finally:
        _ABOUT_TO_SERVE.reset(token)


def for_a_worker() -> bool:
    """Whether the checks run for a worker about to start (inside ``serving``): a check of what only a process
    that serves pages needs (the live console's socket, taskq.W131) leaves a worker out."""
    return _ABOUT_TO_SERVE.get() is not None


def _served_here(queue: str) -> bool:
    about = _ABOUT_TO_SERVE.get()
    if about is None:
        return False
    names, patterns = about
    return queue in names or any(fnmatchcase(queue, pattern) for pattern in patterns)


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def backend_checks(backend: Any, *, with_redis: bool) -> list[checks.CheckMessage]:
    """Every finding for ``backend``; ``with_redis`` also asks Redis which queues workers are configured for."""
    found = [*_options(backend), *_queue_names(backend), *_redis_url()]
    # A malformed REDIS_URL is reported once, by taskq.E103, not here for each backend; nothing can be asked then.
    if with_redis and not any(m.is_serious() for m in found) and conf.redis_url_problem(_url()) is None:
        found.extend(_unserved(backend))
    return found


def _url() -> object:
    return conf.taskq_settings().redis_url


def _options(backend: Any) -> Iterator[checks.CheckMessage]:
    where = f"TASKS[{shown(backend.alias)}]['OPTIONS']"
    if not isinstance(backend.options, dict):
        yield checks.Error(f"{where} must be a dict, not {type(backend.options).__name__}", id="taskq.E101")
        return
    for name, value in backend.options.items():
        if name not in OPTION_TYPES:
            yield checks.Error(
                f"{where} has {shown(name)}, which the taskq backend does not read",
                hint=f"Its options are {', '.join(OPTION_TYPES)}.",
                id="taskq.E101",
            )
            continue
        wanted, test = OPTION_TYPES[name]
        if not test(value):
            yield checks.Error(f"{where}[{shown(name)}] must be {wanted}, not {shown(value)}", id="taskq.E101")


def _queue_names(backend: Any) -> Iterator[checks.CheckMessage]:
    for name in sorted(backend.queues, key=str):
        try:
            check.new_queue_name(name, "tasks_backend.check")
        except ValidationError as exc:
            yield checks.Error(f"TASKS[{shown(backend.alias)}]['QUEUES']: {exc}", id="taskq.E102")


def _redis_url() -> Iterator[checks.CheckMessage]:
    if not conf.project_sets("REDIS_URL"):
        yield checks.Warning(
            f"REDIS_URL is not set: Django tasks go to the local default, {_url()}",
            hint="Set REDIS_URL to the Redis your workers read.",
            id="taskq.W103",
        )


def _unserved(backend: Any) -> Iterator[checks.CheckMessage]:
    try:
        defined = set(policy_store().read().queues)
        servers = conf.get_inspector("tasks_backend").servers()
    except EngineError as exc:
        yield checks.Warning(
            f"cannot check which queues of TASKS[{shown(backend.alias)}] workers serve: {exc}",
            id="taskq.W105",
        )
        return
    for queue in sorted(backend.queues, key=str):
        if queue in defined or _served_here(queue) or any(server.reads(queue) for server in servers):
            continue
        if queue == "default" and not defined:
            continue  # a taskworker without --queues serves "default" while no queue is defined
        yield checks.Warning(
            f"TASKS[{shown(backend.alias)}] queue {shown(queue)} has no queue definition "
            "and no running worker reads it: "
            "its tasks would wait",
            hint=f"Define the queue in the admin, or start a worker with --queues {queue}.",
            id="taskq.W104",
        )
