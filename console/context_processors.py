"""Template context every console page needs: the user's theme, what the user may do, the summary bar, and whether
the Redis holds asynq's keys (``asynq_keys``: navigation hides what cannot exist there, and the live indicator says
the page polls).

The console's views render with it themselves (``taskq.console.page_render``), so a project need not install the
processor. Installed in a project's TEMPLATES anyway, the processor runs for every template rendered with a request,
the project's own pages too. Only the console's own pages (those whose view lives in this package) get what costs a
query (the user's preferences, their permissions, the summary bar); every other page gets the values that cost
nothing, so a project's pages make no query on the console's behalf.
"""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from taskq.queues import conf, key_format
from taskq.queues.engine import EngineError

from .models import ConsolePreference
from .permissions import can_create, can_operate, can_view, read_only
from .summary_bar import summary_bar


def preference(request: HttpRequest) -> ConsolePreference:
    """The user's preferences, read once per request (this context processor and the views share it)."""
    cached = getattr(request, "_console_preference", None)
    if cached is None:
        cached = ConsolePreference.for_user(request.user)
        request._console_preference = cached
    return cached


#: The console's package ("console."): its views are the console's pages.
CONSOLE_PACKAGE = __name__.rpartition(".")[0] + "."


def console(request: HttpRequest) -> dict[str, object]:
    user = getattr(request, "user", None)
    # The user's test comes after the page's: reading request.user loads the user, a query of its own.
    if not on_console_page(request) or user is None or not user.is_authenticated:
        return {"console_theme": ConsolePreference.Theme.SYSTEM, "console_read_only": read_only(), "can_operate": False}
    asynq_keys = key_format.on_asynq(conf.taskq_settings())
    return {
        "asynq_keys": asynq_keys,
        # What the live indicator adds where pages follow Redis by polling (console/live/polling.py).
        "live_polling": key_format.POLLING_NOTE if asynq_keys else "",
        "asynq_absent": key_format.ABSENT_ON_ASYNQ,
        "console_theme": preference(request).theme,
        "console_read_only": read_only(),
        "can_operate": can_operate(user),
        # A new task goes through taskq's Client, which refuses asynq's keys: no link to a form that cannot work.
        "can_create": can_create(user) and not asynq_keys,
        # Read only when a page renders the bar (taskq/base.html): fragments and redirects cost no Redis read.
        "fleet_summary": SimpleLazyObject(_summary_bar) if can_view(user) else None,
    }


def _summary_bar() -> object:
    try:
        inspector = conf.get_inspector()
    except EngineError:  # a malformed REDIS_URL: no bar, and the page's own content says what is wrong
        return []
    return summary_bar(inspector) or []


def on_console_page(request: HttpRequest) -> bool:
    """Whether ``request`` was routed to one of the console's views (a function view, or a class-based view's
    ``view_class``, defined in this package). Also true of the error page a console view answers with (a 404 for
    an unknown queue), false of a URL that matched no view."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return False
    view = getattr(match.func, "view_class", match.func)
    return str(getattr(view, "__module__", "")).startswith(CONSOLE_PACKAGE)
