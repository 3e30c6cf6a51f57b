"""Small formatting filters for the console's templates."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.timesince import timesince, timeuntil

from taskq.queues.rendering import retries_text
from taskq.worker.config import entry_for

register = template.Library()


@register.filter
def duration(seconds: object) -> str:
    """``3725`` -> ``1h 2m``; under a minute with one decimal; ``—`` for nothing."""
    if seconds is None or seconds == "":
        return "—"
    try:
        value = float(seconds)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "—"
    sign, value = ("-" if value < 0 else ""), abs(value)
    if value < 60:
        return f"{sign}{value:.1f} s"
    minutes, secs = divmod(int(value), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{sign}{days}d {hours}h"
    if hours:
        return f"{sign}{hours}h {minutes}m"
    return f"{sign}{minutes}m {secs}s"


@register.filter
def run_time(seconds: object) -> str:
    """How long an attempt ran: ``duration``, but in ms below a second, where most tasks end (``0.0 s`` would
    hide the difference between 2 ms and 90 ms)."""
    if isinstance(seconds, int | float) and 0 <= seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return str(duration(seconds))


@register.filter
def queues_argument(queue: str) -> str:
    """The argument of ``taskworker --queues`` that serves exactly ``queue``, quoted for a POSIX shell:
    ``has space`` -> ``'has space'``, ``*`` (a pattern for every queue) -> ``'[*]'`` (only the queue named ``*``)."""
    return shlex.quote(entry_for(str(queue)))


@register.filter
def age(when: object) -> str:
    """The time since ``when`` (an aware datetime) as ``duration`` writes it: how long an active task has run."""
    if not isinstance(when, datetime):
        return "—"
    return str(duration((datetime.now(UTC) - when).total_seconds()))


@register.filter
def get(mapping: object, key: str) -> object:
    """``counts|get:"pending"``: a dict lookup by a variable key."""
    return mapping.get(key, 0) if isinstance(mapping, dict) else None


@register.filter
def ms(value: object) -> str:
    """A bucket's upper bound in milliseconds as the type page shows a percentile: ``≤ 5 ms``, ``≤ 2.5 s``;
    ``—`` without samples."""
    if value is None or value == "":
        return "—"
    number = float(value)  # type: ignore[arg-type]
    return f"≤ {number / 1000:g} s" if number >= 1000 else f"≤ {number:g} ms"


@register.simple_tag
def task_link(queue: str, task_id: str, existing: object, length: int = 24) -> str:
    """A link to a task's page when (queue, id) is in ``existing`` (the set the view read with
    ``Inspector.existing_tasks``, one pipeline for the page); otherwise the id marked "gone", since a link to a
    task that was deleted (on success without retention, past its retention, by an operator) would only 404."""
    short = Truncator(task_id).chars(length)
    if isinstance(existing, set | frozenset) and (queue, task_id) in existing:
        url = reverse("taskq:task", args=[queue, task_id])
        return str(format_html('<a href="{}" title="{}"><code>{}</code></a>', url, task_id, short))
    return str(
        format_html(
            '<span class="gone" title="{} no longer exists: deleted, or past its retention"><code>{}</code> '
            '<span class="badge">gone</span></span>',
            task_id,
            short,
        )
    )


@register.filter
def retries(task: object) -> str:
    """A task's retries in words (``taskq.queues.rendering.retries_text``): "retried 2 of 2, then archived"."""
    return retries_text(task)  # type: ignore[arg-type]


#: Below this many seconds a relative time reads "just now" / "in a few seconds": Django's timesince counts whole
#: minutes and would say "0 minutes" for the first 60 s.
FEW_SECONDS = 60


@register.filter
def ago(when: object) -> str:
    """``(5 minutes ago)``'s words for a past time: "just now" below a minute, else Django's ``timesince`` + "ago"."""
    seconds = _seconds_from_now(when)
    if seconds is None:
        return "—"
    return "just now" if seconds > -FEW_SECONDS else f"{timesince(when)} ago"


@register.filter
def until(when: object) -> str:
    """The words for a coming time: "in a few seconds" below a minute, "due now" once past, else "in 5 minutes"."""
    seconds = _seconds_from_now(when)
    if seconds is None:
        return "—"
    if seconds <= 0:
        return "due now"
    return "in a few seconds" if seconds < FEW_SECONDS else f"in {timeuntil(when)}"


def _seconds_from_now(when: object) -> float | None:
    if not isinstance(when, datetime):
        return None
    now = datetime.now(tz=UTC if when.tzinfo else None)
    return (when - now).total_seconds()
