"""The console's settings plus the demo app, for ``make run`` (scripts/run-demo.sh exports
``DJANGO_SETTINGS_MODULE=demo.settings`` for the console, the worker and the traffic generator)."""

import os

from taskq.console.settings import *  # noqa: F403
from taskq.console.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "demo"]

# Django's Tasks framework on taskq (demo/django_tasks.py); no retries, so a failure reads FAILED at once.
TASKS = {
    "default": {
        "BACKEND": "taskq.tasks_backend.TaskqBackend",
        "QUEUES": ["default"],
        "OPTIONS": {"MAX_RETRIES": 0, "RESULT_RETENTION": 3600},
    }
}

# The demo fills the History page within minutes of starting: the worker exports the event streams, and the
# scheduler (scripts/run-demo.sh starts one) rolls up today so far every three minutes. The environment still
# wins, as everywhere in the settings.
if "TASKS_EVENT_EXPORT" not in os.environ:
    TASKS_EVENT_EXPORT = True
if "TASKS_ANALYTICS_TODAY_SCHEDULE" not in os.environ:
    TASKS_ANALYTICS_TODAY_SCHEDULE = "*/3 * * * *"

# The demo's console listens on loopback only (scripts/run-demo.sh), which /metrics always answers: the warning
# that neither METRICS_TOKEN nor METRICS_ALLOW is set would only be noise on every command of `make run`.
SILENCED_SYSTEM_CHECKS = ["metrics.W001"]
