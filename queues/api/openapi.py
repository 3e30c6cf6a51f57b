"""The OpenAPI 3.1 document of ``/api/v1/``, served at ``/api/v1/openapi.json``.

Written by hand next to the views: the schemas in ``openapi_schemas.py``, the operations and their links here.
``tests/api/test_openapi.py`` checks that every route is documented with its methods, that every documented
operation exists, and that responses match these schemas; Schemathesis (``tests/api/test_schemathesis.py``) checks
the server against the whole document.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from .inputs import CURSOR_PATTERN, MAX_DEAD_LETTER_BATCH, MAX_DEAD_LETTER_PAGE
from .openapi_schemas import ERRORS, NEW_QUEUE_SEGMENT, QUEUE_SEGMENT, SCHEMAS, TASK_ID_SEGMENT, ref


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


def header_param(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "header", "required": False, "description": description, "schema": {"type": "string"}}


#: W3C Trace Context of the caller, on the operations that enqueue or run one task (docs/tracing.md).
TRACE_CONTEXT = [
    header_param(
        "traceparent",
        "W3C Trace Context of the caller: the task is enqueued (or run, for a respawn) in its trace, as a child of "
        "it. A malformed value is ignored. A task whose body headers set a traceparent keeps that one.",
    ),
    header_param("tracestate", "W3C Trace Context vendor state, carried with traceparent."),
]


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


def lease_operation(
    op_id: str, summary: str, success: tuple[str, str, str | None], body: str, links: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A POST on a consumed task that presents its lease (ack, fail, extend): 409 when the lease is not held."""
    errors = "400 401 403 409 503"
    return {"post": operation(op_id, summary, success, errors, body=body, params=[QUEUE, TASK_ID], links=links)}


def queue_read(op_id: str, summary: str, success: tuple[str, str, str]) -> dict[str, Any]:
    """A GET of one queue's state (peek, size): no body, the queue in the path."""
    return {"get": operation(op_id, summary, success, IN_QUEUE, params=[QUEUE])}


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
            "400 401 403 429 503",
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
            params=[NEW_QUEUE, *TRACE_CONTEXT],
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
    "/api/v1/queues/{queue}/tasks/{task_id}/ack": lease_operation(
        "ack",
        "Success: the task is done (deleted, or kept as completed for its retention).",
        ("204", "Acknowledged", None),
        "LeaseRequest",
    ),
    "/api/v1/queues/{queue}/tasks/{task_id}/fail": lease_operation(
        "fail",
        "Failure: retry after a delay, or to the dead letters when the tries are spent.",
        ("200", "Where the task went", "Failed"),
        "FailRequest",
        links={
            **consume_from("$response.body#/queue"),
            **same_task({"getTask": "getTask", "deleteTask": "deleteTask", **DEAD_LETTER_OPS}),
        },
    ),
    "/api/v1/queues/{queue}/tasks/{task_id}/extend": lease_operation(
        "extend",
        "Extend the lease to ttr seconds from now.",
        ("200", "The new lease expiry", "Extended"),
        "ExtendRequest",
        links=same_lease(),
    ),
    "/api/v1/queues/{queue}/peek": queue_read(
        "peek", "The next pending task, without consuming it (null when none).", ("200", "The task", "Peeked")
    ),
    "/api/v1/queues/{queue}/size": queue_read(
        "size", "Tasks per state, and the size (all but completed).", ("200", "Counts", "Queue")
    ),
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
            params=[QUEUE, TASK_ID, *TRACE_CONTEXT],
            links=same_task({"getTask": "getTask", "deleteTask": "deleteTask"}),
        )
    },
}
PATHS["/api/v1/queues/{queue}/tasks"]["post"]["responses"]["201"]["headers"] = LOCATION
PATHS["/api/v1/consume"]["post"]["responses"]["429"]["headers"] = {
    "Retry-After": {"description": "Seconds to wait before consuming again", "schema": {"type": "integer"}}
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
