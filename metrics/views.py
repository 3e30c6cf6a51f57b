"""``/metrics``: Prometheus exposition of the queues, read from Redis on each scrape.

Who may scrape it (DEBUG, loopback, ``METRICS_ALLOW`` networks, the ``METRICS_TOKEN`` bearer token) is decided by
``metrics/scrape_access.py``. The token travels in the header only: a token in a URL ends up in logs.
"""

from __future__ import annotations

import gc

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

from taskq.queues.conf import get_inspector, taskq_settings
from taskq.queues.engine import RedisUnavailableError

from .collector import QueueCollector
from .scrape_access import MetricsAccess

_registry = CollectorRegistry(auto_describe=False)
_registry.register(QueueCollector(get_inspector))


def _access() -> MetricsAccess:
    return MetricsAccess(
        debug=settings.DEBUG,
        token=taskq_settings().metrics_token,
        allow=taskq_settings().metrics_allow,
    )


def _refused(access: MetricsAccess) -> HttpResponse:
    if access.token:
        response = HttpResponse("a valid bearer token is required\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(
        "/metrics answers loopback and the networks of METRICS_ALLOW only; set METRICS_TOKEN or METRICS_ALLOW\n",
        status=403,
        content_type="text/plain",
    )


def _generate() -> bytes:
    """The exposition text. A scrape builds tens of thousands of short-lived objects, which set off full runs of
    Python's cyclic garbage collector over the whole console process: they doubled a scrape's p95 (107 ms against
    50 ms with 100 queues, bench/metrics_scrape.py). Nothing here makes cycles, so it is paused for the scrape."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return generate_latest(_registry)
    finally:
        if was_enabled:
            gc.enable()


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    access = _access()
    if not access.allows(request):
        return _refused(access)
    try:
        body = _generate()
    except RedisUnavailableError as exc:
        # A failed scrape marks the target down in Prometheus, which is what an outage should look like.
        return HttpResponse(f"Redis is unreachable: {exc}\n", status=503, content_type="text/plain")
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
