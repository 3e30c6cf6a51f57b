"""Helpers shared by the page views: the engine handles, the user's preferences, safe redirects, and the stream
position a page that goes live was rendered at.

The views share one inspector per process (``taskq.queues.conf.get_inspector``: one connection pool for every
request); a request that acts gets a view of it that records the console user as the actor.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.http import HttpRequest
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from taskq.queues import conf, key_format
from taskq.queues.engine import Inspector
from taskq.queues.engine.errors import FormatUnsupportedError
from taskq.queues.engine.events import EventStreams

from ..context_processors import preference

__all__ = [
    "FILTER_SCAN",
    "acting_inspector",
    "absent_on_asynq",
    "inspector",
    "on_asynq",
    "page_cursor",
    "preference",
    "queue_url",
    "safe_next",
]

#: Tasks the queue page's filter reads, at most, per request (the inspector's SCAN_LIMIT): for the page's matches
#: and for the bulk bar's action on them, which acts on what one such read found (a bounded batch) and says so.
FILTER_SCAN = 10_000


def inspector() -> Inspector:
    """The process's inspector, for reads. Looked up on ``taskq.queues.conf`` per call, so a change of settings
    (tests make many) gives the inspector of the new ones."""
    return conf.get_inspector()


def acting_inspector(request: HttpRequest) -> Inspector:
    """The process's inspector acting for the console user of ``request``: the events of its actions name them.
    A view of the shared inspector made for this request (no new connection pool), so no request's user is ever
    recorded on another's action."""
    return conf.get_inspector(f"console:{request.user.get_username()}")


def on_asynq() -> bool:
    """Whether the Redis holds a Go asynq deployment's keys (``TASKS_KEY_FORMAT``): pages leave out what those
    cannot hold, and say so in one line."""
    return key_format.on_asynq(conf.taskq_settings())


def absent_on_asynq(what: str) -> None:
    """Refuse a page that cannot exist over asynq's keys (``what``: a key of ``key_format.ABSENT_ON_ASYNQ``), with
    the one line saying why (``errors.format_unsupported``: 404 for a page, 409 for an action, nothing changed).

    Raises:
        FormatUnsupportedError: the Redis holds asynq's keys.
    """
    if on_asynq():
        raise FormatUnsupportedError(key_format.ABSENT_ON_ASYNQ[what], op="console")


def page_cursor(inspector: Inspector, queues: list[str]) -> str:
    """The last event id of each queue's stream, as JSON for ``data-live-cursor``. Read *before* the page reads
    its figures: the socket replays from here, so a transition between the two reads shows up (twice at worst:
    updates are idempotent) instead of being lost. None where the Redis holds asynq's keys: no stream, no position
    (the live hub polls, and a page's catch-up is a snapshot)."""
    if on_asynq():
        return "{}"
    streams = EventStreams(broker=inspector.broker)
    return json.dumps(streams.cursor(queues))


def queue_url(queue: str, **params: object) -> str:
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
