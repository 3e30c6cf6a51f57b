"""The producer side of groups and dependencies, as flows (see ``sans_io``) that the blocking and asyncio clients
drive: ``enqueue(..., group=...)``, ``enqueue(..., after=[...])`` and ``submit(workflow)``. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from . import producer
from . import validation as check
from .aggregation import enqueue_group, group_name
from .clock import to_ms
from .errors import EngineError, TaskIdConflictError, ValidationError
from .handlers import Registry, member_defaults
from .handlers import registry as default_registry
from .message import TaskInfo
from .quoting import shown
from .sans_io import Command, Flow
from .transitions import Transitions
from .workflows import (
    DEFAULT_KEEP,
    Chain,
    Chord,
    Parallel,
    Signature,
    Submission,
    WorkflowInfo,
    compile_workflow,
    dependency_ids,
    placement_of,
    submit_flow,
    submitted_info,
    task_info_of,
)

OP = "client.enqueue"


def enqueue_composite_flow(
    t: Transitions,
    now: float,
    task_type: Any,
    payload: Any,
    options: Mapping[str, Any],
    limits: check.PayloadLimits = check.DEFAULT_PAYLOAD_LIMITS,
) -> Flow:
    """One task into a group, or waiting for others. Scheduling and uniqueness do not combine with either."""
    options = dict(options)
    group = options.pop("group", None)
    after = options.pop("after", None)
    pass_results = options.pop("pass_results", False)
    if group is not None and after is not None:
        raise ValidationError("give group or after, not both", op=OP)
    for name in ("process_at", "process_in", "unique"):
        if options.get(name) is not None:
            raise ValidationError(f"{name} cannot be combined with {'group' if group is not None else 'after'}", op=OP)
    placement = producer.plan(t.keys, now, task_type, payload, options, OP, limits)
    queue = placement.message.queue
    now_ms = to_ms(now)
    if group is not None:
        name = group_name(group, OP)
        try:
            new_queue = yield enqueue_group(t, queue, name, [placement])
        except TaskIdConflictError:
            raise TaskIdConflictError(
                f"task id {shown(placement.message.id)} already exists in queue {shown(queue)}", op=OP
            ) from None
        if new_queue:
            yield Command("sadd", (t.keys.queues, queue))
        info = producer.info_of(placement, now_ms)
        info.state = "aggregating"
        return info
    deps = dependency_ids(after, OP)
    if placement.message.id in deps:
        raise ValidationError("a task cannot wait for itself", op=OP)
    yield from submit_flow(t, Submission(queue, [(placement, deps, "", bool(pass_results))]), OP)
    return task_info_of(placement, deps, now_ms)


class SubmitOptions(TypedDict, total=False):
    """The options of ``submit`` (both clients take them as ``**options: Unpack[SubmitOptions]``): the queue
    (default ``"default"``), callbacks run when every member succeeded (``on_success``, given the last step's
    results) or when one failed (``on_error``, given ``task.failure``), the workflow's id, and how long its record
    is kept after it ends (``keep`` seconds, default 7 days)."""

    queue: str
    on_success: Signature | None
    on_error: Signature | None
    workflow_id: str | None
    keep: float | None


def submit_workflow_flow(
    t: Transitions,
    now: float,
    workflow: Any,
    limits: check.PayloadLimits = check.DEFAULT_PAYLOAD_LIMITS,
    *,
    queue: str = "default",
    on_success: Any = None,
    on_error: Any = None,
    workflow_id: str | None = None,
    keep: float | None = None,
    handlers: Registry | None = None,
    context_headers: Mapping[str, str] | None = None,
) -> Flow:
    """``handlers``: the registry whose handlers' options (max_retry, timeout, retention) apply to the members
    that give none of their own (``handlers.member_defaults``); None: the default registry ``@handler`` fills.
    ``context_headers``: the trace context every member carries in its headers (see ``producer_tracing``)."""
    op = "client.submit"
    routes = handlers if handlers is not None else default_registry
    if not isinstance(workflow, (Signature, Chain, Parallel, Chord)):
        raise ValidationError(
            f"submit takes chain(...), parallel(...), chord(...) or sig(...), got {shown(workflow)}", op=op
        )
    for name, callback in (("on_success", on_success), ("on_error", on_error)):
        if callback is not None and not isinstance(callback, Signature):
            raise ValidationError(f"{name} must be sig(...)", op=op)
    queue = check.new_queue_name(queue, op)
    wf_id = check.task_id(workflow_id, op, visible=True) if workflow_id is not None else producer.new_task_id()
    keep_seconds = DEFAULT_KEEP if keep is None else check.seconds(keep, "keep", op)
    members = compile_workflow(workflow, on_success, on_error)
    if len({m.id for m in members}) != len(members):
        raise ValidationError("two members of the workflow have the same task_id", op=op)
    tasks = []
    for m in members:
        try:
            defaults = member_defaults(routes, m.signature.type)
            placement = placement_of(t.keys, now, m.signature, queue, m.id, op, limits, defaults, context_headers)
        except EngineError as exc:
            raise ValidationError(f"member {shown(m.signature.type)}: {exc.message}", op=op) from None
        tasks.append((placement, m.after, m.role, m.pass_results))
    submission = Submission(queue, tasks, wf_id, keep_seconds)
    yield from submit_flow(t, submission, op)
    info: WorkflowInfo = submitted_info(submission, to_ms(now))
    return info


__all__ = ["SubmitOptions", "enqueue_composite_flow", "submit_workflow_flow", "TaskInfo"]
