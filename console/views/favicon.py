"""``/favicon.ico``: browsers ask for it at the root whatever the page says, so it answers there (public, like the
login page it appears on) instead of logging a 404 per visit. Pages link the SVG (``templates/taskq/base.html``)."""

from __future__ import annotations

from functools import cache

from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

#: Under static/, found like every static file (WhiteNoise serves the same bytes as /static/taskq/favicon.ico).
FAVICON = "taskq/favicon.ico"


@cache
def _icon() -> bytes:
    path = finders.find(FAVICON)
    if not isinstance(path, str):
        raise FileNotFoundError(f"static file {FAVICON} is missing")
    with open(path, "rb") as icon:
        return icon.read()


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Access: public."""
    response = HttpResponse(_icon(), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response
