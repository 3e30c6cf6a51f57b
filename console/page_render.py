"""Rendering a console page with the context every console page needs (the user's theme, what they may do, the
summary bar: ``taskq.console.context_processors.console``), so a project need not list the console's context processor
in its TEMPLATES. A project that lists it anyway gets the same values twice, computed once (the preference is
read once per request)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render as django_render

from .context_processors import console


def render(
    request: HttpRequest, template_name: str, context: Mapping[str, Any] | None = None, status: int | None = None
) -> HttpResponse:
    """``django.shortcuts.render`` for the console's pages: the page's own ``context`` over the console's."""
    return django_render(request, template_name, {**console(request), **(context or {})}, status=status)
