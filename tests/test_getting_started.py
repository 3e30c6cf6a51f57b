"""The repository's own console, which the demo builds on (demo/settings.py imports console/settings.py), is set up
by the same lines docs/getting-started.md gives a project ("Add taskq to your project"), so the page and the demo
cannot drift: a line changed on one side and not the other fails here."""

from __future__ import annotations

from pathlib import Path

from tests.packaging.getting_started import block

ROOT = Path(__file__).resolve().parents[1]


def statements(code: str) -> list[str]:
    """The block's lines that do something (no comments, no blank lines), without their trailing comments."""
    return [line.split("  #")[0].rstrip() for line in code.splitlines() if line.strip() and not line.startswith("#")]


def test_the_settings_add_taskq_as_the_page_says():
    settings = (ROOT / "console" / "settings.py").read_text()
    lines = statements(block("settings.py"))
    assert lines[0] == 'INSTALLED_APPS.insert(0, "daphne")' and lines[1].startswith("INSTALLED_APPS += [")
    # The console reads its Redis and names its ASGI module from its own environment and package.
    for line in lines[:2]:
        assert line in settings, line
    assert 'ASGI_APPLICATION = "taskq.console.asgi.application"' in settings


def test_the_urls_include_taskq_as_the_page_says():
    urls = (ROOT / "console" / "urls.py").read_text()
    lines = statements(block("urls.py"))
    assert lines == ["from django.urls import include", 'urlpatterns += [path("ops/", include("taskq.urls"))]']
    assert 'path("", include("taskq.urls"))' in urls  # the standalone console mounts it at the root


def test_the_asgi_module_wraps_the_application_as_the_page_says():
    asgi = (ROOT / "console" / "asgi.py").read_text()
    for line in statements(block("asgi.py")):
        assert line in asgi, line


def test_the_demo_builds_on_the_console_settings():
    assert "from taskq.console.settings import *" in (ROOT / "demo" / "settings.py").read_text()
