"""Helpers shared by the page views: the engine handles, the user's preferences, safe redirects, and the stream
position a page that goes live was rendered at."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from django.http import HttpRequest
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from ..context_processors import preference

if TYPE_CHECKING:  # imported per call below, so the URLconf loads even when the engine cannot
    from taskq.queues.engine import Inspector

__all__ = ["FILTER_SCAN", "acting_inspector", "inspector", "page_cursor", "preference", "queue_url", "safe_next"]

#: Tasks the queue page's filter reads, at most, per request (the inspector's SCAN_LIMIT): for the page's matches
#: and for the bulk bar's action on them, which acts on what one such read found (a bounded batch) and says so.
FILTER_SCAN = 10_000


def inspector() -> Inspector:
    """The inspector for reads. Looked up on ``taskq.queues.conf`` per call so tests and settings changes apply."""
    from taskq.queues import conf

    return conf.get_inspector()


def acting_inspector(request: HttpRequest) -> Inspector:
    """The inspector for an operator action: its events name the console user who took it."""
    from taskq.queues import conf

    return conf.get_inspector(f"console:{request.user.get_username()}")


def page_cursor(inspector: Inspector, queues: list[str]) -> str:
    """The last event id of each queue's stream, as JSON for ``data-live-cursor``. Read *before* the page reads
    its figures: the socket replays from here, so a transition between the two reads shows up (twice at worst:
    updates are idempotent) instead of being lost."""
    from taskq.queues.engine.events import EventStreams

    streams = EventStreams(broker=inspector.broker)
    return json.dumps(streams.cursor(queues))


def queue_url(queue: str, **params: object) -> str:
    from urllib.parse import urlencode

    url = reverse("taskq:queue", args=[queue])
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return f"{url}?{query}" if query else url


def safe_next(request: HttpRequest, candidate: str | None, fallback: str) -> str:
    """Where to go back after an action: a local URL the form carried, or ``fallback``."""
    if (
        candidate
        and candidate.startswith("/")
        and url_has_allowed_host_and_scheme(
            candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        return candidate
    return fallback
