"""The console's settings plus the demo app, for ``make run`` (scripts/run-demo.sh exports
``DJANGO_SETTINGS_MODULE=demo.settings`` for the console, the worker and the traffic generator)."""

from console.settings import *  # noqa: F403
from console.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "demo"]
