"""System checks (``manage.py check``) of the ``/metrics`` access settings (see ``metrics/scrape_access.py``)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core import checks

from taskq.queues.conf import taskq_settings

from .scrape_access import parse_networks


@checks.register(checks.Tags.security)
def check_metrics_access(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    # The metrics app's check: silent where the app is not installed (a module imported it anyway) and where
    # `manage.py check <app>` asks about other apps only.
    if not apps.is_installed("taskq.metrics"):
        return []
    if app_configs is not None and not any(config.name == "taskq.metrics" for config in app_configs):
        return []
    configured = taskq_settings()
    allow = configured.metrics_allow
    try:
        parse_networks(allow)
    except ValueError as exc:
        return [checks.Error(str(exc), hint="List CIDRs separated by commas.", id="taskq.E201")]
    if settings.DEBUG or configured.metrics_token or allow:
        return []
    return [
        checks.Warning(
            "/metrics answers only scrapes from loopback: neither METRICS_TOKEN nor METRICS_ALLOW is set.",
            hint="Set METRICS_TOKEN (Prometheus sends it as a bearer token) or METRICS_ALLOW (the CIDRs Prometheus "
            "scrapes from), or your Prometheus will be refused (403).",
            id="taskq.W201",
        )
    ]
