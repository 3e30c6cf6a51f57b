"""Every URL of the console, for a project's ``urls.py``: ``path("ops/", include("taskq.urls"))``.

The pages, the HTTP API (``api/v1/``), ``metrics`` and the RQ pages (where django-rq is installed), all in the ``taskq``
namespace (``reverse("taskq:dashboard")``), so a project's own route of the same name keeps its name. ``ws/live/`` is
where the live console's WebSocket is opened: the pages reverse it for live.js, and ``taskq.asgi.with_taskq`` serves the
socket wherever this module is mounted. What a project has already (admin, login pages) it mounts itself.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.views import LogoutView
from django.urls import include, path

from taskq.console.live.routing import live_socket
from taskq.console.rq import bridge_enabled

app_name = "taskq"

urlpatterns = [
    path("api/v1/", include("taskq.queues.api.urls")),
    path("", include("taskq.metrics.urls")),
    # The RQ pages where the project runs the bridge (the rq extra installed, django_rq in INSTALLED_APPS).
    *([path("rq/", include("taskq.console.rq.urls"))] if bridge_enabled() else []),
    path("ws/live/", live_socket, name="live"),
    # The console's "Log out" button: to the project's login page after, without asking the project for a route.
    path("logout/", LogoutView.as_view(next_page=settings.LOGOUT_REDIRECT_URL or settings.LOGIN_URL), name="logout"),
    path("", include("taskq.console.page_urls")),
]
