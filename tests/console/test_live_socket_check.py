"""``taskq.W131``: a project whose ASGI application does not route the live console's WebSocket is told so, with
the two lines that fix it; one that wraps its application with ``with_taskq`` (directly, inside its own
``ProtocolTypeRouter``, or under ASGI middleware) hears nothing."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest
from channels.routing import ProtocolTypeRouter, URLRouter
from django.core import checks
from django.core.asgi import get_asgi_application

from taskq.asgi import with_taskq
from taskq.console.live.socket_check import check_live_socket_routed
from taskq.queues import tasks_checks

MODULE = "tests_console_asgi_under_check"


class Middleware:
    """ASGI middleware as most are written: it keeps the application it wraps as ``app``."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        await self.app(scope, receive, send)


@pytest.fixture
def asgi_module(settings) -> Iterator[types.ModuleType]:
    """A project's ASGI module, importable by name, that ASGI_APPLICATION points at."""
    module = types.ModuleType(MODULE)
    sys.modules[MODULE] = module
    settings.ASGI_APPLICATION = f"{MODULE}.application"
    yield module
    del sys.modules[MODULE]


def findings() -> list[tuple[str, str]]:
    return [(m.id, m.msg) for m in checks.run_checks() if m.id == "taskq.W131"]


@pytest.mark.parametrize(
    "build",
    [
        lambda: with_taskq(get_asgi_application()),
        lambda: with_taskq(ProtocolTypeRouter({"http": get_asgi_application(), "websocket": URLRouter([])})),
        lambda: Middleware(Middleware(with_taskq(get_asgi_application()))),
    ],
    ids=["wrapped", "own-router", "under-middleware"],
)
def test_an_application_wrapped_by_with_taskq_has_no_finding(asgi_module, build) -> None:
    asgi_module.application = build()
    assert findings() == []


def test_the_standalone_consoles_own_application_has_no_finding() -> None:
    assert findings() == []  # the suite's settings: console/settings.py, console/asgi.py


@pytest.mark.parametrize(
    "build",
    [
        get_asgi_application,
        lambda: ProtocolTypeRouter({"http": get_asgi_application(), "websocket": URLRouter([])}),
        lambda: Middleware(get_asgi_application()),
    ],
    ids=["django-only", "own-router", "middleware"],
)
def test_an_application_without_the_console_socket_is_w131_with_the_fix(asgi_module, build) -> None:
    asgi_module.application = build()
    (found,) = [m for m in checks.run_checks() if m.id == "taskq.W131"]
    assert found.msg == (
        f'ASGI_APPLICATION "{MODULE}.application" does not route the live console\'s WebSocket: '
        "the console's pages load but never go live"
    )
    assert "application = with_taskq(application)" in found.hint


def test_no_asgi_application_and_one_that_cannot_be_imported(settings) -> None:
    settings.ASGI_APPLICATION = None
    assert findings() == [
        ("taskq.W131", "ASGI_APPLICATION is not set, so the live console's pages cannot connect their WebSocket")
    ]
    settings.ASGI_APPLICATION = "no_such_project.asgi.application"
    ((found_id, message),) = findings()
    assert message.startswith('ASGI_APPLICATION "no_such_project.asgi.application" cannot be imported (')


def test_a_project_without_the_console_app_is_not_checked(settings) -> None:
    settings.ASGI_APPLICATION = None
    settings.INSTALLED_APPS = [app for app in settings.INSTALLED_APPS if app != "taskq.console"]
    assert check_live_socket_routed() == []


def test_a_workers_own_checks_leave_it_out(asgi_module) -> None:
    """A worker serves no pages: its checks (run inside ``tasks_checks.serving``) give no W131 for a project whose
    application leaves the socket out."""
    asgi_module.application = get_asgi_application()
    with tasks_checks.serving(["mail"]):
        assert findings() == []
    assert [found_id for found_id, _ in findings()] == ["taskq.W131"]  # the same project, outside a worker
