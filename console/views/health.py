"""The public health probe.

Deliberately shares its name with ``worker/health.py``: each is its process's health probe (this the console's,
that the worker's ``--health-port``).
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from taskq.queues.conf import get_inspector

logger = logging.getLogger(__name__)


@require_safe
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Access: public, for load balancers and compose healthchecks; reveals only whether each part answers.

    200 when the console, Redis and the database all answer, 503 otherwise; the body names each check:
    ``{"status": "ok", "checks": {"console": "ok", "redis": "ok", "database": "fail"}}``. Why a check failed
    goes to the log, not to the public.
    """
    # The console check passes by construction: this code runs, so the process serves requests.
    checks = {"console": True, "redis": _redis_ok(), "database": _database_ok()}
    healthy = all(checks.values())
    return JsonResponse(
        {
            "status": "ok" if healthy else "unavailable",
            "checks": {name: "ok" if ok else "fail" for name, ok in checks.items()},
        },
        status=200 if healthy else 503,
    )


def _redis_ok() -> bool:
    # Through the engine, like every other Redis access outside taskq.queues.engine: listing queues is one cheap
    # read and raises RedisUnavailableError when Redis is down.
    try:
        get_inspector().queues()
    except Exception:  # a health probe reports failure; it must never 500
        logger.warning("healthz: redis check failed", exc_info=True)
        return False
    return True


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError:
        logger.warning("healthz: database check failed", exc_info=True)
        return False
    return True
