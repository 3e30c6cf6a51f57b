"""The endpoints of ``/api/v1/`` (documented in ``openapi.py``; README "HTTP API").

Every view is token-authenticated by ``endpoint`` (or, for the long-polling consume, by ``guarded`` in a worker
thread), takes JSON and answers JSON, and goes through the engine only.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

from queues import conf, handles
from queues.engine import Inspector, Limits, TaskInfo, TaskNotFoundError, nesting
from queues.engine import validation as check
from queues.engine.records import picked
from queues.engine.remote_consumer import MAX_COUNT, MAX_WAIT, Delivery, RemoteConsumer
from queues.models import ApiToken
from queues.segments import escape_segment

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

PUBLISH_FIELDS = frozenset({"type", "payload", "payload_base64", "delay", "ttl", "tries", "unique", "id", "headers"})
CONSUME_FIELDS = frozenset({"queues", "ttr", "timeout", "count"})
MAX_DEAD_LETTER_BATCH = 1_000_000


# -- the engine, as settings configure it ---------------------------------------------------------------------


def consumer() -> RemoteConsumer:
    """The shared remote consumer for the configured Redis (see ``queues.handles``)."""
    taskq = conf.taskq_settings()
    url, prefix, skew = taskq.redis_url, taskq.key_prefix, taskq.api_recovery_skew_seconds
    return handles.shared(
        ("remote_consumer", url, prefix, skew),
        lambda: RemoteConsumer(url, prefix=prefix, limits=Limits.from_settings(taskq), actor="api", skew=skew),
    )


def inspector(token: ApiToken) -> Inspector:
    return conf.get_inspector(actor=actor(token))


def actor(token: ApiToken) -> str:
    """Recorded as the worker/actor in the events of every transition a token causes."""
    return f"api:{token.name}"


@lru_cache(maxsize=1)
def _waiters(size: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=size, thread_name_prefix="api-consume")


def waiters() -> ThreadPoolExecutor:
    """Long polls block a thread each; they get their own pool so they never hold up Django's sync views (which
    run on one thread under ASGI) or the event loop's default executor."""
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
    is exact), base64 otherwise."""
    try:
        value = nesting.loads(payload)  # deeper than any reader parses: base64, like other opaque bytes
        if json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode() == payload:
            return {"payload": value, "payload_encoding": "json"}
    except (ValueError, UnicodeDecodeError):
        pass
    return {"payload": base64.b64encode(payload).decode(), "payload_encoding": "base64"}


def task_doc(task: TaskInfo) -> dict[str, Any]:
    # TASKS_REDACT does not apply: a token is a machine's credential, and one that may consume the queue gets
    # every payload of it anyway (README, "Redaction").
    return {
        **picked(task, "id queue type state"),
        **payload_doc(task.payload),
        **picked(task, "retried max_retry last_error last_traceback error_fingerprint"),
        "created_at": iso(task.created_at),
        "next_process_at": iso(task.next_process_at),
        "deadline": iso(task.deadline),
        "headers": task.headers,
    }


def delivery_doc(d: Delivery) -> dict[str, Any]:
    return {
        **picked(d, "id queue type"),
        **payload_doc(d.payload),
        "lease": d.lease,
        "lease_expires_at": iso(d.lease_expires_at),
        **picked(d, "retried max_retry headers"),
        "deadline": iso(d.deadline),
    }


def task_url(queue: str, task_id: str) -> str:
    return str(reverse("api:task", kwargs={"queue": escape_segment(queue), "task_id": escape_segment(task_id)}))


# -- input -------------------------------------------------------------------------------------------------


def seconds(doc: dict[str, Any], name: str, *, allow_zero: bool, default: float | None = None) -> float | None:
    if doc.get(name) is None:
        return default
    return float(field(name, check.seconds, doc[name], name, allow_zero=allow_zero))


def ttr_of(doc: dict[str, Any]) -> float:
    """The request's ``ttr``, or TASKS_API_TTR_SECONDS when it gives none."""
    return seconds(doc, "ttr", allow_zero=False) or conf.taskq_settings().api_ttr_seconds


def integer(value: Any, name: str, low: int, high: int) -> int:
    return int(field(name, check.count, value, name, low, high))


def query_int(request: HttpRequest, name: str, low: int, high: int, default: int) -> int:
    raw = request.GET.get(name)
    if raw is None:
        return default
    try:
        value = int(raw, 10)
    except ValueError:
        raise ApiError(400, "invalid_argument", f"{name} must be an integer, got {raw!r:.40}", name) from None
    return integer(value, name, low, high)


def publish_payload(doc: dict[str, Any]) -> Any:
    if "payload" in doc and "payload_base64" in doc:
        raise ApiError(400, "invalid_argument", "give payload or payload_base64, not both", "payload_base64")
    if "payload_base64" in doc:
        raw = doc["payload_base64"]
        if not isinstance(raw, str):
            raise ApiError(400, "invalid_argument", "payload_base64 must be a base64 string", "payload_base64")
        try:
            return base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise ApiError(400, "invalid_argument", "payload_base64 is not valid base64", "payload_base64") from None
    return doc.get("payload", b"")


def publish_options(doc: dict[str, Any], now: float) -> dict[str, Any]:
    """The engine options of a publish: delay -> process_in, ttl -> deadline (publish time + delay + ttl),
    tries -> max_retry (tries - 1), unique -> unique lock TTL, id -> task id."""
    options: dict[str, Any] = {}
    delay = seconds(doc, "delay", allow_zero=True, default=0.0) or 0.0
    if delay:
        options["process_in"] = delay
    ttl = seconds(doc, "ttl", allow_zero=False)
    if ttl is not None:
        options["deadline"] = now + delay + ttl
    if doc.get("tries") is not None:
        options["max_retry"] = integer(doc["tries"], "tries", 1, check.MAX_RETRY_LIMIT + 1) - 1
    unique = seconds(doc, "unique", allow_zero=False)
    if unique is not None:
        options["unique"] = unique
    if doc.get("id") is not None:
        options["task_id"] = field("id", check.task_id, doc["id"])
    if doc.get("headers") is not None:
        options["headers"] = field("headers", check.headers, doc["headers"])
    return options


# -- tasks -------------------------------------------------------------------------------------------------


@endpoint("POST")
def publish(request: HttpRequest, token: ApiToken, queue: str) -> HttpResponse:
    queue = field("queue", check.new_queue_name, queue)  # the path reads any queue; a new task takes the strict rules
    doc = json_body(request, PUBLISH_FIELDS)
    task_type = field("type", check.task_type, doc.get("type"))
    payload = publish_payload(doc)
    client = conf.get_client()
    payload = field("payload", check.payload, payload, "api.publish", client.payload_limits)
    info = client.enqueue(task_type, payload, queue=queue, **publish_options(doc, client.clock.now()))
    response = JsonResponse(
        {
            "id": info.id,
            "queue": info.queue,
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
        inspector(token).delete_task(queue, task_id)
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
    if not isinstance(queues, list) or not queues:
        raise ApiError(400, "invalid_argument", "queues must be a non-empty list of queue names", "queues")
    if len(queues) > 16:
        raise ApiError(400, "invalid_argument", "queues may name at most 16 queues", "queues")
    names = [field("queues", check.queue_name, q) for q in queues]
    ttr = ttr_of(doc)
    count = integer(doc.get("count", 1), "count", 1, MAX_COUNT)
    timeout = doc.get("timeout", 0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout <= MAX_WAIT:
        raise ApiError(
            400, "invalid_argument", f"timeout must be a number of seconds from 0 to {MAX_WAIT:.0f}", "timeout"
        )
    return names, float(ttr), count, float(timeout)


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
    except ApiError as exc:
        response = error_response(exc.status, exc.code, exc.message, exc.field)
        if exc.status == 405:
            response["Allow"] = "POST"
        return response
    return token, arguments


@csrf_exempt
async def consume(request: HttpRequest) -> HttpResponse:
    """Async so that a long poll holds no request thread: the token check runs where Django's ORM expects it, the
    wait itself on the waiters' pool."""
    checked = await sync_to_async(_authorize_consume)(request)
    if isinstance(checked, HttpResponse):
        return checked
    token, (queues, ttr, count, timeout) = checked
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(waiters(), lambda: guarded(_consume, request, token, queues, ttr, count, timeout))


consume.api_methods = ("POST",)


LEASE_FIELDS = frozenset({"lease"})


def lease_of(doc: dict[str, Any]) -> str:
    lease = doc.get("lease")
    if not isinstance(lease, str) or not lease or len(lease) > 256:
        raise ApiError(400, "invalid_argument", "lease must be the lease token that consume returned", "lease")
    return lease


@endpoint("POST")
def ack(request: HttpRequest, token: ApiToken, queue: str, task_id: str) -> HttpResponse:
    doc = json_body(request, LEASE_FIELDS)
    consumer().ack(queue, task_id, lease_of(doc), actor=actor(token))
    return no_content()


@endpoint("POST")
def fail(request: HttpRequest, token: ApiToken, queue: str, task_id: str) -> HttpResponse:
    doc = json_body(request, LEASE_FIELDS | {"error", "delay", "skip_retry"})
    lease = lease_of(doc)
    error = doc.get("error", "")
    if not isinstance(error, str):
        raise ApiError(400, "invalid_argument", "error must be a string", "error")
    skip = doc.get("skip_retry", False)
    if not isinstance(skip, bool):
        raise ApiError(400, "invalid_argument", "skip_retry must be true or false", "skip_retry")
    delay = seconds(doc, "delay", allow_zero=True)
    outcome = consumer().fail(queue, task_id, lease, error, delay=delay, skip_retry=skip, actor=actor(token))
    return JsonResponse({"id": task_id, "state": outcome.state, "retry_at": iso(outcome.retry_at)})


@endpoint("POST")
def extend(request: HttpRequest, token: ApiToken, queue: str, task_id: str) -> HttpResponse:
    doc = json_body(request, LEASE_FIELDS | {"ttr"})
    lease = lease_of(doc)
    ttr = ttr_of(doc)
    expires = consumer().extend(queue, task_id, lease, ttr)
    return JsonResponse({"id": task_id, "lease_expires_at": iso(expires)})


# -- dead letters ------------------------------------------------------------------------------------------


@endpoint("GET", "DELETE")
def dead_letters(request: HttpRequest, token: ApiToken, queue: str) -> HttpResponse:
    ins = inspector(token)
    if request.method == "DELETE":
        limit = query_int(request, "limit", 1, MAX_DEAD_LETTER_BATCH, MAX_DEAD_LETTER_BATCH)
        ins.queue_info(queue)  # 404 for an unknown queue
        return JsonResponse({"deleted": consumer().delete_dead(queue, limit, actor=actor(token))})
    limit = query_int(request, "limit", 1, 100, 10)
    info = ins.queue_info(queue)
    tasks = ins.list_tasks(queue, "archived", page=1, size=limit)
    return JsonResponse({"queue": queue, "size": info.archived, "tasks": [task_doc(t) for t in tasks]})


@endpoint("POST")
def respawn_dead_letters(request: HttpRequest, token: ApiToken, queue: str) -> HttpResponse:
    doc = json_body(request, {"limit"})
    limit = (
        MAX_DEAD_LETTER_BATCH if doc.get("limit") is None else integer(doc["limit"], "limit", 1, MAX_DEAD_LETTER_BATCH)
    )
    inspector(token).queue_info(queue)  # 404 for an unknown queue
    return JsonResponse({"respawned": consumer().respawn(queue, limit, actor=actor(token))})


def _dead_letter(ins: Inspector, queue: str, task_id: str) -> TaskInfo:
    task = ins.get_task(queue, task_id)
    if task.state != "archived":
        raise TaskNotFoundError(f"task {task_id!r} is {task.state}, not a dead letter", op="api.dead_letter")
    return task


@endpoint("GET", "DELETE")
def dead_letter(request: HttpRequest, token: ApiToken, queue: str, task_id: str) -> HttpResponse:
    ins = inspector(token)
    task = _dead_letter(ins, queue, task_id)
    if request.method == "DELETE":
        ins.delete_task(queue, task_id)
        return no_content()
    return JsonResponse(task_doc(task))


@endpoint("POST")
def respawn_dead_letter(request: HttpRequest, token: ApiToken, queue: str, task_id: str) -> HttpResponse:
    json_body(request, frozenset())
    ins = inspector(token)
    _dead_letter(ins, queue, task_id)
    ins.run_task(queue, task_id)
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
