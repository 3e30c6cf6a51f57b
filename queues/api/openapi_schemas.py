"""The schemas of the OpenAPI document of ``/api/v1/`` (``openapi.py`` puts them together with the operations):
every request and response body, the error body and its codes, and the patterns and bounds of names, ids and
fields, built from the same constants the server's checks use (``inputs.py``, ``taskq.queues.engine.validation``).
"""

from __future__ import annotations

from typing import Any

from taskq.queues.engine import STATES
from taskq.queues.engine.remote_consumer import MAX_COUNT, MAX_QUEUES, MAX_TTR, MAX_WAIT
from taskq.queues.engine.settings import DEFAULTS
from taskq.queues.engine.validation import (
    MAX_DURATION,
    MAX_HEADERS,
    MAX_PAYLOAD_BYTES,
    MAX_QUEUE_NAME,
    MAX_RETRY_LIMIT,
    MAX_TASK_ID,
    MAX_TYPE_NAME,
    invisible_class,
)

from .inputs import BASE64, CONTROL, GLOB, MAX_DEAD_LETTER_BATCH, MAX_LEASE

#: A request without ``ttr`` gets the deployment's TASKS_API_TTR_SECONDS.
TTR_DEFAULT_TEXT = f"TASKS_API_TTR_SECONDS ({DEFAULTS.api_ttr_seconds:g} unless the deployment sets it)"
NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}
LEASE = {"type": "string", "minLength": 1, "maxLength": MAX_LEASE}


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(properties: dict[str, Any], required: list[str] | None = None, *, closed: bool = True) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if closed:
        schema["additionalProperties"] = False
    return schema


def optional(schema: dict[str, Any], description: str) -> dict[str, Any]:
    """An optional field: absent or null takes the default (JSON encoders write null for unset members)."""
    kind = schema["type"]
    return {**schema, "type": [kind, "null"], "description": f"{description} Null is the same as absent."}


def seconds(high: float, *, zero: bool) -> dict[str, Any]:
    bound = {"minimum": 0} if zero else {"exclusiveMinimum": 0}
    return {"type": "number", **bound, "maximum": high}


def name_pattern(limit: int, forbidden: str = "", *, visible: bool = False) -> str:
    """A name in a JSON body: 1 to ``limit`` characters, none a control character or one of ``forbidden``; a
    ``visible`` one (a new task's) also without invisible characters and without a leading or trailing blank
    (``validation.name_problem``)."""
    if not visible:
        return f"^[^{CONTROL}{forbidden}]{{1,{limit}}}$"
    return rf"^(?!\s)[^{invisible_class()}{forbidden}]{{1,{limit}}}(?<!\s)$"


def segment_pattern(limit: int, forbidden: str = "", *, new: bool = False) -> str:
    """A name as one URL path segment (what the server reads after percent-decoding): ``/`` is written ``~2F``,
    ``~`` as ``~7E``, and a name that is only dots with ``~2E`` per dot (``taskq.queues.segments``), so a bare ``.`` or
    ``..`` (a path step, which clients remove) is no segment. ``new``: the name may not be ``.`` or ``..`` at all,
    however written (a new queue), and the name must be visible (``name_pattern``). Up to ``limit`` characters
    once unescaped: an escape counts as one."""
    plain = f"[^{invisible_class() if new else CONTROL}/~{forbidden}]"
    unit = f"(?:{plain}|~7E|~2F|~2E)"
    if new:
        dot, other = r"(?:\.|~2E)", f"(?:{plain[:-1]}.]|~7E|~2F)"
    else:
        dot, other = r"\.", f"(?:{plain[:-1]}.]|~7E|~2F|~2E)"
    body = f"(?:{other}|{other}{unit}|{dot}{other}|{unit}{{3,{limit}}})"
    return rf"^(?!\s){body}(?<!\s)$" if new else f"^{body}$"


QUEUE_IN_BODY = {"type": "string", "pattern": name_pattern(MAX_QUEUE_NAME, "{}")}
TASK_ID_IN_BODY = {"type": "string", "pattern": name_pattern(MAX_TASK_ID, visible=True)}  # a new task's
QUEUE_SEGMENT = {"type": "string", "pattern": segment_pattern(MAX_QUEUE_NAME, "{}")}
NEW_QUEUE_SEGMENT = {
    "type": "string",
    "pattern": segment_pattern(MAX_QUEUE_NAME, "{}" + GLOB.replace("[", "\\["), new=True),
}
TASK_ID_SEGMENT = {"type": "string", "pattern": segment_pattern(MAX_TASK_ID)}
SEGMENTS_OUT = {
    "queue_segment": {
        "type": "string",
        "description": "The queue as it stands in a URL path: '/' as '~2F'... and percent-encoded, ready to use.",
    },
    "id_segment": {"type": "string", "description": "The id as it stands in a URL path, like queue_segment."},
}
PAYLOAD_OUT = {
    "payload": {
        "description": "A JSON value when payload_encoding is json, base64 of the bytes when base64, null when the "
        "task has no payload (zero bytes)."
    },
    "payload_encoding": {"type": ["string", "null"], "enum": ["json", "base64", None]},
}
#: A base64 text this long decodes to at most the default payload limit (1 MiB).
MAX_BASE64 = 4 * -(-MAX_PAYLOAD_BYTES // 3)
ERROR_CODES = [
    "invalid_argument",
    "unauthenticated",
    "permission_denied",
    "not_found",
    "method_not_allowed",
    "lease_lost",
    "already_exists",
    "failed_precondition",
    "too_large",
    "too_many_waiters",
    "unavailable",
    "layout_mismatch",
    "bad_request",
]

SCHEMAS: dict[str, Any] = {
    "Error": obj(
        {
            "error": {"type": "string", "enum": ERROR_CODES, "description": "A stable code."},
            "message": {"type": "string", "description": "For people: what was wrong, values written as JSON."},
            "field": {"type": "string", "description": "The request field, path segment or query parameter at fault."},
        },
        ["error", "message"],
    ),
    "PublishRequest": {
        **obj(
            {
                "type": {"type": "string", "pattern": name_pattern(MAX_TYPE_NAME, visible=True)},
                "payload": {
                    "description": "Any JSON value, null included (stored as compact JSON, at most 1 MiB). Give "
                    "payload or payload_base64, or neither for no payload: both at once are refused (400)."
                },
                "payload_base64": {
                    "type": "string",
                    "pattern": BASE64,
                    "maxLength": MAX_BASE64,
                    "contentEncoding": "base64",
                    "description": "Raw bytes, standard base64 with padding (at most 1 MiB decoded).",
                },
                "delay": optional(
                    seconds(MAX_DURATION, zero=True),
                    "Seconds before the task becomes available (scheduled until then); default 0.",
                ),
                "ttl": optional(
                    seconds(MAX_DURATION, zero=False),
                    "Seconds after the delay within which the task must be consumed; a task handed out later is "
                    "dropped instead (its event says expired). Default: none.",
                ),
                "tries": optional(
                    {"type": "integer", "minimum": 1, "maximum": MAX_RETRY_LIMIT + 1},
                    "Most deliveries (max_retry = tries - 1). Default: 26 (the engine's 25 retries).",
                ),
                "unique": optional(
                    seconds(MAX_DURATION, zero=False),
                    "Seconds during which a task of the same type and payload is refused (409).",
                ),
                "id": optional({**TASK_ID_IN_BODY}, "Your own task id; 409 if the queue has one already."),
                "headers": optional(
                    {
                        "type": "object",
                        "maxProperties": MAX_HEADERS,
                        "propertyNames": {"minLength": 1},
                        "additionalProperties": {"type": "string"},
                    },
                    "String headers handed to the consumer.",
                ),
            },
            ["type"],
        ),
        # Exactly one of: payload, payload_base64, neither.
        "oneOf": [
            {"required": ["payload"]},
            {"required": ["payload_base64"]},
            {"properties": {"payload": False, "payload_base64": False}},
        ],
    },
    "Published": obj(
        {
            "id": {"type": "string"},
            "queue": {"type": "string"},
            **SEGMENTS_OUT,
            "state": {"type": "string", "enum": ["pending", "scheduled"]},
            "next_process_at": NULLABLE_TIME,
            "deadline": NULLABLE_TIME,
        },
        ["id", "queue", "queue_segment", "id_segment", "state"],
    ),
    "Task": obj(
        {
            "id": {"type": "string"},
            "queue": {"type": "string"},
            **SEGMENTS_OUT,
            "type": {"type": "string"},
            "state": {"type": "string", "enum": list(STATES)},
            **PAYLOAD_OUT,
            "retried": {"type": "integer"},
            "max_retry": {"type": "integer"},
            "last_error": {"type": ["string", "null"]},
            "last_traceback": {"type": ["string", "null"]},
            "error_fingerprint": {"type": ["string", "null"]},
            "last_failed_at": {**NULLABLE_TIME, "description": "When the last attempt failed; a dead letter's death."},
            "created_at": NULLABLE_TIME,
            "next_process_at": NULLABLE_TIME,
            "deadline": NULLABLE_TIME,
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        ["id", "queue", "queue_segment", "id_segment", "type", "state", "payload", "payload_encoding", "retried"]
        + ["max_retry", "last_failed_at"],
    ),
    "ConsumeRequest": obj(
        {
            "queues": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_QUEUES,
                "items": QUEUE_IN_BODY,
                "description": "Tried in this order: tasks come from the first queue that has any.",
            },
            "ttr": optional(
                seconds(MAX_TTR, zero=False),
                f"Time to run (the lease), seconds; default {TTR_DEFAULT_TEXT}. Unless acked, failed or extended "
                "within it, the task is delivered again.",
            ),
            "timeout": optional(
                seconds(MAX_WAIT, zero=True), "Seconds to wait for a task when none is ready (long poll); default 0."
            ),
            "count": optional({"type": "integer", "minimum": 1, "maximum": MAX_COUNT}, "Most tasks; default 1."),
        },
        ["queues"],
    ),
    "Delivery": obj(
        {
            "id": {"type": "string"},
            "queue": {"type": "string"},
            **SEGMENTS_OUT,
            "type": {"type": "string"},
            **PAYLOAD_OUT,
            "lease": {"type": "string", "description": "Opaque lease token: ack, fail and extend must send it."},
            "lease_expires_at": {"type": "string", "format": "date-time"},
            "retried": {"type": "integer"},
            "max_retry": {"type": "integer"},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "deadline": NULLABLE_TIME,
        },
        ["id", "queue", "queue_segment", "id_segment", "type", "payload", "payload_encoding", "lease"]
        + ["lease_expires_at", "retried", "max_retry"],
    ),
    "Consumed": obj({"tasks": {"type": "array", "items": ref("Delivery")}}, ["tasks"]),
    "LeaseRequest": obj({"lease": LEASE}, ["lease"]),
    "FailRequest": obj(
        {
            "lease": LEASE,
            "error": optional({"type": "string"}, "Recorded as the task's last error."),
            "delay": optional(
                seconds(MAX_DURATION, zero=True), "Seconds before the retry; default: the workers' backoff."
            ),
            "skip_retry": optional({"type": "boolean"}, "true: to the dead letters now; default false."),
        },
        ["lease"],
    ),
    "Failed": obj(
        {
            "id": {"type": "string"},
            "queue": {"type": "string"},
            "state": {"type": "string", "enum": ["retry", "archived"]},
            "retry_at": NULLABLE_TIME,
        },
        ["id", "queue", "state", "retry_at"],
    ),
    "ExtendRequest": obj(
        {
            "lease": LEASE,
            "ttr": optional(seconds(MAX_TTR, zero=False), f"Seconds from now; default {TTR_DEFAULT_TEXT}."),
        },
        ["lease"],
    ),
    "Extended": obj(
        {
            "id": {"type": "string"},
            "queue": {"type": "string"},
            "lease_expires_at": {"type": "string", "format": "date-time"},
        },
        ["id", "queue", "lease_expires_at"],
    ),
    # A queue's counts. Named Queue, not Size: a stateful tester (Schemathesis) reads a schema named after the
    # {queue} of the paths as what produces queues, and only then starts its walks at publish.
    "Queue": obj(
        {
            "queue": {"type": "string"},
            "size": {"type": "integer"},
            "paused": {"type": "boolean"},
            **{state: {"type": "integer"} for state in STATES},
        },
        ["queue", "size", "paused", *STATES],
    ),
    "Peeked": obj({"task": {"oneOf": [ref("Task"), {"type": "null"}]}}, ["task"]),
    "DeadLetters": obj(
        {
            "queue": {"type": "string"},
            "size": {"type": "integer", "description": "How many dead letters the queue has in all."},
            "tasks": {"type": "array", "items": ref("Task")},
            "next_cursor": {
                "type": ["string", "null"],
                "description": "Send it as cursor for the next page; null on the last page.",
            },
        },
        ["queue", "size", "tasks", "next_cursor"],
    ),
    "RespawnRequest": obj(
        {
            "limit": optional(
                {"type": "integer", "minimum": 1, "maximum": MAX_DEAD_LETTER_BATCH},
                "Most dead letters to respawn, oldest first; default all.",
            )
        }
    ),
    "Empty": {**obj({}), "description": "An empty object (or no body at all)."},
    "Respawned": obj({"respawned": {"type": "integer"}}, ["respawned"]),
    "RespawnedOne": obj({"id": {"type": "string"}, "state": {"type": "string", "enum": ["pending"]}}, ["id", "state"]),
    "Deleted": obj({"deleted": {"type": "integer"}}, ["deleted"]),
}

ERRORS = {
    "400": "Bad input: the body names the field (or path segment, or query parameter). A body that is not JSON, or "
    "nests arrays and objects deeper than a payload may (TASKS_MAX_PAYLOAD_DEPTH) plus the body object, is field "
    "'body'.",
    "401": "Missing, unknown or revoked token.",
    "403": "The token's scope does not cover the queue.",
    "404": "No such queue or task.",
    "409": "Conflict: lease lost (expired, acknowledged, or no such task), duplicate, or a task in a state that does "
    "not allow it (failed_precondition).",
    "413": "The body is over 2 MiB (too_large): answered from Content-Length before reading, or as soon as a "
    "body without one runs past the limit.",
    "429": "A consume with a timeout while TASKS_API_MAX_WAITERS consumes wait already in this server process "
    "(too_many_waiters): consume again after Retry-After seconds, or with timeout 0.",
    "503": "Redis is unavailable, or its keyspace is at another key layout.",
}
