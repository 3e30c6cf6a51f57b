"""The smallest Django project that runs Django tasks on taskq: the settings of the worker processes the backend
tests start, and of the test process itself in the Django 6 run (scripts/test-django6.sh), where the console's
own apps (Channels, django-rq, Spark) are not installed. Nothing else of the console is needed."""

from __future__ import annotations

import importlib.util
import os

from taskq.queues.engine.settings import TaskqSettings

SECRET_KEY = "djtasks-tests-only"
DEBUG = False
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "queues",
    "worker",
]
if importlib.util.find_spec("django.tasks") is None:  # Django 5.2: the backport is the framework
    INSTALLED_APPS.append("django_tasks")
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
# taskq's own settings (REDIS_URL, TASKS_*) from the environment, as the console's settings take them: the tests
# give their worker a test database and short janitor and forwarder intervals.
globals().update(TaskqSettings.from_env(os.environ).as_settings())

#: One backend with taskq's retries off (a failure reads FAILED at once), one that retries twice, and an alias of
#: another backend, whose tasks a worker must refuse to run.
TASKS = {
    "default": {
        "BACKEND": "taskq.tasks_backend.TaskqBackend",
        "QUEUES": ["default", "djtasks-mail"],
        "OPTIONS": {"MAX_RETRIES": 0, "TIMEOUT": 60},
    },
    "retrying": {
        "BACKEND": "taskq.tasks_backend.TaskqBackend",
        "QUEUES": ["djtasks-retry"],
        "OPTIONS": {"MAX_RETRIES": 2, "RESULT_RETENTION": 3600},
    },
    "short": {
        "BACKEND": "taskq.tasks_backend.TaskqBackend",
        "QUEUES": ["djtasks-short"],
        "OPTIONS": {"MAX_RETRIES": 0, "RESULT_RETENTION": 1},
    },
}
