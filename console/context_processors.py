"""Template context every console page needs: the user's theme, what the user may do, and the summary bar."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from .access import can_create, can_operate, can_view, read_only
from .models import ConsolePreference


def preference(request: HttpRequest) -> ConsolePreference:
    """The user's preferences, read once per request (this context processor and the views share it)."""
    cached = getattr(request, "_console_preference", None)
    if cached is None:
        cached = ConsolePreference.for_user(request.user)
        request._console_preference = cached
    return cached


def console(request: HttpRequest) -> dict[str, object]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"console_theme": ConsolePreference.Theme.SYSTEM, "console_read_only": read_only(), "can_operate": False}
    return {
        "console_theme": preference(request).theme,
        "console_read_only": read_only(),
        "can_operate": can_operate(user),
        "can_create": can_create(user),
        # Read only when a page renders the bar (base.html): fragments and redirects cost no Redis read.
        "fleet_summary": SimpleLazyObject(_summary_bar) if can_view(user) else None,
    }


def _summary_bar() -> object:
    from queues import conf
    from queues.engine import EngineError

    from .summary_bar import summary_bar

    try:
        inspector = conf.get_inspector()
    except EngineError:  # a malformed REDIS_URL: no bar, and the page's own content says what is wrong
        return []
    return summary_bar(inspector) or []
