"""Workflows (chain, parallel and chord: Machinery's chain, group and chord) and task dependencies ("B after A",
Optimus), built on one mechanism: a task may wait for other tasks of its queue to succeed.

    from taskq.queues.engine import chain, chord, parallel, sig

    info = client.submit(chain(sig("fetch", {"url": u}), sig("parse"), sig("store")), queue="etl")
    info = client.submit(chord([sig("resize", {"size": s}) for s in (64, 128)], sig("publish")),
                         on_error=sig("alert"))
    client.enqueue("report:mail", {...}, after=[report_task_id])    # B may be enqueued before A finishes, or exists

A waiting task is in the ``waiting`` state (sorted set ``waiting`` of its queue): not pending, so no worker sees it.
The script that records a task's success (done or complete) releases the tasks waiting for it in the same step,
so no crash can leave a dependent behind; the script that archives a task (retries spent, skip-retry, an
operator) archives the tasks waiting for it, with the error "dependency <id> failed: ...".

A workflow is a set of such tasks with a record (hash ``wf:<id>`` of the queue) that the same scripts update:
it succeeds when every member has succeeded; it fails when a member is archived (or deleted before it ran):
members still waiting are archived as cancelled, members already pending or running finish on their own, the
``on_error`` callback is released with ``task.failure`` set, and the ``on_success`` callback never runs.
All members of a workflow live in one queue, so every step is one script in one Redis Cluster slot.

Deliberately shares its name with ``console/views/workflows.py``, the console's Workflows pages (console views
are named after their pages).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import producer, producer_tracing
from . import validation as check
from .clock import from_ms, to_ms
from .errors import EngineError, FailedPreconditionError, TaskIdConflictError, TaskNotFoundError, ValidationError
from .keys import Keys
from .message import TaskInfo
from .quoting import shown
from .sans_io import Batch, Command, Flow
from .transitions import Call, Placement, Transitions

#: How long a finished workflow's record is kept (seconds) unless the submit says otherwise.
DEFAULT_KEEP = 7 * 24 * 3600.0
MAX_MEMBERS = 10_000
MAX_DEPENDENCIES = 1000
#: Options a member may carry (scheduling and uniqueness do not mix with waiting for others).
MEMBER_OPTIONS = frozenset({"max_retry", "timeout", "deadline", "retention", "headers", "task_id"})
ROLES = ("member", "on_success", "on_error")


# -- describing workflows -------------------------------------------------------------------------------------


@dataclass
class Signature:
    """One task of a workflow: type, payload, options. ``pass_result``: whether it gets the results of the
    tasks it waits for as ``task.results`` (None: the default of where it stands)."""

    type: str
    payload: Any = b""
    options: dict[str, Any] = field(default_factory=dict)
    pass_result: bool | None = None


@dataclass
class Chain:
    items: tuple[Node, ...]
    pass_results: bool = True


@dataclass
class Parallel:
    """Items that run side by side (Machinery's and Celery's "group"; named apart from the aggregation group of
    ``enqueue(group=)``)."""

    items: tuple[Node, ...]


@dataclass
class Chord:
    header: Parallel
    callback: Node


Node = Signature | Chain | Parallel | Chord


def sig(type: str, payload: Any = b"", *, pass_result: bool | None = None, **options: Any) -> Signature:
    """A workflow member: ``sig("resize", {"size": 64}, max_retry=3)``."""
    unknown = set(options) - MEMBER_OPTIONS
    if unknown:
        raise ValidationError(
            f"option(s) {', '.join(sorted(unknown))} cannot be used in a workflow; members take "
            f"{', '.join(sorted(MEMBER_OPTIONS))}",
            op="workflow",
        )
    return Signature(type, payload, dict(options), pass_result)


def _nodes(items: Sequence[Any], what: str) -> tuple[Node, ...]:
    if len(items) == 1 and isinstance(items[0], (list, tuple)):
        items = tuple(items[0])
    if not items:
        raise ValidationError(f"a {what} needs at least one member", op="workflow")
    for item in items:
        if not isinstance(item, (Signature, Chain, Parallel, Chord)):
            raise ValidationError(
                f"a {what} member must be sig(...), chain, parallel or chord, got {shown(item)}", op="workflow"
            )
    return tuple(items)


def chain(*items: Any, pass_results: bool = True) -> Chain:
    """Each item runs after the previous one succeeded; with ``pass_results`` (default) each gets the results of
    the previous one as ``task.results`` (a list: one result, or a parallel's results in order)."""
    return Chain(_nodes(items, "chain"), pass_results)


def parallel(*items: Any) -> Parallel:
    """The items run in parallel; wait for all with ``client.wait_workflow``."""
    return Parallel(_nodes(items, "parallel"))


def chord(header: Any, callback: Node) -> Chord:
    """``header`` (a parallel, or a list of members) in parallel, then ``callback`` with all their results."""
    head = (
        header
        if isinstance(header, Parallel)
        else parallel(*(header if isinstance(header, list | tuple) else [header]))
    )
    return Chord(head, _nodes([callback], "chord callback")[0])


# -- compiling a workflow into tasks with dependencies ---------------------------------------------------------


@dataclass
class Member:
    signature: Signature
    id: str
    after: list[str]
    pass_results: bool
    role: str = "member"


def compile_workflow(
    node: Node, on_success: Signature | None = None, on_error: Signature | None = None
) -> list[Member]:
    """The members in submit order (dependencies before dependents), each with the ids it waits for."""
    members: list[Member] = []

    def new_id(s: Signature) -> str:
        return str(s.options.get("task_id") or producer.new_task_id())

    def walk(n: Node, deps: list[str], pass_in: bool) -> list[str]:
        if isinstance(n, Signature):
            member = Member(n, new_id(n), list(deps), n.pass_result if n.pass_result is not None else pass_in)
            members.append(member)
            return [member.id]
        if isinstance(n, Chain):
            tails = deps
            for index, item in enumerate(n.items):
                tails = walk(item, tails, (n.pass_results and bool(tails)) if index else pass_in)
            return tails
        if isinstance(n, Parallel):
            return [tail for item in n.items for tail in walk(item, deps, pass_in)]
        tails = walk(n.header, deps, pass_in)
        return walk(n.callback, tails, True)

    tails = walk(node, [], False)
    if on_success is not None:
        members.append(
            Member(
                on_success,
                new_id(on_success),
                tails,
                True if on_success.pass_result is None else on_success.pass_result,
                "on_success",
            )
        )
    if on_error is not None:
        members.append(Member(on_error, new_id(on_error), [], False, "on_error"))
    if len(members) > MAX_MEMBERS:
        raise ValidationError(
            f"a workflow has at most {MAX_MEMBERS} members, this one {len(members)}", op="client.submit"
        )
    return members


def dependency_ids(after: Any, op: str) -> list[str]:
    """Validate ``after=``: task ids of the same queue."""
    if isinstance(after, str) or not isinstance(after, (list, tuple)):
        raise ValidationError("after must be a list of task ids", op=op)
    if len(after) > MAX_DEPENDENCIES:
        raise ValidationError(f"after names at most {MAX_DEPENDENCIES} tasks", op=op)
    ids = [check.task_id(value, op) for value in after]
    return list(dict.fromkeys(ids))


def placement_of(
    keys: Keys,
    now: float,
    s: Signature,
    queue: str,
    task_id: str,
    op: str,
    limits: check.PayloadLimits = check.DEFAULT_PAYLOAD_LIMITS,
    defaults: Mapping[str, Any] | None = None,
    context_headers: Mapping[str, str] | None = None,
) -> Placement:
    """A member's task, validated like an enqueue (without scheduling or uniqueness). ``defaults`` (its handler's,
    see ``handlers.member_defaults``) apply where the member's own options say nothing; ``context_headers`` (the
    submitting call's trace context) go under its own headers."""
    options = {k: v for k, v in s.options.items() if k != "task_id" and v is not None}
    if context_headers:
        options = producer_tracing.carrying(options, context_headers)
    t = producer.template(now, {**(defaults or {}), **options, "queue": queue}, op)
    return producer.place(keys, t, s.type, s.payload, task_id, op, limits)


# -- the transition ---------------------------------------------------------------------------------------------


@dataclass
class Submission:
    """Tasks to submit with their dependencies, and the workflow they make up (``workflow_id`` "" for none)."""

    queue: str
    tasks: list[tuple[Placement, list[str], str, bool]]  # placement, after, role ("" outside a workflow), pass
    workflow_id: str = ""
    keep: float = DEFAULT_KEEP


def submit_call(t: Transitions, s: Submission, actor: str = "") -> Call:
    """lua/submit.lua. The reply says whether the queue is new."""
    q = t.queue(s.queue)
    members = [[p.message.id, p.message.type, role, after] for p, after, role, _ in s.tasks]
    left = sum(1 for _, _, role, _ in s.tasks if role == "member")
    rows: list[Any] = []
    for p, after, role, pass_results in s.tasks:
        rows += [
            p.message.id,
            p.message.type,
            p.encoded_options or p.message.encode_options(),
            p.message.payload,
            json.dumps(after),
            role + ("+p" if pass_results else ""),
        ]
    wf_key = q.workflow(s.workflow_id or "-")
    return t.transition(
        "submit",
        q,
        actor,
        [q.pending, q.waiting, wf_key, q.workflows],
        [s.workflow_id, json.dumps(members) if s.workflow_id else "", to_ms(s.keep), left] + rows,
        lambda reply: reply == b"NEW",
    )


def explain(exc: EngineError, s: Submission, op: str) -> EngineError:
    """Name the refused task by its id, not its position."""
    if isinstance(exc, TaskIdConflictError) and exc.message.isdigit():
        index = int(exc.message)
        if index == 0:
            return TaskIdConflictError(
                f"workflow id {shown(s.workflow_id)} already exists in queue {shown(s.queue)}", op=op
            )
        message = s.tasks[index - 1][0].message
        return TaskIdConflictError(
            f"task id {shown(message.id)} already exists in queue {shown(s.queue)}; nothing was submitted", op=op
        )
    if isinstance(exc, FailedPreconditionError) and exc.message.startswith("dependency cycle"):
        return FailedPreconditionError(
            f"{exc.message}: these tasks would wait for each other forever; nothing was submitted", op=op
        )
    if isinstance(exc, FailedPreconditionError):
        return FailedPreconditionError(
            f"{exc.message}: a task waiting for it could never run; nothing was submitted", op=op
        )
    return exc


def action_call(t: Transitions, name: str, queue: str, workflow_id: str, actor: str) -> Call:
    """An operator's action on a whole workflow, one script each: ``workflow_retry`` (a failed workflow runs again
    from where it failed), ``workflow_cancel`` (nothing more of it runs) or ``workflow_archive`` (its steps that have
    not started are archived, so it fails now). The reply is how many members the action moved."""
    q = t.queue(queue)
    own = {
        "workflow_retry": [q.pending, q.archived, q.waiting],
        "workflow_cancel": [q.pending, q.scheduled, q.retry, q.archived, q.waiting],
        "workflow_archive": [q.pending, q.scheduled, q.retry, q.archived],
    }[name]
    return t.transition(name, q, actor, [q.workflow(workflow_id), *own], [workflow_id], int)


def submit_flow(t: Transitions, s: Submission, op: str) -> Flow:
    try:
        new_queue = yield submit_call(t, s)
    except EngineError as exc:
        raise explain(exc, s, op) from None
    if new_queue:
        yield Command("sadd", (t.keys.queues, s.queue))
    return None


# -- reading workflows ------------------------------------------------------------------------------------------


@dataclass
class MemberInfo:
    """One member: its role, what it waits for, and where it is (its task's state, or how it ended)."""

    id: str
    type: str
    role: str
    after: list[str]
    state: str  # waiting, pending, active, ... while it exists; succeeded, failed, cancelled, skipped when ended
    result: Any = None
    error: str | None = None


@dataclass
class WorkflowInfo:
    id: str
    queue: str
    state: str  # running, succeeded, failed, cancelled (by an operator)
    members: list[MemberInfo] = field(default_factory=list)
    created_at: datetime | None = None
    finished_at: datetime | None = None
    failed_member: str | None = None
    error: str | None = None
    left: int = 0  # members still to succeed

    @property
    def done(self) -> bool:
        return self.state in WORKFLOW_ENDED

    @property
    def steps(self) -> list[MemberInfo]:
        """The members proper: not the on_success and on_error callbacks."""
        return [m for m in self.members if m.role == "member"]

    @property
    def succeeded(self) -> int:
        """How many of ``steps`` have succeeded: the progress, "3 of 5 done"."""
        return sum(1 for m in self.steps if m.state == "succeeded")

    @property
    def to_run(self) -> list[MemberInfo]:
        """Members (callbacks too) still to run or running: none once a workflow succeeded; after a failure or a
        cancel, those already pending or running that finish on their own (``left`` counts the members that have
        not succeeded, which stays above 0 after a failure)."""
        return [
            m for m in self.members if m.state in LIVE_STATES and not (m.role == "on_error" and m.state == "waiting")
        ]

    @property
    def stuck(self) -> list[MemberInfo]:
        """Members that wait for another attempt (retry) or a later time (scheduled): where a workflow stalls."""
        return [m for m in self.members if m.state in ("retry", "scheduled")]

    def actions(self) -> list[str]:
        """The operator actions that apply now (see ``Inspector.retry_workflow`` and the others)."""
        out = []
        if self.state == "failed":
            out.append("retry")
        unstarted = [m for m in self.members if m.state in UNSTARTED and m.role != "on_error"]
        if self.state == "running" or (self.state == "failed" and unstarted):
            out.append("cancel")
        if self.state == "running" and any(m.state in ("pending", "scheduled", "retry") for m in self.steps):
            out.append("archive")
        return out

    @property
    def current(self) -> list[MemberInfo]:
        """Where it is: the members pending, running, scheduled or retrying right now."""
        return [m for m in self.members if m.state in ("pending", "active", "scheduled", "retry")]

    def results(self) -> list[Any]:
        """The results of the (non-callback) members that succeeded, in member order."""
        return [m.result for m in self.members if m.role == "member" and m.state == "succeeded"]

    def member(self, member_id: str) -> MemberInfo:
        return next(m for m in self.members if m.id == member_id)


ENDED = frozenset({"succeeded", "failed", "cancelled", "skipped"})
#: How a workflow may end.
WORKFLOW_ENDED = frozenset({"succeeded", "failed", "cancelled"})
#: A member's task states while it has not ended.
LIVE_STATES = frozenset({"waiting", "pending", "active", "scheduled", "retry"})
#: The states of a member that has not started: what cancel and archive take (``lua/workflow_cancel.lua``).
UNSTARTED = frozenset({"waiting", "pending", "scheduled", "retry"})


def _json_or_bytes(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def read_flow(keys: Keys, queue: str, workflow_id: str) -> Flow:
    """The workflow and the live state of each member; None when there is no such workflow."""
    found = yield from read_many_flow(keys, queue, [workflow_id], with_results=True)
    return found.get(workflow_id)


#: Members whose live state a list of workflows reads, at most, per workflow (its own page reads all of them).
LISTED_MEMBERS = 1000


def read_many_flow(keys: Keys, queue: str, workflow_ids: list[str], *, with_results: bool = False) -> Flow:
    """``{id: WorkflowInfo}`` of the workflows still kept, in two round trips for all of them: their records, then
    each member's state and last error (and result, ``with_results``). For a list (without results), only the
    members that have not ended (an ended one's outcome is in the record), at most ``LISTED_MEMBERS`` of each;
    one not read reads "gone"."""
    q = keys.queue(queue)
    if not workflow_ids:
        return {}
    records = yield Batch([Command("hgetall", (q.workflow(wf),)) for wf in workflow_ids])
    found = {wf: fields for wf, fields in zip(workflow_ids, records, strict=True) if fields}
    described = {wf: json.loads(fields.get(b"members", b"[]")) for wf, fields in found.items()}
    wanted = ("state", "error", "result") if with_results else ("state", "error")
    reads = [
        (wf, m[0])
        for wf, members in described.items()
        for m in (members if with_results else [m for m in members if b"s:" + m[0].encode() not in found[wf]])[
            : None if with_results else LISTED_MEMBERS
        ]
    ]
    replies = (yield Batch([Command("hmget", (q.task(member_id), *wanted)) for _, member_id in reads])) if reads else []
    live = {ref: (list(reply) + [None])[:3] for ref, reply in zip(reads, replies, strict=True)}
    return {
        wf: _info_of(queue, wf, fields, described[wf], {m[0]: live.get((wf, m[0])) for m in described[wf]})
        for wf, fields in found.items()
    }


def _info_of(
    queue: str, workflow_id: str, fields: dict[bytes, bytes], described: list[Any], live: dict[str, Any]
) -> WorkflowInfo:
    members = []
    for member_id, task_type, role, after in described:
        state, error, result = live.get(member_id) or (None, None, None)
        # An ended member's outcome is recorded in the workflow; a live one's state is its task's.
        ended = fields.get(f"s:{member_id}".encode())
        status = ended.decode() if ended is not None else (state.decode() if state else "gone")
        outcome = fields.get(f"r:{member_id}".encode()) if ended is not None and status == "succeeded" else None
        members.append(
            MemberInfo(
                member_id,
                task_type,
                role,
                after,
                status,
                _json_or_bytes(outcome if outcome is not None else result),
                error.decode("utf-8", "replace") if error else None,
            )
        )

    def text(name: bytes) -> str | None:
        value = fields.get(name)
        return value.decode("utf-8", "replace") if value is not None else None

    return WorkflowInfo(
        workflow_id,
        queue,
        text(b"state") or "running",
        members,
        from_ms(int(fields.get(b"created", 0))),
        from_ms(int(fields.get(b"finished", 0))),
        text(b"failed"),
        text(b"error"),
        int(fields.get(b"left", 0)),
    )


RECHECK_MS = 1000


def wait_flow(keys: Keys, queue: str, workflow_id: str, timeout: float | None) -> Flow:
    """Follow the queue's event stream until the workflow has ended: every change of a workflow happens in a
    script that also appends a member's event, so a blocked read wakes up for each."""
    q = keys.queue(queue)
    deadline = None if timeout is None else time.monotonic() + timeout
    newest = yield Command("xrevrange", (q.events,), {"count": 1})
    last_id = newest[0][0] if newest else "0-0"
    while True:
        info = yield from read_flow(keys, queue, workflow_id)
        if info is None:
            raise TaskNotFoundError(
                f"no workflow {shown(workflow_id)} in queue {shown(queue)}", op="client.wait_workflow"
            )
        if info.done:
            return info
        block = RECHECK_MS if deadline is None else min(RECHECK_MS, int((deadline - time.monotonic()) * 1000))
        if block <= 0:
            raise TimeoutError(f"workflow {workflow_id} did not finish within {timeout} s")
        reply = yield Command("xread", ({q.events: last_id},), {"block": block, "count": 500})
        for _stream, entries in reply or []:
            if entries:
                last_id = entries[-1][0]


def submitted_info(s: Submission, now_ms: int) -> WorkflowInfo:
    """The WorkflowInfo of a workflow just submitted, without reading it back."""
    members = [
        MemberInfo(p.message.id, p.message.type, role, after, "waiting" if after or role == "on_error" else "pending")
        for p, after, role, _ in s.tasks
    ]
    return WorkflowInfo(
        s.workflow_id, s.queue, "running", members, from_ms(now_ms), left=sum(1 for m in members if m.role == "member")
    )


def task_info_of(placement: Placement, after: list[str], now_ms: int) -> TaskInfo:
    info = producer.info_of(placement, now_ms)
    if after:
        info.state = "waiting"
    return info
