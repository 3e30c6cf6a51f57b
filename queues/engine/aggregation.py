"""Group aggregation, as asynq does it: tasks enqueued with ``group="user:42"`` wait in the ``aggregating`` state
in that group of their queue, and the worker's aggregator combines a due group into one task with the aggregation
function registered for the tasks' type.

    from taskq.queues.engine import aggregator

    @aggregator("email:digest")
    def digest(tasks):
        return "email:send-digest", {"lines": [t.json()["line"] for t in tasks]}

A group is due when it holds ``max_size`` tasks, when its oldest task has waited ``max_delay``, or when no task
joined it for the ``grace`` period (per queue: settings defaults, overridden by the queue's definition).

Crash safety (asynq's aggregation sets): one script cuts the group's ids into an aggregation set registered with a
deadline; the aggregator reads the set, runs the function, and a second script enqueues the combined task and
deletes the set and its tasks in one step. An aggregator that dies in between leaves the set behind; once its
deadline passes, a reclaim script moves its ids back into the group, and a later check cuts them again.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import validation as check
from .broker import Broker, BrokerStore
from .clock import to_ms
from .errors import ValidationError
from .handlers import Task
from .message import TaskMessage
from .producer import new_task_id
from .quoting import shown
from .sans_io import command
from .scripts import script
from .settings import DEFAULTS, TaskqSettings
from .transitions import Call, Placement, Transitions
from .type_routes import TypeRoutes

MAX_GROUP_NAME = 256
#: How long an aggregator has between the cut and the combined task before its set is reclaimed (asynq: 2 min).
AGGREGATION_DEADLINE = 120.0


@dataclass(frozen=True)
class GroupSettings:
    """When a queue's groups are due: ``grace`` seconds without a new task, ``max_delay`` seconds since the oldest
    task (0: no limit), or ``max_size`` tasks (0: no limit; also the most tasks one combined task takes)."""

    grace: float = DEFAULTS.group_grace_seconds
    max_delay: float = DEFAULTS.group_max_delay_seconds
    max_size: int = DEFAULTS.group_max_size

    def __post_init__(self) -> None:
        check.seconds(self.grace, "group grace period", "aggregation", allow_zero=True)
        check.seconds(self.max_delay, "group max delay", "aggregation", allow_zero=True)
        check.count(self.max_size, "group max size", 0, 1_000_000, "aggregation")

    @classmethod
    def from_settings(cls, settings: TaskqSettings) -> GroupSettings:
        """Every queue's defaults (a queue definition may override them)."""
        return cls(settings.group_grace_seconds, settings.group_max_delay_seconds, settings.group_max_size)


def group_name(value: Any, op: str = "") -> str:
    return check.name(value, "group", MAX_GROUP_NAME, op)


# -- aggregation functions -----------------------------------------------------------------------------------------

#: ``fn(tasks)`` or ``fn(group, tasks)`` -> (type, payload) of the combined task.
AggregateFunction = Callable[..., tuple[str, Any]]


@dataclass
class Aggregator:
    type: str
    func: AggregateFunction

    def __call__(self, group: str, tasks: list[Task]) -> tuple[str, Any]:
        wants_group = len(inspect.signature(self.func).parameters) >= 2
        result = self.func(group, tasks) if wants_group else self.func(tasks)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise ValidationError(
                f"aggregator {shown(self.type)} must return (type, payload), got {shown(result)}", op="aggregator"
            )
        return result


class AggregatorRegistry(TypeRoutes[Aggregator]):
    """Aggregation functions by task type; a group goes to the function registered for the longest prefix of the
    type of its oldest task (as handlers route)."""


#: The registry ``@aggregator`` adds to by default; workers serve it.
aggregators = AggregatorRegistry()


def aggregator(
    task_type: str, *, registry: AggregatorRegistry = aggregators
) -> Callable[[AggregateFunction], AggregateFunction]:
    """Register the decorated function as the aggregation function of groups of ``task_type`` tasks."""
    check.task_type(task_type, "aggregator")

    def register(func: AggregateFunction) -> AggregateFunction:
        registry.add(Aggregator(task_type, func))
        return func

    return register


# -- transitions ------------------------------------------------------------------------------------------------


def enqueue_group(t: Transitions, queue: str, group: str, items: Sequence[Placement], actor: str = "") -> Call:
    """New tasks -> aggregating in ``group`` (lua/enqueue_group.lua). The reply says whether the queue is new."""
    q = t.queue(queue)
    keys, args = t.script_context(q, actor)
    rows = [
        value
        for p in items
        for value in (p.message.id, p.message.type, p.encoded_options or p.message.encode_options(), p.message.payload)
    ]
    return Call(
        "enqueue",
        script("enqueue_group"),
        keys + [q.group(group), q.groups],
        args + [group] + rows,
        lambda reply: reply == b"NEW",
    )


def set_member(set_id: str, group: str) -> str:
    """How an aggregation set is named in the queue's aggregation_sets: the group rides along for a reclaim."""
    return f"{set_id}:{group}"


def parse_member(member: str) -> tuple[str, str]:
    set_id, _, group = member.partition(":")
    return set_id, group


def check_group(
    t: Transitions, queue: str, group: str, settings: GroupSettings, set_id: str, deadline: float = AGGREGATION_DEADLINE
) -> Call:
    """Cut ``group`` into the aggregation set ``set_id`` if it is due (lua/aggregation_check.lua); returns how
    many tasks were cut."""
    q = t.queue(queue)
    now = t.clock.now()
    return Call(
        "aggregation_check",
        script("aggregation_check"),
        [q.group(group), q.groups, q.aggregation_sets, q.aggregation_set(set_id)],
        [
            group,
            to_ms(now),
            to_ms(settings.grace),
            to_ms(settings.max_delay),
            settings.max_size,
            to_ms(now + deadline),
            set_member(set_id, group),
        ],
        int,
    )


def aggregation_done(
    t: Transitions, queue: str, set_id: str, group: str, combined: TaskMessage, actor: str = ""
) -> Call:
    """Enqueue the combined task and delete the set and its tasks (lua/aggregation_done.lua)."""
    q = t.queue(queue)
    return t.transition(
        "aggregation_done",
        q,
        actor,
        [q.pending, q.aggregation_sets, q.aggregation_set(set_id)],
        [set_member(set_id, group), combined.id, combined.type, combined.encode_options(), combined.payload],
    )


def aggregation_reclaim(t: Transitions, queue: str, set_id: str, group: str) -> Call:
    """Put an expired aggregation set's tasks back into their group (lua/aggregation_reclaim.lua)."""
    q = t.queue(queue)
    return Call(
        "aggregation_reclaim",
        script("aggregation_reclaim"),
        [q.aggregation_sets, q.aggregation_set(set_id), q.group(group), q.groups],
        [set_member(set_id, group), group, to_ms(t.clock.now())],
        int,
    )


# -- the aggregator's rounds --------------------------------------------------------------------------------------


class GroupStore(BrokerStore):
    """Reads and steps of aggregation for the worker's aggregator (and for tests that stop it half-way)."""

    area = "aggregator"

    def __init__(self, broker: Broker, registry: AggregatorRegistry = aggregators, actor: str = "aggregator") -> None:
        super().__init__(broker)
        self.registry = registry
        self.actor = actor
        self.ops = broker.transitions

    def groups(self, queue: str) -> list[str]:
        return sorted(g.decode() for g in self._send("groups", "smembers", self.keys.queue(queue).groups))

    def oldest_type(self, queue: str, group: str) -> str | None:
        q = self.keys.queue(queue)
        ids = self._send("oldest_type", "zrange", q.group(group), 0, 0)
        if not ids:
            return None
        raw = self._send("oldest_type", "hget", q.task(ids[0].decode()), "type")
        return raw.decode() if raw else None

    def cut(self, queue: str, group: str, settings: GroupSettings) -> tuple[str, int]:
        """Step one: cut the group if due. Returns the new set's id and how many tasks it took (0: not due)."""
        set_id = new_task_id()
        return set_id, int(self.broker.run(check_group(self.ops, queue, group, settings, set_id)))

    def set_tasks(self, queue: str, set_id: str) -> list[Task]:
        q = self.keys.queue(queue)
        ids = self._send("set_tasks", "zrange", q.aggregation_set(set_id), 0, -1)
        rows = self._batch(
            "set_tasks",
            [command("hmget", q.task(task_id.decode()), "type", "payload", "msg") for task_id in ids],
            atomic=False,
        )
        tasks = []
        for task_id, (ttype, payload, options) in zip(ids, rows, strict=True):
            if ttype is None:
                continue
            try:
                message = TaskMessage.decode(task_id.decode(), queue, ttype, payload or b"", options or b"")
            except (ValueError, TypeError):
                message = TaskMessage(task_id.decode(), ttype.decode("utf-8", "replace"), payload or b"", queue)
            tasks.append(Task(message, 0))
        return tasks

    def combine(self, queue: str, group: str, set_id: str) -> TaskMessage:
        """Step two, in Python: run the aggregation function over the set's tasks. Raises when there is none."""
        tasks = self.set_tasks(queue, set_id)
        if not tasks:
            raise LookupError(f"aggregation set {set_id} of group {shown(group)} is empty")
        func = self.registry.route(tasks[0].type)
        if func is None:
            raise LookupError(f"no aggregator for task type {shown(tasks[0].type)}")
        task_type, payload = func(group, tasks)
        op = "aggregator"
        return TaskMessage(
            new_task_id(),
            check.task_type(task_type, op),
            check.payload(payload, op),
            queue,
            created_ms=to_ms(self.broker.clock.now()),
        )

    def finish(self, queue: str, group: str, set_id: str, combined: TaskMessage) -> None:
        """Step three: the combined task in, the set and its tasks out, in one script."""
        self.broker.run(aggregation_done(self.ops, queue, set_id, group, combined, self.actor))

    def expired_sets(self, queue: str) -> list[tuple[str, str]]:
        q = self.keys.queue(queue)
        members = self._send(
            "expired_sets",
            "zrangebyscore",
            q.aggregation_sets,
            "-inf",
            to_ms(self.broker.clock.now()),
            start=0,
            num=100,
        )
        return [parse_member(m.decode()) for m in members]

    def reclaim(self, queue: str, set_id: str, group: str) -> int:
        return int(self.broker.run(aggregation_reclaim(self.ops, queue, set_id, group)))
