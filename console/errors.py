"""Error pages, and the mapping from the engine's named errors to them.

Redis being down is an expected operational state, not a bug: it gets a 503 page that says what to check, never
a traceback. So does a keyspace at another key layout (a deployment half done). Unknown queues and tasks are 404s;
input the engine refuses is a 400. What the Redis's key format cannot hold (asynq's keys have no workflows, no
event stream, no time series) is explained on its own page: a 404 for a page that cannot exist there, a 409 for an
action refused, nothing changed.

Deliberately shares its name with ``queues/engine/errors.py``: that module defines the errors, this one the
pages the console shows for them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views import defaults

from taskq.queues.engine import (
    EngineError,
    LayoutVersionError,
    QueueNotFoundError,
    RedisUnavailableError,
    ServerNotFoundError,
    TaskNotFoundError,
    ValidationError,
)
from taskq.queues.engine.errors import FormatUnsupportedError

from .page_render import render

logger = logging.getLogger(__name__)


def error_page(request: HttpRequest, status: int, title: str, message: str, detail: str = "") -> HttpResponse:
    return render(
        request,
        "taskq/error.html",
        {"status": status, "title": title, "message": message, "detail": detail[:500]},
        status=status,
    )


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The standalone console's 404 for a URL no route matches (``handler404`` in console/urls.py). Its template
    is not the bare ``404.html``, which would take over the 404 pages of a project the console is mounted in."""
    return defaults.page_not_found(request, exception, template_name="taskq/404.html")


def not_found(request: HttpRequest, message: str) -> HttpResponse:
    return error_page(request, 404, "Not found", message)


def bad_request(request: HttpRequest, message: str) -> HttpResponse:
    return error_page(request, 400, "Bad request", message)


def _unavailable(request: HttpRequest, why: str, exc: Exception, title: str, message: str, detail: str) -> HttpResponse:
    logger.warning("console: %s on %s: %s", why, request.path[:200], exc)
    return error_page(request, 503, title, message, detail=detail)


def redis_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    message = (
        "The console cannot read or change queue state because Redis does not answer. Check that "
        "redis-server is running and that REDIS_URL points at it, then reload this page."
    )
    return _unavailable(request, "redis unavailable", exc, "Redis is unavailable", message, str(exc))


def layout_mismatch(request: HttpRequest, exc: LayoutVersionError) -> HttpResponse:
    message = (
        "The console refused to act on this Redis keyspace, whose key layout it does not read and "
        "write: nothing was changed. Finish the deployment as the line below says (upgrade the "
        "console, or run python manage.py tasks migrate-keys), then try again."
    )
    return _unavailable(request, "refused", exc, "Another key layout", message, exc.message)


def format_unsupported(request: HttpRequest, exc: EngineError) -> HttpResponse:
    """What asynq's keys cannot hold: one line saying so, never a fake page. A page asked for (GET) does not exist
    there (404); an action was refused and changed nothing (409)."""
    status = 404 if request.method in ("GET", "HEAD") else 409
    message = (
        'This Redis holds a Go asynq deployment\'s keys (TASKS_KEY_FORMAT = "asynq"), which cannot hold what '
        "was asked: nothing was changed."
    )
    return error_page(request, status, "Not in asynq's format", message, detail=exc.message)


def engine_errors(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Turn the engine's named errors into error pages: 503 unavailable or another key layout, 404 not found, 400
    refused input."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except RedisUnavailableError as exc:
            return redis_unavailable(request, exc)
        except LayoutVersionError as exc:
            return layout_mismatch(request, exc)
        except (QueueNotFoundError, TaskNotFoundError, ServerNotFoundError) as exc:
            return not_found(request, exc.message)
        except ValidationError as exc:
            return bad_request(request, exc.message)
        except FormatUnsupportedError as exc:
            return format_unsupported(request, exc)

    return wrapper
