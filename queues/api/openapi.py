"""The OpenAPI 3.1 document of ``/api/v1/``, served at ``/api/v1/openapi.json``.

Written by hand next to the views; ``tests/api/test_openapi.py`` checks that every route is documented with its
methods, that every documented operation exists, and that responses match these schemas.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from queues.engine import STATES
from queues.engine.remote_consumer import MAX_COUNT, MAX_QUEUES, MAX_TTR, MAX_WAIT
from queues.engine.validation import (
    MAX_DURATION,
    MAX_HEADERS,
    MAX_PAYLOAD_BYTES,
    MAX_QUEUE_NAME,
    MAX_RETRY_LIMIT,
    MAX_TASK_ID,
    MAX_TYPE_NAME,
)

from .inputs import BASE64, CONTROL, CURSOR_PATTERN, GLOB, MAX_DEAD_LETTER_BATCH, MAX_DEAD_LETTER_PAGE, MAX_LEASE

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


def name_pattern(limit: int, forbidden: str = "") -> str:
    """A name in a JSON body: 1 to ``limit`` characters, none a control character or one of ``forbidden``."""
    return f"^[^{CONTROL}{forbidden}]{{1,{limit}}}$"


def segment_pattern(limit: int, forbidden: str = "", *, new: bool = False) -> str:
    """A name as one URL path segment (what the server reads after percent-decoding): ``/`` is written ``~2F``,
    ``~`` as ``~7E``, and a name that is only dots with ``~2E`` per dot (``queues.segments``), so a bare ``.`` or
    ``..`` (a path step, which clients remove) is no segment. ``new``: the name may not be ``.`` or ``..`` at all,
    however written (a new queue). Up to ``limit`` characters once unescaped: an escape counts as one."""
    plain = f"[^{CONTROL}/~{forbidden}]"
    unit = f"(?:{plain}|~7E|~2F|~2E)"
    if new:
        dot, other = r"(?:\.|~2E)", f"(?:{plain[:-1]}.]|~7E|~2F)"
    else:
        dot, other = r"\.", f"(?:{plain[:-1]}.]|~7E|~2F|~2E)"
    return f"^(?:{other}|{other}{unit}|{dot}{other}|{unit}{{3,{limit}}})$"


QUEUE_IN_BODY = {"type": "string", "pattern": name_pattern(MAX_QUEUE_NAME, "{}")}
TASK_ID_IN_BODY = {"type": "string", "pattern": name_pattern(MAX_TASK_ID)}
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
                "type": {"type": "string", "pattern": name_pattern(MAX_TYPE_NAME)},
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
                "Time to run (the lease), seconds; default 30. Unless acked, failed or extended within it, the "
                "task is delivered again.",
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
        {"lease": LEASE, "ttr": optional(seconds(MAX_TTR, zero=False), "Seconds from now; default 30.")},
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
    "503": "Redis is unavailable, or its keyspace is at another key layout.",
}


def json_content(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def operation(
    op_id: str,
    summary: str,
    ok: tuple[str, str, str | None],
    errors: str,
    *,
    body: str | None = None,
    body_required: bool = True,
    params: list[dict[str, Any]] | None = None,
    links: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``ok`` is (status, description, schema name or None for an empty body); ``errors`` lists error statuses,
    e.g. "400 401 403 404 503". An operation with a ``body`` can also answer 400 and 413 (too large). ``links``
    are the OpenAPI links of the success response: where a client (or a stateful tester) goes next."""
    status, description, schema = ok
    success: dict[str, Any] = {"description": description, **(json_content(ref(schema)) if schema else {})}
    if links:
        success["links"] = links
    responses: dict[str, Any] = {status: success}
    codes = sorted(set(errors.split()) | ({"400", "413"} if body else set()))
    for code in codes:
        responses[code] = {"description": ERRORS[code], **json_content(ref("Error"))}
    op: dict[str, Any] = {"operationId": op_id, "summary": summary, "responses": responses}
    if body:
        op["requestBody"] = {"required": body_required, **json_content(ref(body))}
    if params:
        op["parameters"] = params
    return op


def path_param(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "description": description, "schema": schema}


ESCAPING = "'/' is written '~2F', '~' as '~7E', and a name of only dots '~2E' per dot (any other character "
ESCAPING += "percent-encoded as usual)."
QUEUE = path_param("queue", f"Queue name; {ESCAPING}", QUEUE_SEGMENT)
NEW_QUEUE = path_param("queue", f"Queue name, not '.' or '..' nor with '*', '?' or '['; {ESCAPING}", NEW_QUEUE_SEGMENT)
TASK_ID = path_param("task_id", f"Task id; {ESCAPING}", TASK_ID_SEGMENT)


def query_param(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description, "schema": schema}


def limit_param(default: str, maximum: int) -> dict[str, Any]:
    return query_param("limit", f"Default {default}.", {"type": "integer", "minimum": 1, "maximum": maximum})


def link(op_id: str, description: str, **parameters: str) -> dict[str, Any]:
    return {"operationId": op_id, "description": description, "parameters": parameters}


def body_link(op_id: str, description: str, body: dict[str, Any], **parameters: str) -> dict[str, Any]:
    """A link that also gives the whole request body. ``x-schemathesis`` tells Schemathesis to send this body as it
    is rather than merge it into one it generated (a generated delay or ttr would send the walk elsewhere)."""
    return {
        **link(op_id, description, **parameters),
        "requestBody": body,
        "x-schemathesis": {"merge_body": False},
    }


def task_links(at: str, ops: dict[str, str]) -> dict[str, Any]:
    """Links to operations on the task whose segments are at JSON pointer ``at`` of the response body."""
    params = {"queue": f"$response.body#{at}/queue_segment", "task_id": f"$response.body#{at}/id_segment"}
    return {name: link(op_id, f"{op_id} of this task", **params) for name, op_id in ops.items()}


def lease_links(lease: str, params: dict[str, str]) -> dict[str, Any]:
    """Links that end or extend an attempt with its lease (a runtime expression): ack, extend, fail and retry at
    once, and fail to the dead letters."""
    bodies: dict[str, tuple[str, dict[str, Any]]] = {
        "ack": ("ack", {}),
        "extend": ("extend", {}),
        "fail": ("fail", {"delay": 0}),
        "failToDeadLetters": ("fail", {"skip_retry": True}),
    }
    return {
        name: body_link(op_id, f"{name} with this lease", {"lease": lease, **extra}, **params)
        for name, (op_id, extra) in bodies.items()
    }


def delivery_links(at: str) -> dict[str, Any]:
    params = {"queue": f"$response.body#{at}/queue_segment", "task_id": f"$response.body#{at}/id_segment"}
    return lease_links(f"$response.body#{at}/lease", params)


def same_lease() -> dict[str, Any]:
    return lease_links("$request.body#/lease", {"queue": "$request.path.queue", "task_id": "$request.path.task_id"})


def same_task(ops: dict[str, str]) -> dict[str, Any]:
    """Links to operations on the task the request named in its path."""
    return {
        name: link(op_id, f"{op_id} of the same task", queue="$request.path.queue", task_id="$request.path.task_id")
        for name, op_id in ops.items()
    }


def consume_from(expression: str) -> dict[str, Any]:
    return {"consume": body_link("consume", "Consume from the task's queue", {"queues": [expression]})}


IN_QUEUE = "400 401 403 404 503"


def delete_one(op_id: str, summary: str, read_op: str) -> dict[str, Any]:
    """DELETE of one task (204, or 409 in a state that does not allow it), linked to the read that then 404s."""
    return operation(
        op_id,
        summary,
        ("204", "Deleted", None),
        f"{IN_QUEUE} 409",
        params=[QUEUE, TASK_ID],
        links=same_task({read_op: read_op}),
    )


DEAD_LETTER_OPS = {"getDeadLetter": "getDeadLetter", "respawnDeadLetter": "respawnDeadLetter"}
DEAD_LETTER_OPS |= {"deleteDeadLetter": "deleteDeadLetter"}
LOCATION = {"Location": {"description": "The task's URL.", "schema": {"type": "string"}, "required": True}}

PATHS: dict[str, Any] = {
    "/api/v1/openapi.json": {
        "get": {
            "operationId": "openapi",
            "summary": "This document (no token needed).",
            "security": [],
            "responses": {"200": {"description": "OpenAPI 3.1 JSON", **json_content({"type": "object"})}},
        }
    },
    "/api/v1/consume": {
        "post": operation(
            "consume",
            "Take the next task(s) of one or more queues, each leased for its TTR; long-polls up to "
            "timeout seconds. An empty list means nothing arrived. Unknown queues are simply empty.",
            ("200", "Tasks (possibly none)", "Consumed"),
            "400 401 403 503",
            body="ConsumeRequest",
            links={
                **delivery_links("/tasks/0"),
                **task_links("/tasks/0", {"getTask": "getTask"}),
            },
        )
    },
    "/api/v1/queues/{queue}/tasks": {
        "post": operation(
            "publish",
            "Publish a task.",
            ("201", "Published; Location names the task", "Published"),
            "400 401 403 409 503",
            body="PublishRequest",
            params=[NEW_QUEUE],
            # To consume it, and from there to everything else. No link to read or delete it straight away: a
            # stateful tester would take a task acknowledged (and so deleted) in between for one never created.
            links=consume_from("$response.body#/queue"),
        )
    },
    "/api/v1/queues/{queue}/tasks/{task_id}": {
        "get": operation(
            "getTask", "A task in any state.", ("200", "The task", "Task"), IN_QUEUE, params=[QUEUE, TASK_ID]
        ),
        "delete": delete_one(
            "deleteTask",
            "Delete a task that is not active (an active one is ended by its consumer: ack or fail).",
            "getTask",
        ),
    },
    "/api/v1/queues/{queue}/tasks/{task_id}/ack": {
        "post": operation(
            "ack",
            "Success: the task is done (deleted, or kept as completed for its retention).",
            ("204", "Acknowledged", None),
            "400 401 403 409 503",
            body="LeaseRequest",
            params=[QUEUE, TASK_ID],
        )
    },
    "/api/v1/queues/{queue}/tasks/{task_id}/fail": {
        "post": operation(
            "fail",
            "Failure: retry after a delay, or to the dead letters when the tries are spent.",
            ("200", "Where the task went", "Failed"),
            "400 401 403 409 503",
            body="FailRequest",
            params=[QUEUE, TASK_ID],
            links={
                **consume_from("$response.body#/queue"),
                **same_task({"getTask": "getTask", "deleteTask": "deleteTask", **DEAD_LETTER_OPS}),
            },
        )
    },
    "/api/v1/queues/{queue}/tasks/{task_id}/extend": {
        "post": operation(
            "extend",
            "Extend the lease to ttr seconds from now.",
            ("200", "The new lease expiry", "Extended"),
            "400 401 403 409 503",
            body="ExtendRequest",
            params=[QUEUE, TASK_ID],
            links=same_lease(),
        )
    },
    "/api/v1/queues/{queue}/peek": {
        "get": operation(
            "peek",
            "The next pending task, without consuming it (null when none).",
            ("200", "The task", "Peeked"),
            IN_QUEUE,
            params=[QUEUE],
        )
    },
    "/api/v1/queues/{queue}/size": {
        "get": operation(
            "size",
            "Tasks per state, and the size (all but completed).",
            ("200", "Counts", "Queue"),
            IN_QUEUE,
            params=[QUEUE],
        )
    },
    "/api/v1/queues/{queue}/deadletters": {
        "get": operation(
            "listDeadLetters",
            "Dead letters (archived tasks), newest first, a page at a time, and their count. Any other query "
            "parameter (offset included) is refused.",
            ("200", "Dead letters", "DeadLetters"),
            IN_QUEUE,
            params=[
                QUEUE,
                limit_param("10", MAX_DEAD_LETTER_PAGE),
                query_param(
                    "cursor",
                    "next_cursor of the page before (opaque: send it back as it came); omit for the first page.",
                    {"type": "string", "pattern": CURSOR_PATTERN},
                ),
            ],
            links=task_links("/tasks/0", DEAD_LETTER_OPS),
        ),
        "delete": operation(
            "deleteDeadLetters",
            "Delete dead letters, oldest first.",
            ("200", "How many", "Deleted"),
            IN_QUEUE,
            params=[QUEUE, limit_param("all", MAX_DEAD_LETTER_BATCH)],
        ),
    },
    "/api/v1/queues/{queue}/respawn": {
        "post": operation(
            "respawnDeadLetters",
            "Dead letters back to pending, oldest first.",
            ("200", "How many", "Respawned"),
            IN_QUEUE,
            body="RespawnRequest",
            params=[QUEUE],
        )
    },
    "/api/v1/queues/{queue}/deadletters/{task_id}": {
        "get": operation(
            "getDeadLetter",
            "One dead letter (409 when the task is in another state).",
            ("200", "The task", "Task"),
            f"{IN_QUEUE} 409",
            params=[QUEUE, TASK_ID],
            links=same_task({"respawnDeadLetter": "respawnDeadLetter", "deleteDeadLetter": "deleteDeadLetter"}),
        ),
        "delete": delete_one(
            "deleteDeadLetter", "Delete one dead letter (409 when the task is in another state).", "getDeadLetter"
        ),
    },
    "/api/v1/queues/{queue}/deadletters/{task_id}/respawn": {
        "post": operation(
            "respawnDeadLetter",
            "One dead letter back to pending (409 when the task is in another state).",
            ("200", "Respawned", "RespawnedOne"),
            f"{IN_QUEUE} 409",
            body="Empty",
            body_required=False,
            params=[QUEUE, TASK_ID],
            links=same_task({"getTask": "getTask", "deleteTask": "deleteTask"}),
        )
    },
}
PATHS["/api/v1/queues/{queue}/tasks"]["post"]["responses"]["201"]["headers"] = LOCATION


@cache
def document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "taskq HTTP API",
            "version": "1",
            "description": "lmstfy-style publish / consume / ack for services in any language. Send "
            "'Authorization: Bearer <token>' (python manage.py tasks token create).",
        },
        "components": {"schemas": SCHEMAS, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": PATHS,
    }
