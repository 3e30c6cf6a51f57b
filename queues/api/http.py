"""The API's plumbing: JSON responses and error bodies, the bearer-token check, the scope check, and the mapping
of engine errors to statuses. Every view is wrapped by ``endpoint`` (sync) or uses ``guarded`` itself (consume),
so no engine error, bad body or missing token ever becomes an HTML page or a 500."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, cast
from urllib.parse import unquote_to_bytes

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.utils.encoding import repercent_broken_unicode
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from taskq.queues import conf
from taskq.queues.engine import (
    DuplicateTaskError,
    EngineError,
    FailedPreconditionError,
    LayoutVersionError,
    LeaseLostError,
    QueueNotFoundError,
    RedisUnavailableError,
    TaskIdConflictError,
    TaskNotFoundError,
    nesting,
)
from taskq.queues.engine import ValidationError as EngineValidationError
from taskq.queues.engine.errors import FormatUnsupportedError
from taskq.queues.engine.quoting import shown
from taskq.queues.models import ApiToken
from taskq.queues.request_trace import request_context

from . import inputs
from .tokens import authenticate

MAX_BODY = 2 * 1024 * 1024  # bytes: a payload may be 1 MiB, base64 makes it 4/3 of that
#: How much deeper than a payload (``TASKS_MAX_PAYLOAD_DEPTH``) a request body may nest: the body object that
#: holds it. A deeper payload is refused by the engine anyway; the body is measured first, without recursion,
#: because ``json.loads`` itself recurses and raises RecursionError about a thousand levels down.
ENVELOPE_DEPTH = 1


class ApiError(Exception):
    """An error response: ``status``, a stable ``code``, a message, and the request field at fault if any."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field


def error_response(status: int, code: str, message: str, field: str | None = None) -> JsonResponse:
    body: dict[str, Any] = {"error": code, "message": message}
    if field:
        body["field"] = field
    response = JsonResponse(body, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="taskq"'
    return response


#: Engine errors and the status each one means over HTTP (first match wins: order subclasses first).
ENGINE_STATUSES: list[tuple[type[EngineError], int]] = [
    (EngineValidationError, 400),
    (TaskNotFoundError, 404),
    (QueueNotFoundError, 404),
    (LeaseLostError, 409),
    (FailedPreconditionError, 409),
    (DuplicateTaskError, 409),
    (TaskIdConflictError, 409),
    (RedisUnavailableError, 503),
    # A keyspace at another key layout: a deployment to finish (upgrade or migrate-keys), not the caller's fault.
    (LayoutVersionError, 503),
    # What the Redis's key format cannot hold (asynq's keys: no workflows, no API leases): no retry will change it.
    (FormatUnsupportedError, 501),
]


def api_error_response(exc: ApiError) -> JsonResponse:
    return error_response(exc.status, exc.code, exc.message, exc.field)


def engine_error_response(exc: EngineError) -> JsonResponse:
    for kind, status in ENGINE_STATUSES:
        if isinstance(exc, kind):
            return error_response(status, exc.code, exc.message)
    return error_response(500, exc.code, exc.message)


def too_large(size: int | None = None) -> ApiError:
    """413, with the size when Content-Length declared it (a chunked body is refused once past the limit)."""
    size_text = f"more than {MAX_BODY}" if size is None else str(size)
    return ApiError(413, "too_large", f"the body is {size_text} bytes; the limit is {MAX_BODY}")


def guarded(fn: Callable[..., HttpResponse], *args: Any, **kwargs: Any) -> HttpResponse:
    """Run a view body, turning API and engine errors, and Django's refusals of oversized request data (which it
    would answer with an HTML page), into their JSON responses."""
    try:
        return fn(*args, **kwargs)
    except ApiError as exc:
        return api_error_response(exc)
    except inputs.InvalidArgument as exc:
        return error_response(400, "invalid_argument", exc.message, exc.field)
    except EngineError as exc:
        return engine_error_response(exc)
    except RequestDataTooBig:
        return api_error_response(too_large())
    except TooManyFieldsSent as exc:
        return error_response(400, "invalid_argument", str(exc))


def authorize(request: HttpRequest, methods: tuple[str, ...], queues: list[str]) -> ApiToken:
    """The request's token, after the method, token and scope checks. Only the Authorization header counts:
    cookies and query strings are never read."""
    if request.method not in methods:
        raise ApiError(405, "method_not_allowed", f"use {' or '.join(methods)} here")
    token = authenticate(request.headers.get("Authorization"))
    if token is None:
        raise ApiError(401, "unauthenticated", "send a valid API token: 'Authorization: Bearer tq_...'")
    authorize_queues(token, queues)
    return token


def authorize_queues(token: ApiToken, queues: list[str]) -> None:
    for queue in queues:
        if not token.allows(queue):
            raise ApiError(403, "permission_denied", f"this token may not use queue {shown(queue)}", "queue")


#: The URL arguments that hold names, and the field each is reported as.
PATH_FIELDS = {"queue": "queue", "task_id": "id"}


def path_bytes(request: HttpRequest) -> bytes | None:
    """The request's path as the client sent it, percent-decoded, before the server made text of it: an ASGI
    server's ``raw_path``, or the request line's URI that WSGI servers such as gunicorn (``RAW_URI``) and uWSGI
    (``REQUEST_URI``) pass on. None when the server gives neither (Django's ``PATH_INFO`` has the undecodable
    bytes percent-encoded again, as text that cannot be told from a name that holds ``%FF``)."""
    scope = getattr(request, "scope", None)
    raw = scope.get("raw_path") if scope is not None else None
    if raw is None:
        uri = request.META.get("RAW_URI") or request.META.get("REQUEST_URI")
        raw = uri.partition("?")[0].encode("latin-1", "replace") if isinstance(uri, str) else None
    return unquote_to_bytes(raw) if isinstance(raw, bytes) else None


def undecodable_path(request: HttpRequest, kwargs: dict[str, Any]) -> None:
    """Refuse a path with a segment that is not UTF-8 once percent-decoded (``h3%FFbad``), naming the argument
    it stands for. The server would otherwise hand the view a name it made up (U+FFFD for each bad byte under
    ASGI, the bytes percent-encoded again under WSGI), and different bad inputs would name the same queue."""
    raw = path_bytes(request)
    if raw is None:
        return
    for segment in raw.split(b"/"):
        try:
            segment.decode()
        except UnicodeDecodeError as exc:
            renditions = {segment.decode("utf-8", "replace"), repercent_broken_unicode(segment).decode()}
            field = next((f for arg, f in PATH_FIELDS.items() if kwargs.get(arg) in renditions), "path")
            raise inputs.InvalidArgument(
                field,
                f"{field}: the path segment is not UTF-8 once percent-decoded (byte 0x{segment[exc.start]:02x}); "
                "percent-encode the name's UTF-8 bytes",
            ) from None


def path_arguments(request: HttpRequest, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The URL's queue and task id, unescaped and validated (400 naming the one at fault)."""
    undecodable_path(request, kwargs)
    out = dict(kwargs)
    if "queue" in out:
        out["queue"] = inputs.queue(inputs.segment(out["queue"], "queue"))
    if "task_id" in out:
        out["task_id"] = inputs.task_id(inputs.segment(out["task_id"], "id"))
    return out


def read_body(request: HttpRequest) -> bytes:
    """The request body, never more than ``MAX_BODY`` bytes of it: 413 when Content-Length says more (before
    reading anything), or when a body without one (chunked) runs past the limit. Read from the stream rather than
    ``request.body``, whose own limit (``DATA_UPLOAD_MAX_MEMORY_SIZE``) would answer Django's HTML 400 page."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0  # as Django takes it: the read below still stops at the limit
    if declared > MAX_BODY:
        raise too_large(declared)
    raw: bytes = request.read(MAX_BODY + 1)
    if len(raw) > MAX_BODY:
        raise too_large()
    return raw


def json_body(request: HttpRequest, allowed: set[str] | frozenset[str]) -> dict[str, Any]:
    """The request's JSON object; an empty body is {}. Unknown fields are refused, naming the first. A body
    nested deeper than a payload may be (plus the body object) is refused before it is parsed."""
    raw = read_body(request)
    if not raw.strip():
        return {}
    limit = conf.taskq_settings().max_payload_depth + ENVELOPE_DEPTH
    try:
        doc = nesting.loads(raw, limit, unique_keys=True)
    except (nesting.TooDeepError, RecursionError):  # RecursionError: text the measure misreads (UTF-16, say)
        raise ApiError(400, "invalid_argument", too_deep(limit), "body") from None
    except ValueError as exc:  # UnicodeDecodeError and nesting.DuplicateKeyError among them
        raise ApiError(400, "invalid_argument", f"the body is not valid JSON: {nesting.reason(exc)}", "body") from None
    if not isinstance(doc, dict):
        raise ApiError(400, "invalid_argument", "the body must be a JSON object", "body")
    for name in doc:
        if name not in allowed:
            raise ApiError(
                400,
                "invalid_argument",
                f"unknown field {shown(name)}; known: {', '.join(sorted(allowed))}",
                name,
            )
    return doc


def too_deep(limit: int) -> str:
    return (
        f"the body is nested deeper than {limit} levels of arrays and objects "
        f"(a payload may nest {limit - ENVELOPE_DEPTH}: TASKS_MAX_PAYLOAD_DEPTH)"
    )


def field(name: str, check: Callable[..., Any], value: Any, *args: Any, **kwargs: Any) -> Any:
    """``check(value, ...)`` with any engine ValidationError reported against request field ``name`` (named once:
    an engine message that starts with it is not prefixed again)."""
    try:
        return check(value, *args, **kwargs)
    except EngineValidationError as exc:
        message = exc.message if exc.message.startswith(name) else f"{name}: {exc.message}"
        raise ApiError(400, "invalid_argument", message, name) from None


def endpoint(*methods: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A token-authenticated JSON view for ``methods``; the view gets ``(request, token, **url kwargs)``. The
    ``queue`` URL argument, if any, is checked against the token's scope."""

    def decorate(fn: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @csrf_exempt
        @wraps(fn)
        def view(request: HttpRequest, **kwargs: Any) -> HttpResponse:
            def run() -> HttpResponse:
                token = authorize(request, methods, [])
                args = path_arguments(request, kwargs)
                if "queue" in args:
                    authorize_queues(token, [args["queue"]])
                return fn(request, token, **args)

            # The request's traceparent is the context of what it enqueues, or of the action it takes on a task.
            with request_context(request):
                response = guarded(run)
            if response.status_code == 405:
                response["Allow"] = ", ".join(methods)
            return response

        view.api_methods = methods  # read by the OpenAPI sync test
        return cast(Callable[..., Any], view)

    return decorate


def no_content() -> HttpResponse:
    return HttpResponse(status=204)


def _is_api(request: HttpRequest) -> bool:
    prefix = str(reverse("taskq:api:openapi")).removesuffix("openapi.json")
    return bool(request.path.startswith(prefix))


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler400``: JSON under the API's prefix (a refusal Django raises outside any view, such as
    RequestDataTooBig from a middleware reading the body), Django's page elsewhere."""
    if not _is_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return api_error_response(too_large())
    return error_response(400, "bad_request", "the request was refused before it reached the API")


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: JSON under the API's prefix (the traceback is in the server's log), Django's page elsewhere."""
    if not _is_api(request):
        return defaults.server_error(request)
    return error_response(500, "internal", "an unexpected error; the server's log has the traceback")
