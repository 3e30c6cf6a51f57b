"""The OpenAPI 3.1 document of ``/api/v1/``, served at ``/api/v1/openapi.json``.

Written by hand next to the views; ``tests/api/test_openapi.py`` checks that every route is documented with its
methods, that every documented operation exists, and that responses match these schemas.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from queues.engine import STATES
from queues.engine.remote_consumer import MAX_COUNT, MAX_WAIT
from queues.engine.settings import DEFAULTS
from queues.engine.validation import MAX_QUEUE_NAME, MAX_RETRY_LIMIT, MAX_TASK_ID, MAX_TYPE_NAME

#: A request without ``ttr`` gets the deployment's TASKS_API_TTR_SECONDS.
TTR_DEFAULT_TEXT = f"TASKS_API_TTR_SECONDS ({DEFAULTS.api_ttr_seconds:g} unless the deployment sets it)"
NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}
SECONDS = {"type": "number", "minimum": 0}


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(properties: dict[str, Any], required: list[str] | None = None, *, closed: bool = True) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if closed:
        schema["additionalProperties"] = False
    return schema


PAYLOAD_OUT = {
    "payload": {"description": "The payload: a JSON value when payload_encoding is json, else base64 of the bytes."},
    "payload_encoding": {"type": "string", "enum": ["json", "base64"]},
}

SCHEMAS: dict[str, Any] = {
    "Error": obj(
        {
            "error": {
                "type": "string",
                "description": "A stable code: invalid_argument, unauthenticated, "
                "permission_denied, not_found, lease_lost, already_exists, failed_precondition, too_large, "
                "unavailable…",
            },
            "message": {"type": "string"},
            "field": {"type": "string", "description": "The request field at fault, for 400s."},
        },
        ["error", "message"],
    ),
    "PublishRequest": obj(
        {
            "type": {"type": "string", "minLength": 1, "maxLength": MAX_TYPE_NAME},
            "payload": {"description": "Any JSON value (stored as compact JSON). Omit both payload fields for none."},
            "payload_base64": {"type": "string", "description": "Raw bytes, base64-encoded (instead of payload)."},
            "delay": {**SECONDS, "description": "Seconds before the task becomes available (scheduled until then)."},
            "ttl": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Seconds after the delay within which the task must be consumed; a task handed "
                "out later is dropped instead (its event says 'expired').",
            },
            "tries": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RETRY_LIMIT + 1,
                "description": "Most deliveries (max_retry = tries - 1). Default: 26 (the engine's 25 retries).",
            },
            "unique": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Seconds during which a task of the same type and payload is refused (409).",
            },
            "id": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_TASK_ID,
                "description": "Your own task id; 409 if the queue has one already.",
            },
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        ["type"],
    ),
    "Published": obj(
        {
            "id": {"type": "string"},
            "queue": {"type": "string"},
            "state": {"type": "string", "enum": ["pending", "scheduled"]},
            "next_process_at": NULLABLE_TIME,
            "deadline": NULLABLE_TIME,
        },
        ["id", "queue", "state"],
    ),
    "Task": obj(
        {
            "id": {"type": "string"},
            "queue": {"type": "string"},
            "type": {"type": "string"},
            "state": {"type": "string", "enum": list(STATES)},
            **PAYLOAD_OUT,
            "retried": {"type": "integer"},
            "max_retry": {"type": "integer"},
            "last_error": {"type": ["string", "null"]},
            "last_traceback": {"type": ["string", "null"]},
            "error_fingerprint": {"type": ["string", "null"]},
            "created_at": NULLABLE_TIME,
            "next_process_at": NULLABLE_TIME,
            "deadline": NULLABLE_TIME,
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        ["id", "queue", "type", "state", "payload", "payload_encoding", "retried", "max_retry"],
    ),
    "ConsumeRequest": obj(
        {
            "queues": {
                "type": "array",
                "minItems": 1,
                "maxItems": 16,
                "items": {"type": "string", "minLength": 1, "maxLength": MAX_QUEUE_NAME},
                "description": "Tried in this order: tasks come from the first queue that has any.",
            },
            "ttr": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Time to run (the lease), seconds; default "
                f"{TTR_DEFAULT_TEXT}. Unless acked, failed or extended within it, the task is delivered again.",
            },
            "timeout": {
                "type": "number",
                "minimum": 0,
                "maximum": MAX_WAIT,
                "description": "Seconds to wait for a task when none is ready (long poll); default 0.",
            },
            "count": {"type": "integer", "minimum": 1, "maximum": MAX_COUNT, "description": "Most tasks; default 1."},
        },
        ["queues"],
    ),
    "Delivery": obj(
        {
            "id": {"type": "string"},
            "queue": {"type": "string"},
            "type": {"type": "string"},
            **PAYLOAD_OUT,
            "lease": {"type": "string", "description": "Opaque lease token: ack, fail and extend must send it."},
            "lease_expires_at": {"type": "string", "format": "date-time"},
            "retried": {"type": "integer"},
            "max_retry": {"type": "integer"},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "deadline": NULLABLE_TIME,
        },
        ["id", "queue", "type", "payload", "payload_encoding", "lease", "lease_expires_at", "retried", "max_retry"],
    ),
    "Consumed": obj({"tasks": {"type": "array", "items": ref("Delivery")}}, ["tasks"]),
    "LeaseRequest": obj({"lease": {"type": "string", "minLength": 1}}, ["lease"]),
    "FailRequest": obj(
        {
            "lease": {"type": "string", "minLength": 1},
            "error": {"type": "string", "description": "Recorded as the task's last error."},
            "delay": {**SECONDS, "description": "Seconds before the retry; default: the workers' backoff."},
            "skip_retry": {"type": "boolean", "description": "Send the task to the dead letters now."},
        },
        ["lease"],
    ),
    "Failed": obj(
        {
            "id": {"type": "string"},
            "state": {"type": "string", "enum": ["retry", "archived"]},
            "retry_at": NULLABLE_TIME,
        },
        ["id", "state"],
    ),
    "ExtendRequest": obj(
        {
            "lease": {"type": "string", "minLength": 1},
            "ttr": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": f"Seconds from now; default {TTR_DEFAULT_TEXT}.",
            },
        },
        ["lease"],
    ),
    "Extended": obj(
        {"id": {"type": "string"}, "lease_expires_at": {"type": "string", "format": "date-time"}},
        ["id", "lease_expires_at"],
    ),
    "Size": obj(
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
        {"queue": {"type": "string"}, "size": {"type": "integer"}, "tasks": {"type": "array", "items": ref("Task")}},
        ["queue", "size", "tasks"],
    ),
    "RespawnRequest": obj(
        {
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1_000_000,
                "description": "Most dead letters to respawn, oldest first; default all.",
            }
        }
    ),
    "Respawned": obj({"respawned": {"type": "integer"}}, ["respawned"]),
    "RespawnedOne": obj({"id": {"type": "string"}, "state": {"type": "string", "enum": ["pending"]}}, ["id", "state"]),
    "Deleted": obj({"deleted": {"type": "integer"}}, ["deleted"]),
}

ERRORS = {
    "400": "Bad input: the body names the field. A body that is not JSON, or nests arrays and objects deeper "
    "than a payload may (TASKS_MAX_PAYLOAD_DEPTH) plus the body object, is field 'body'.",
    "401": "Missing, unknown or revoked token.",
    "403": "The token's scope does not cover the queue.",
    "404": "No such queue or task.",
    "409": "Conflict: lease lost (expired or acknowledged), duplicate, or a state that does not allow it.",
    "413": "The body is over 2 MiB (too_large): answered from Content-Length before reading, or as soon as a "
    "body without one runs past the limit.",
    "503": "Redis is unavailable.",
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
    params: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``ok`` is (status, description, schema name or None for an empty body); ``errors`` lists error statuses,
    e.g. "400 401 403 404 503". An operation with a ``body`` can also answer 400 and 413 (too large)."""
    status, description, schema = ok
    responses: dict[str, Any] = {status: {"description": description, **(json_content(ref(schema)) if schema else {})}}
    codes = sorted(set(errors.split()) | ({"400", "413"} if body else set()))
    for code in codes:
        responses[code] = {"description": ERRORS[code], **json_content(ref("Error"))}
    op: dict[str, Any] = {"operationId": op_id, "summary": summary, "responses": responses}
    if body:
        op["requestBody"] = {"required": True, **json_content(ref(body))}
    if params:
        op["parameters"] = params
    return op


def path_param(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string", "minLength": 1},
    }


QUEUE = path_param("queue", "Queue name ('/' written as '~2F', '~' as '~7E').")
TASK_ID = path_param("task_id", "Task id (escaped like queue names).")


def limit_param(default: str, maximum: int) -> dict[str, Any]:
    return {
        "name": "limit",
        "in": "query",
        "required": False,
        "description": f"Default {default}.",
        "schema": {"type": "integer", "minimum": 1, "maximum": maximum},
    }


ALL = "400 401 403 404 503"
MUTATE = "400 401 403 404 409 503"


def lease_action(name: str, summary: str, ok: tuple[str, str, str | None], body: str) -> dict[str, Any]:
    """The path of a consumer's action on a task it holds (ack, fail, extend): a POST to the task's own path plus
    the action's name, the lease's token in the body."""
    params = [QUEUE, TASK_ID]
    return {
        f"/api/v1/queues/{{queue}}/tasks/{{task_id}}/{name}": {
            "post": operation(name, summary, ok, MUTATE, body=body, params=params)
        }
    }


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
            "timeout seconds. An empty list means nothing arrived.",
            ("200", "Tasks (possibly none)", "Consumed"),
            "400 401 403 503",
            body="ConsumeRequest",
        )
    },
    "/api/v1/queues/{queue}/tasks": {
        "post": operation(
            "publish",
            "Publish a task.",
            ("201", "Published; Location names the task", "Published"),
            "400 401 403 409 503",
            body="PublishRequest",
            params=[QUEUE],
        )
    },
    "/api/v1/queues/{queue}/tasks/{task_id}": {
        "get": operation("getTask", "A task in any state.", ("200", "The task", "Task"), ALL, params=[QUEUE, TASK_ID]),
        "delete": operation(
            "deleteTask", "Delete a task that is not active.", ("204", "Deleted", None), MUTATE, params=[QUEUE, TASK_ID]
        ),
    },
    **lease_action(
        "ack",
        "Success: the task is done (deleted, or kept as completed for its retention).",
        ("204", "Acknowledged", None),
        "LeaseRequest",
    ),
    **lease_action(
        "fail",
        "Failure: retry after a delay, or to the dead letters when the tries are spent.",
        ("200", "Where the task went", "Failed"),
        "FailRequest",
    ),
    **lease_action(
        "extend",
        "Extend the lease to ttr seconds from now.",
        ("200", "The new lease expiry", "Extended"),
        "ExtendRequest",
    ),
    "/api/v1/queues/{queue}/peek": {
        "get": operation(
            "peek",
            "The next pending task, without consuming it (null when none).",
            ("200", "The task", "Peeked"),
            ALL,
            params=[QUEUE],
        )
    },
    "/api/v1/queues/{queue}/size": {
        "get": operation(
            "size", "Tasks per state, and the size (all but completed).", ("200", "Counts", "Size"), ALL, params=[QUEUE]
        )
    },
    "/api/v1/queues/{queue}/deadletters": {
        "get": operation(
            "listDeadLetters",
            "Dead letters (archived tasks), newest first, and their count.",
            ("200", "Dead letters", "DeadLetters"),
            ALL,
            params=[QUEUE, limit_param("10", 100)],
        ),
        "delete": operation(
            "deleteDeadLetters",
            "Delete dead letters, oldest first.",
            ("200", "How many", "Deleted"),
            ALL,
            params=[QUEUE, limit_param("all", 1_000_000)],
        ),
    },
    "/api/v1/queues/{queue}/respawn": {
        "post": operation(
            "respawnDeadLetters",
            "Dead letters back to pending, oldest first.",
            ("200", "How many", "Respawned"),
            ALL,
            body="RespawnRequest",
            params=[QUEUE],
        )
    },
    "/api/v1/queues/{queue}/deadletters/{task_id}": {
        "get": operation(
            "getDeadLetter", "One dead letter.", ("200", "The task", "Task"), ALL, params=[QUEUE, TASK_ID]
        ),
        "delete": operation(
            "deleteDeadLetter", "Delete one dead letter.", ("204", "Deleted", None), ALL, params=[QUEUE, TASK_ID]
        ),
    },
    "/api/v1/queues/{queue}/deadletters/{task_id}/respawn": {
        "post": operation(
            "respawnDeadLetter",
            "One dead letter back to pending (a body, if any, must be an empty JSON object).",
            ("200", "Respawned", "RespawnedOne"),
            f"{ALL} 413",
            params=[QUEUE, TASK_ID],
        )
    },
}


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
