"""What the engine's scripts write, in ``dbstate``'s shapes: the instant every test clock starts at, the keys of
the default queue, and the task hashes, per-type counts and events a script leaves."""

from __future__ import annotations

import json
from typing import Any

from taskq.queues.engine import FakeClock, Keys
from taskq.queues.engine.clock import to_ms, utc_day

from .dbstate import Hash, JsonText, Stream, Volatile

NOW = 1_700_000_000.0  # the FakeClock's start
NOW_MS = to_ms(NOW)
DAY = utc_day(NOW)
KEYS = Keys()
Q = KEYS.queue("default")


def msg(**options: Any) -> str:
    """The ``msg`` field the client writes: compact JSON of the options, the version and ``created`` first."""
    return json.dumps({"v": 1, "created": NOW_MS, **options}, separators=(",", ":"))


def task(
    state: str,
    type: str = "email",
    *,
    since: int = NOW_MS,
    payload: str = '{"to":"ada"}',
    options: str | None = None,
    **extra: Any,
) -> Hash:
    """A task hash as the scripts leave it; ``extra`` adds fields (lease, retried, unique, error, ...)."""
    fields = {
        "type": type,
        "msg": options if options is not None else msg(),
        "payload": payload,
        "state": state,
        "since": str(since),
    }
    fields.update({name: str(value) for name, value in extra.items()})
    return Hash(fields)


def counts(**by_state_and_type: int) -> Hash:
    """The per-type counts hash: ``counts(pending__email=1)`` is ``{"pending:email": "1"}``."""
    return Hash({name.replace("__", ":"): str(value) for name, value in by_state_and_type.items()})


def event(
    id: str,
    from_: str,
    to: str,
    type: str = "email",
    *,
    at: int = NOW_MS,
    worker: str = "",
    error: str = "",
    lease: str = "",
    started: int = 0,
) -> dict[str, str]:
    fields = {"id": id, "type": type, "from": from_, "to": to, "at": str(at)}
    if worker:
        fields["worker"] = worker
    if error:
        fields["error"] = error
    if lease:  # a start: the attempt's lease token
        fields["lease"] = lease
    if started:  # an attempt's end: when its handler started
        fields["started"] = str(started)
    return fields


def moved_by(worker: str, *moves: tuple[str, ...]) -> Stream:
    """The events one call appends, all by ``worker``: (task, from, to[, error]) each, of type email."""
    return Stream(
        [
            event(task_id, from_, to, worker=worker, error=error[0] if error else "")
            for task_id, from_, to, *error in moves
        ]
    )


def waiting(after: list[str], left: int, **extra: Any) -> Hash:
    """A task waiting for the tasks ``after``, ``left`` of them not succeeded yet."""
    return task("waiting", after=json.dumps(after), deps_left=left, **extra)


def failed_dependency(dependency: str, why: str, **extra: Any) -> Hash:
    """A task archived, with the reason, because the task it waited for failed ``why`` (the worker's error, or
    "deleted by op" and the like): what the scripts leave of every task waiting for one that fails."""
    error = f"dependency {dependency} failed: {why}"
    return task("archived", after=json.dumps([dependency]), error=error, failed_at=NOW_MS, **extra)


def fake_clock() -> FakeClock:
    return FakeClock(NOW)


def on_error_released(failed: str, error: str, workflow: str = "WF") -> Hash:
    """An on_error callback its workflow's failure released: pending, with the failed member's type, id and error."""
    failure = {"type": "email", "task": failed, "error": error}
    return task("pending", wf=workflow, role="on_error", options=msg(failure=failure).replace(", ", ","))


# -- records of deleted tasks (mark_kept and leave_record in lua/_lib.lua) ---------------------------------------

RECORD_MS = 3_600_000  # Limits().task_record_seconds in ms: how long a deleted task's record is kept


def acted(kind: str, by: str = "operator", at: int = NOW_MS) -> dict[str, Any]:
    """An operator's action on a record's trail: "edit" or "run"."""
    return {"kind": kind, "at": at, "by": by}


def failed_at(at: int, error: str, to: str = "retry", ran_ms: int | None = None) -> dict[str, Any]:
    """A failure on a record's trail, as the task's hash carried it (error, failed_at, ran_ms)."""
    return {"kind": "failed", "at": at, "error": error, "to": to} | ({} if ran_ms is None else {"ran_ms": ran_ms})


def kept(base: Hash, *trail: dict[str, Any], keep: int = RECORD_MS) -> Hash:
    """A task hash an operator acted on: marked to leave a record (keep, ms) with its ``trail``."""
    out = Hash(base)
    out["keep"] = str(keep)
    out["trail"] = JsonText(list(trail))
    return out


def task_record(task_id: str, outcome: str, trail: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """The record key a marked task leaves when it is deleted: {key: its JSON, with a TTL}."""
    doc = {"type": "email", "outcome": outcome, "at": NOW_MS, "retried": 0, "created": NOW_MS, "trail": trail}
    return {Q.task_record(task_id): Volatile(JsonText(doc | fields))}
