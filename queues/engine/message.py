"""The task message as stored in Redis, and the TaskInfo that the client and inspector return.

A task is one hash. Fields that are read by Lua scripts (type, state, retried, lease, unique) are plain hash
fields; the rarely-changing options are one compact JSON document in ``msg`` that only Python reads, with
defaults left out so that a small pending task stays small in memory.

``msg`` carries the message version as ``v``. Messages written before the field existed have none and are
version 1; a reader refuses a version newer than its own (``MessageVersionError``) instead of guessing, and the
worker archives such a task with that reason, from where it can be run again once the worker is upgraded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import nesting
from .clock import from_ms
from .errors import MessageVersionError
from .quoting import shown
from .validation import encodable

DEFAULT_MAX_RETRY = 25
DEFAULT_TIMEOUT = 30 * 60.0
#: The version of the message this code writes, and the newest it reads.
MESSAGE_VERSION = 1
#: Characters of stored headers that are not an object, kept under one name for readers to show.
MAX_SHOWN_HEADER = 1000


#: How the options of a task with every option at its default begin; its creation time (ms) and ``}`` follow.
_DEFAULT_OPTIONS_HEAD = b'{"v":%d,"created":' % MESSAGE_VERSION


def encode_default_options(created_ms: int) -> bytes:
    """The options of a task with every option at its default, the common task: what json.dumps would write of
    them, without its cost."""
    return _DEFAULT_OPTIONS_HEAD + b"%d}" % created_ms


def _default_options_created(options: bytes) -> int | None:
    """The creation time of options exactly as ``encode_default_options`` writes them, else None. A worker decodes
    every task it runs, and json.loads of these few bytes costs more than the rest of the decode."""
    if options.startswith(_DEFAULT_OPTIONS_HEAD) and options.endswith(b"}"):
        created = options[len(_DEFAULT_OPTIONS_HEAD) : -1]
        if created.isdigit() and created[:1] != b"0":  # what JSON reads as that number, no sign, no leading 0
            return int(created)
    return None


@dataclass
class TaskMessage:
    """What a producer asked for: everything needed to run the task, fixed at enqueue time."""

    id: str
    type: str
    payload: bytes
    queue: str
    max_retry: int = DEFAULT_MAX_RETRY
    timeout: float | None = None  # seconds; None means the default unless a deadline is set
    deadline_ms: int = 0  # epoch ms; 0 means none
    retention: float = 0.0  # seconds to keep the task as completed after success
    unique_ttl: float = 0.0  # seconds; 0 means not unique
    headers: dict[str, str] = field(default_factory=dict)
    created_ms: int = 0
    # Set by the engine when a task waiting for others is released (see workflows.py): the results of its
    # dependencies, in the order it named them, and for an on_error callback the failure of its workflow.
    results: list[Any] | None = None
    failure: dict[str, Any] | None = None

    def effective_timeout(self) -> float | None:
        """asynq's rule: without timeout and deadline, the default timeout applies."""
        if self.timeout is None and not self.deadline_ms:
            return DEFAULT_TIMEOUT
        return self.timeout

    def encode_options(self) -> bytes:
        if (
            self.max_retry == DEFAULT_MAX_RETRY
            and self.timeout is None
            and not (self.deadline_ms or self.retention or self.unique_ttl or self.headers)
            and self.results is None
            and self.failure is None
        ):
            return encode_default_options(self.created_ms)
        doc: dict[str, Any] = {"v": MESSAGE_VERSION, "created": self.created_ms}
        if self.max_retry != DEFAULT_MAX_RETRY:
            doc["max_retry"] = self.max_retry
        if self.timeout is not None:
            doc["timeout"] = self.timeout
        if self.deadline_ms:
            doc["deadline"] = self.deadline_ms
        if self.retention:
            doc["retention"] = self.retention
        if self.unique_ttl:
            doc["unique_ttl"] = self.unique_ttl
        if self.headers:
            doc["headers"] = self.headers
        if self.results is not None:
            doc["results"] = self.results
        if self.failure is not None:
            doc["failure"] = self.failure
        return json.dumps(doc, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, task_id: str, queue: str, task_type: bytes, payload: bytes, options: bytes) -> TaskMessage:
        """Rebuild a message from its hash fields. Raises ValueError on a record it cannot read."""
        created = _default_options_created(options)
        if created is not None:
            return cls(task_id, task_type.decode(), payload, queue, created_ms=created)
        doc = nesting.loads(options) if options else {}  # bounded: a record written past any writer's depth
        if not isinstance(doc, dict):
            raise ValueError("task options are not a JSON object")
        version = doc.get("v", 1)
        if not isinstance(version, int) or version > MESSAGE_VERSION:
            raise MessageVersionError(
                f"task message version {shown(version)} is not one this worker reads (up to "
                f"{MESSAGE_VERSION}); upgrade the worker",
                op="message.decode",
            )
        timeout = doc.get("timeout")
        return cls(
            id=task_id,
            type=task_type.decode(),
            payload=payload,
            queue=queue,
            max_retry=int(doc.get("max_retry", DEFAULT_MAX_RETRY)),
            timeout=None if timeout is None else float(timeout),
            deadline_ms=int(doc.get("deadline", 0)),
            retention=float(doc.get("retention", 0)),
            unique_ttl=float(doc.get("unique_ttl", 0)),
            headers=_stored_headers(doc.get("headers")),
            created_ms=int(doc.get("created", 0)),
            results=doc.get("results"),
            failure=doc.get("failure"),
        )


@dataclass
class TaskInfo:
    """A snapshot of one task, as returned by the client and the inspector."""

    id: str
    type: str
    queue: str
    state: str
    payload: bytes = b""
    max_retry: int = DEFAULT_MAX_RETRY
    retried: int = 0
    timeout: float | None = None
    deadline: datetime | None = None
    retention: float = 0.0
    unique_key: str | None = None
    last_error: str | None = None
    last_failed_at: datetime | None = None
    last_traceback: str | None = None  # of the last failure, bounded and redacted (see failures.py)
    error_fingerprint: str | None = None  # the error group of the last failure, when it counted as one
    headers: dict[str, str] = field(default_factory=dict)
    created_at: datetime | None = None
    next_process_at: datetime | None = None
    completed_at: datetime | None = None
    # How long the last attempt that ended (completed, retried or archived) ran, from its handler's start; None when
    # it has not ended one or its start is unknown (a lease that ran out). An active task's own run time is
    # ``state_since`` to now.
    last_run_seconds: float | None = None
    expires_at: datetime | None = None
    lease_expires_at: datetime | None = None  # active tasks only
    orphaned: bool = False  # active, but its lease ran out: the worker is gone and the recoverer will retry it
    result: bytes | None = None
    progress: tuple[int, int] | None = None
    journal: bytes | None = None  # what the handler keeps across attempts (``Task.write_journal``), JSON
    state_since: datetime | None = None
    workflow: str | None = None  # the workflow it belongs to (see workflows.py), and its role there
    workflow_role: str | None = None
    group: str | None = None  # the aggregation group it was enqueued into (see aggregation.py)
    after: list[str] = field(default_factory=list)  # the ids it was submitted to wait for (see workflows.py)
    # A waiting task: those of ``after`` that have not succeeded yet, as the inspector read them (see
    # ``Inspector.list_tasks``); empty otherwise.
    waiting_on: list[str] = field(default_factory=list)

    def json(self) -> Any:
        return json.loads(self.payload)

    def result_json(self) -> Any:
        return None if self.result is None else json.loads(self.result)

    @classmethod
    def from_hash(cls, task_id: str, queue: str, fields: dict[bytes, bytes], score: float | None = None) -> TaskInfo:
        """Build from HGETALL of a task; ``score`` is its score in the state's sorted set, if any."""
        try:
            message = TaskMessage.decode(
                task_id, queue, fields.get(b"type", b""), fields.get(b"payload", b""), fields.get(b"msg", b"")
            )
        except (ValueError, TypeError):
            # A record nobody can decode (the worker archives it as such) must still be listed, shown and deleted.
            message = TaskMessage(
                task_id, fields.get(b"type", b"").decode("utf-8", "replace"), fields.get(b"payload", b""), queue
            )
        state = fields.get(b"state", b"").decode()
        info = cls(
            id=task_id,
            type=message.type,
            queue=queue,
            state=state,
            payload=message.payload,
            max_retry=message.max_retry,
            retried=int(fields.get(b"retried", 0)),
            timeout=message.effective_timeout(),
            deadline=from_ms(message.deadline_ms),
            retention=message.retention,
            unique_key=_text(fields.get(b"unique")),
            last_error=_text(fields.get(b"error")),
            last_failed_at=from_ms(int(fields.get(b"failed_at", 0))),
            last_traceback=_text(fields.get(b"traceback")),
            error_fingerprint=_text(fields.get(b"fp")),
            headers=message.headers,
            created_at=from_ms(message.created_ms),
            completed_at=from_ms(int(fields.get(b"completed_at", 0))),
            last_run_seconds=_seconds(fields.get(b"ran_ms")),
            result=fields.get(b"result"),
            progress=_progress(fields.get(b"progress")),
            journal=fields.get(b"journal"),
            state_since=from_ms(int(fields.get(b"since", 0))),
            workflow=_text(fields.get(b"wf")),
            workflow_role=_text(fields.get(b"role")),
            group=_text(fields.get(b"group")),
            after=_ids(fields.get(b"after")),
        )
        if score is not None and state in ("scheduled", "retry"):
            info.next_process_at = from_ms(int(score))
        elif score is not None and state == "completed":
            info.expires_at = from_ms(int(score))
        elif score is not None and state == "active":
            info.lease_expires_at = from_ms(int(score))
        elif state == "pending":
            info.next_process_at = info.state_since
        return info


def _stored_headers(value: Any) -> dict[str, str]:
    """Headers as stored, as strings every reader can print: producers are held to string pairs of valid
    Unicode, but a task written by an older version or straight into Redis may hold anything JSON does (a lone
    surrogate escaped as ``\\ud800``, numbers, nested values). Those are read, never refused: a task page,
    a listing and a worker must still get the task."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        return {"(headers)": encodable(json.dumps(value, ensure_ascii=False))[:MAX_SHOWN_HEADER]}
    return {
        encodable(str(key)): encodable(val if isinstance(val, str) else json.dumps(val, ensure_ascii=False))
        for key, val in value.items()
    }


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "replace")


def _seconds(ms: bytes | None) -> float | None:
    """A duration the scripts store in ms ("" for unknown) as seconds."""
    return int(ms) / 1000 if ms else None


def _ids(value: bytes | None) -> list[str]:
    """A JSON array of task ids, as the scripts store ``after``; a record nobody can read lists none."""
    try:
        ids = json.loads(value) if value else []
    except ValueError:
        return []
    return [str(i) for i in ids] if isinstance(ids, list) else []


def _progress(value: bytes | None) -> tuple[int, int] | None:
    if not value:
        return None
    done, _, total = value.partition(b"/")
    return int(done), int(total)
