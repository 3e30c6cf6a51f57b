"""Every URL of the console, for a project's ``urls.py``: ``path("ops/", include("taskq.urls"))``.

The pages, the HTTP API (``api/v1/``), ``metrics`` and the RQ pages, all in the ``taskq`` namespace
(``reverse("taskq:dashboard")``), so a project's own route of the same name keeps its name. ``ws/live/`` is where
the live console's WebSocket is opened: the pages reverse it for live.js, and ``taskq.asgi.with_taskq`` serves the
socket wherever this module is mounted. What a project has already (admin, login pages) it mounts itself.
"""

from __future__ import annotations

from django.urls import include, path

from taskq.console.live.routing import live_socket

app_name = "taskq"

urlpatterns = [
    path("api/v1/", include("taskq.queues.api.urls")),
    path("", include("taskq.metrics.urls")),
    path("rq/", include("taskq.console.rq.urls")),
    path("ws/live/", live_socket, name="live"),
    path("", include("taskq.console.page_urls")),
]
