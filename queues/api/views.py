"""The endpoints of ``/api/v1/`` (documented in ``openapi.py``; README "HTTP API").

Every view is token-authenticated by ``endpoint`` (or, for the long-polling consume, by ``guarded`` in a worker
thread), takes JSON and answers JSON, and goes through the engine only.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

from taskq.queues import conf, handles, key_format
from taskq.queues.audit import record_action
from taskq.queues.engine import FailedPreconditionError, Inspector, Limits, TaskInfo, TaskNotFoundError, nesting
from taskq.queues.engine import validation as check
from taskq.queues.engine.quoting import shown
from taskq.queues.engine.records import picked
from taskq.queues.engine.remote_consumer import MAX_COUNT, MAX_QUEUES, MAX_TTR, MAX_WAIT, Delivery, RemoteConsumer
from taskq.queues.models import ApiToken
from taskq.queues.segments import escape_segment

from . import inputs
from .http import (
    ApiError,
    authorize,
    authorize_queues,
    endpoint,
    error_response,
    field,
    guarded,
    json_body,
    no_content,
)
from .openapi import document
from .waiting import Waiters

PUBLISH_FIELDS = frozenset({"type", "payload", "payload_base64", "delay", "ttl", "tries", "unique", "id", "headers"})
CONSUME_FIELDS = frozenset({"queues", "ttr", "timeout", "count"})
DEAD_LETTER_QUERY = {"GET": ("limit", "cursor"), "DELETE": ("limit",)}


# -- the engine, as settings configure it ---------------------------------------------------------------------


def consumer() -> RemoteConsumer:
    """The shared remote consumer for the configured Redis (see ``taskq.queues.handles``); refused (501) where the
    Redis holds asynq's keys, which have no leases of the API's kind (see ``taskq.queues.key_format``)."""
    taskq = conf.taskq_settings()
    key_format.refuse_taskq_writes(taskq, "The HTTP API's consume, ack, fail and extend", "api.consume")
    url, prefix, skew = taskq.redis_url, taskq.key_prefix, taskq.api_recovery_skew_seconds
    most = waiters().limit  # checked there: a bad TASKS_API_MAX_WAITERS is named as such, for every request
    return handles.shared(
        ("remote_consumer", url, prefix, skew, most),
        lambda: RemoteConsumer(
            conf.usable_redis_url(taskq),
            prefix=prefix,
            limits=Limits.from_settings(taskq),
            actor="api",
            skew=skew,
            max_waiters=most,
        ),
    )


def inspector(token: ApiToken) -> Inspector:
    return conf.get_inspector(actor=actor(token))


def actor(token: ApiToken) -> str:
    """Recorded as the worker/actor in the events of every transition a token causes."""
    return f"api:{token.name}"


def audited(token: ApiToken, action: str, queue: str, task_id: str) -> None:
    """The audit log entry of an operator's action taken through the API, named as the console's button
    (``delete_task``, ``run_task``): who did what, and on asynq's keys (no event stream) the only record."""
    record_action(None, action, queue=queue, task_ids=[task_id], username=actor(token))


@lru_cache(maxsize=1)
def _waiters(limit: int) -> Waiters:
    return Waiters(limit)


def waiters() -> Waiters:
    """The long polls of this process: at most TASKS_API_MAX_WAITERS at once, on threads of their own."""
    return _waiters(conf.taskq_settings().api_max_waiters)


# -- rendering ---------------------------------------------------------------------------------------------


def iso(value: datetime | float | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        value = datetime.fromtimestamp(value, tz=UTC)
    return value.isoformat().replace("+00:00", "Z")


def payload_doc(payload: bytes) -> dict[str, Any]:
    """JSON when the bytes are exactly the compact JSON the engine stores for a JSON payload (so the round trip
    is exact), base64 otherwise; no payload at all (zero bytes) is null in both fields, not an empty base64."""
    if not payload:
        return {"payload": None, "payload_encoding": None}
    try:
        value = nesting.loads(payload)  # deeper than any reader parses: base64, like other opaque bytes
        if json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode() == payload:
            return {"payload": value, "payload_encoding": "json"}
    except (ValueError, UnicodeDecodeError):
        pass
    return {"payload": base64.b64encode(payload).decode(), "payload_encoding": "base64"}


def url_segment(name: str) -> str:
    """``name`` exactly as it stands in a URL path: escaped (``~2F`` for ``/``...) and percent-encoded, so that a
    client pastes it in as it is. Percent-encoded in full: a client that sees ``%XX`` may take it as encoded
    already, and an id that holds such text must not be read as the character it would stand for."""
    return quote(escape_segment(name), safe="")


def segments(queue: str, task_id: str) -> dict[str, str]:
    """The queue and id as URL path segments, so a client (and the OpenAPI links) builds the task's URLs without
    knowing the escaping."""
    return {"queue_segment": url_segment(queue), "id_segment": url_segment(task_id)}


def task_doc(task: TaskInfo) -> dict[str, Any]:
    # TASKS_REDACT does not apply: a token is a machine's credential, and one that may consume the queue gets
    # every payload of it anyway (README, "Redaction").
    return {
        **picked(task, "id queue type state"),
        **segments(task.queue, task.id),
        **payload_doc(task.payload),
        **picked(task, "retried max_retry last_error last_traceback error_fingerprint"),
        "last_failed_at": iso(task.last_failed_at),
        "created_at": iso(task.created_at),
        "next_process_at": iso(task.next_process_at),
        "deadline": iso(task.deadline),
        "headers": task.headers,
    }


def delivery_doc(d: Delivery) -> dict[str, Any]:
    return {
        **picked(d, "id queue type"),
        **segments(d.queue, d.id),
        **payload_doc(d.payload),
        "lease": d.lease,
        "lease_expires_at": iso(d.lease_expires_at),
        **picked(d, "retried max_retry headers"),
        "deadline": iso(d.deadline),
    }


def task_url(queue: str, task_id: str) -> str:
    return str(reverse("taskq:api:task", kwargs={"queue": escape_segment(queue), "task_id": escape_segment(task_id)}))


# -- input -------------------------------------------------------------------------------------------------


def publish_payload(doc: dict[str, Any]) -> Any:
    """``payload`` (any JSON value, null included) or the bytes of ``payload_base64``; both at once are refused,
    whatever their values, as the document's oneOf says."""
    if "payload" in doc and "payload_base64" in doc:
        raise ApiError(400, "invalid_argument", "give payload or payload_base64, not both", "payload_base64")
    if "payload_base64" in doc:
        return inputs.base64_bytes(doc["payload_base64"], "payload_base64")
    return doc.get("payload", b"")


def publish_options(doc: dict[str, Any], now: float) -> dict[str, Any]:
    """The engine options of a publish: delay -> process_in, ttl -> deadline (publish time + delay + ttl),
    tries -> max_retry (tries - 1), unique -> unique lock TTL, id -> task id."""
    options: dict[str, Any] = {}
    delay = inputs.number(doc, "delay", check.MAX_DURATION, zero=True, default=0.0) or 0.0
    if delay:
        options["process_in"] = delay
    ttl = inputs.number(doc, "ttl", check.MAX_DURATION, zero=False)
    if ttl is not None:
        options["deadline"] = now + delay + ttl
    tries = inputs.integer(doc, "tries", 1, check.MAX_RETRY_LIMIT + 1)
    if tries is not None:
        options["max_retry"] = tries - 1
    unique = inputs.number(doc, "unique", check.MAX_DURATION, zero=False)
    if unique is not None:
        options["unique"] = unique
    if doc.get("id") is not None:
        options["task_id"] = inputs.task_id(doc["id"], new=True)
    if doc.get("headers") is not None:
        options["headers"] = inputs.headers(doc["headers"])
    return options


# -- tasks -------------------------------------------------------------------------------------------------


@endpoint("POST")
def publish(request: HttpRequest, token: ApiToken, queue: str) -> HttpResponse:
    queue = inputs.new_queue(queue)  # the path reads any queue; a new task takes the strict rules
    doc = json_body(request, PUBLISH_FIELDS)
    task_type = inputs.task_type(doc.get("type"))
    payload = publish_payload(doc)
    client = conf.get_client()
    payload = field("payload", check.payload, payload, "api.publish", client.payload_limits)
    info = client.enqueue(task_type, payload, queue=queue, **publish_options(doc, client.clock.now()))
    response = JsonResponse(
        {
            "id": info.id,
            "queue": info.queue,
            **segments(info.queue, info.id),
            "state": info.state,
            "next_process_at": iso(info.next_process_at),
            "deadline": iso(info.deadline),
        },
        status=201,
    )
    response["Location"] = task_url(queue, info.id)
    return response


@endpoint("GET", "DELETE")
def task(request: HttpRequest, token: ApiToken, queue: str, task_id: str) -> HttpResponse:
    if request.method == "DELETE":
        try:
            inspector(token).delete_task(queue, task_id)
            audited(token, "delete_task", queue, task_id)
        except TaskNotFoundError:
            raise no_such_task(queue, task_id) from None
        except FailedPreconditionError:
            # The engine's message points to a cancel, which the API does not have: a leased task is ended by the
            # consumer that holds the lease, or by the lease running out.
            raise ApiError(
                409,
                "failed_precondition",
                f"task {shown(task_id)} is active: the consumer holding its lease must ack or fail it, or "
                "let its lease run out, before it can be deleted",
            ) from None
        return no_content()
    return JsonResponse(task_doc(inspector(token).get_task(queue, task_id)))


@endpoint("GET")
def peek(request: HttpRequest, token: ApiToken, queue: str) -> HttpResponse:
    tasks = inspector(token).list_tasks(queue, "pending", page=1, size=1)
    return JsonResponse({"task": task_doc(tasks[0]) if tasks else None})


@endpoint("GET")
def size(request: HttpRequest, token: ApiToken, queue: str) -> HttpResponse:
    info = inspector(token).queue_info(queue)
    return JsonResponse({"queue": queue, "size": info.size, "paused": info.paused, **info.counts()})


# -- consuming ---------------------------------------------------------------------------------------------


def consume_arguments(request: HttpRequest) -> tuple[list[str], float, int, float]:
    doc = json_body(request, CONSUME_FIELDS)
    queues = doc.get("queues")
    if not isinstance(queues, list) or not queues or len(queues) > MAX_QUEUES:
        raise inputs.InvalidArgument(
            "queues", f"queues must be a list of 1 to {MAX_QUEUES} queue names, got {shown(queues)}"
        )
    names = [inputs.queue(q, "queues") for q in queues]
    ttr = ttr_of(doc)
    count = inputs.integer(doc, "count", 1, MAX_COUNT, default=1) or 1
    timeout = inputs.number(doc, "timeout", MAX_WAIT, zero=True, default=0.0) or 0.0
    return names, ttr, count, timeout


def _consume(
    request: HttpRequest, token: ApiToken, queues: list[str], ttr: float, count: int, timeout: float
) -> HttpResponse:
    got = consumer().consume(queues, ttr, count=count, timeout=timeout, actor=actor(token))
    return JsonResponse({"tasks": [delivery_doc(d) for d in got]})


def _authorize_consume(request: HttpRequest) -> HttpResponse | tuple[ApiToken, tuple[list[str], float, int, float]]:
    try:
        token = authorize(request, ("POST",), [])
        arguments = consume_arguments(request)
        authorize_queues(token, arguments[0])
    except inputs.InvalidArgument as exc:
        return error_response(400, "invalid_argument", exc.message, exc.field)
    except ApiError as exc:
        response = error_response(exc.status, exc.code, exc.message, exc.field)
        if exc.status == 405:
            response["Allow"] = "POST"
        return response
    return token, arguments


@csrf_exempt
async def consume(request: HttpRequest) -> HttpResponse:
    """Async so that a long poll holds no request thread: the token check runs where Django's ORM expects it, a
    consume that may wait on a waiter's thread (or refused with 429 when all are taken, see ``waiting``), one with
    timeout 0 on a request thread like any other request."""
    checked = await sync_to_async(_authorize_consume)(request)
    if isinstance(checked, HttpResponse):
        return checked
    token, (queues, ttr, count, timeout) = checked
    if timeout <= 0:
        return await sync_to_async(guarded)(_consume, request, token, queues, ttr, count, timeout)
    return await waiters().run(lambda: guarded(_consume, request, token, queues, ttr, count, timeout))


consume.api_methods = ("POST",)


LEASE_FIELDS = frozenset({"lease"})


def ttr_of(doc: dict[str, Any]) -> float:
    """The request's ``ttr``, or TASKS_API_TTR_SECONDS when it gives none (or null)."""
    ttr = inputs.number(doc, "ttr", MAX_TTR, zero=False)
    return ttr if ttr is not None else conf.taskq_settings().api_ttr_seconds


def lease_of(doc: dict[str, Any]) -> str:
    lease = doc.get("lease")
    if not isinstance(lease, str) or not 0 < len(lease) <= inputs.MAX_LEASE:
        raise ApiError(400, "invalid_argument", "lease must be the lease token that consume returned", "lease")
    return inputs.text(doc, "lease")


def lease_lost(task_id: str) -> ApiError:
    """A lease on a task that is gone (acknowledged already, deleted, or never there) is a lease lost like any
    other: the consumer's next step is the same, and the README promises 409 for a second ack."""
    return ApiError(
        409,
        "lease_lost",
        f"no lease on task {shown(task_id)} is held by this token: the task was acknowledged, failed or "
        "deleted already, or its lease ran out",
    )


@endpoint("POST")
def ack(request: HttpRequest, token: ApiToken, queue: str, task_id: str) -> HttpResponse:
    doc = json_body(request, LEASE_FIELDS)
    try:
        consumer().ack(queue, task_id, lease_of(doc), actor=actor(token))
    except TaskNotFoundError:
        raise lease_lost(task_id) from None
    return no_content()


@endpoint("POST")
def fail(request: HttpRequest, token: ApiToken, queue: str, task_id: str) -> HttpResponse:
    doc = json_body(request, LEASE_FIELDS | {"error", "delay", "skip_retry"})
    lease = lease_of(doc)
    error = inputs.error_text(doc, "error")
    skip = inputs.boolean(doc, "skip_retry")
    delay = inputs.number(doc, "delay", check.MAX_DURATION, zero=True)
    try:
        outcome = consumer().fail(queue, task_id, lease, error, delay=delay, skip_retry=skip, actor=actor(token))
    except TaskNotFoundError:
        raise lease_lost(task_id) from None
    return JsonResponse({"id": task_id, "queue": queue, "state": outcome.state, "retry_at": iso(outcome.retry_at)})


@endpoint("POST")
def extend(request: HttpRequest, token: ApiToken, queue: str, task_id: str) -> HttpResponse:
    doc = json_body(request, LEASE_FIELDS | {"ttr"})
    lease = lease_of(doc)
    ttr = ttr_of(doc)
    try:
        expires = consumer().extend(queue, task_id, lease, ttr)
    except TaskNotFoundError:
        raise lease_lost(task_id) from None
    return JsonResponse({"id": task_id, "queue": queue, "lease_expires_at": iso(expires)})


# -- dead letters ------------------------------------------------------------------------------------------


def dead_letter_query(request: HttpRequest) -> None:
    """Refuse query parameters the listing does not know, ``offset`` above all: it used to be ignored silently,
    which looked like paging and was not."""
    for name in request.GET:
        if name == "offset":
            raise inputs.InvalidArgument(
                "offset", "offset is not supported: page with cursor, the next_cursor of the page before"
            )
        if name not in DEAD_LETTER_QUERY[str(request.method)]:
            known = ", ".join(DEAD_LETTER_QUERY[str(request.method)])
            raise inputs.InvalidArgument(name, f"unknown query parameter {shown(name)}; known: {known}")


def encode_cursor(mark: tuple[float, str] | None) -> str | None:
    """The mark of a page's last dead letter as a cursor: its archive time (ms) and its id in hex. Clients treat
    it as opaque; every text of its pattern is a position, so none the document calls valid is refused."""
    if mark is None:
        return None
    score, task_id = mark
    return f"{int(score)}-{task_id.encode().hex()}"


def decode_cursor(raw: str | None) -> tuple[float, str] | None:
    if raw is None:
        return None
    if not inputs.CURSOR.fullmatch(raw):
        raise inputs.InvalidArgument("cursor", "cursor must be a next_cursor that a listing of dead letters returned")
    score, _, hex_id = raw.partition("-")
    # Bytes that are not UTF-8 name no task: the listing goes on from the time alone.
    return float(score), bytes.fromhex(hex_id).decode("utf-8", "replace")


@endpoint("GET", "DELETE")
def dead_letters(request: HttpRequest, token: ApiToken, queue: str) -> HttpResponse:
    dead_letter_query(request)
    ins = inspector(token)
    if request.method == "DELETE":
        limit = inputs.query_integer(
            request.GET.get("limit"), "limit", 1, inputs.MAX_DEAD_LETTER_BATCH, inputs.MAX_DEAD_LETTER_BATCH
        )
        ins.queue_info(queue)  # 404 for an unknown queue
        return JsonResponse({"deleted": consumer().delete_dead(queue, limit, actor=actor(token))})
    limit = inputs.query_integer(request.GET.get("limit"), "limit", 1, inputs.MAX_DEAD_LETTER_PAGE, 10)
    after = decode_cursor(request.GET.get("cursor"))
    info = ins.queue_info(queue)
    tasks, mark = ins.list_tasks_after(queue, "archived", limit, after)
    return JsonResponse(
        {
            "queue": queue,
            "size": info.archived,
            "tasks": [task_doc(t) for t in tasks],
            "next_cursor": encode_cursor(mark),
        }
    )


@endpoint("POST")
def respawn_dead_letters(request: HttpRequest, token: ApiToken, queue: str) -> HttpResponse:
    doc = json_body(request, {"limit"})
    limit = inputs.integer(doc, "limit", 1, inputs.MAX_DEAD_LETTER_BATCH, default=inputs.MAX_DEAD_LETTER_BATCH)
    inspector(token).queue_info(queue)  # 404 for an unknown queue
    return JsonResponse(
        {"respawned": consumer().respawn(queue, limit or inputs.MAX_DEAD_LETTER_BATCH, actor=actor(token))}
    )


def no_such_task(queue: str, task_id: str) -> ApiError:
    """404 for a task a script found gone (its own error names the id alone): between the read that found the task
    and the action, something else (a consumer, a respawn) moved or removed it."""
    return ApiError(404, "not_found", f"no task {shown(task_id)} in queue {shown(queue)}")


def _dead_letter(ins: Inspector, queue: str, task_id: str) -> TaskInfo:
    """The task, when it is a dead letter: 404 when there is no such task, 409 when it is in another state."""
    task = ins.get_task(queue, task_id)
    if task.state != "archived":
        raise FailedPreconditionError(f"task {shown(task_id)} is {task.state}, not a dead letter", op="api.dead_letter")
    return task


@endpoint("GET", "DELETE")
def dead_letter(request: HttpRequest, token: ApiToken, queue: str, task_id: str) -> HttpResponse:
    ins = inspector(token)
    task = _dead_letter(ins, queue, task_id)
    if request.method == "DELETE":
        try:
            ins.delete_task(queue, task_id)
            audited(token, "delete_task", queue, task_id)
        except TaskNotFoundError:
            raise no_such_task(queue, task_id) from None
        return no_content()
    return JsonResponse(task_doc(task))


@endpoint("POST")
def respawn_dead_letter(request: HttpRequest, token: ApiToken, queue: str, task_id: str) -> HttpResponse:
    json_body(request, frozenset())
    ins = inspector(token)
    _dead_letter(ins, queue, task_id)
    try:
        ins.run_task(queue, task_id)
        audited(token, "run_task", queue, task_id)
    except TaskNotFoundError:
        raise no_such_task(queue, task_id) from None
    return JsonResponse({"id": task_id, "state": "pending"})


# -- the document and unknown paths -------------------------------------------------------------------------


@csrf_exempt
def openapi(request: HttpRequest) -> HttpResponse:
    """Public, like any API description: it holds no data."""
    if request.method != "GET":
        response = JsonResponse({"error": "method_not_allowed", "message": "use GET here"}, status=405)
        response["Allow"] = "GET"
        return response
    return JsonResponse(document())


openapi.api_methods = ("GET",)


@csrf_exempt
def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    return JsonResponse({"error": "not_found", "message": f"no API endpoint at {request.path}"}, status=404)
