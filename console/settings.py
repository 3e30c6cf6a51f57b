"""Django settings for the taskq console.

Every deployment knob comes from the environment with a default that works on a laptop (SQLite, a local
redis-server on 6379). taskq's own (REDIS_URL, TASKS_*, SPARK_*) are defined in ``taskq.queues.engine.settings`` and
exported here; tests/test_compose.py checks that every variable docker-compose.yml sets is read.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from taskq.console.channel_layers import channel_layers
from taskq.console.env import env_bool, env_database, env_list, env_str
from taskq.queues.engine import extras
from taskq.queues.engine.errors import ValidationError
from taskq.queues.engine.settings import TaskqSettings

BASE_DIR = Path(__file__).resolve().parent.parent

# The default only exists so a fresh checkout runs; docker-compose.yml and any real deployment set their own.
SECRET_KEY = env_str("SECRET_KEY", "django-insecure-taskq-dev-only-do-not-use-in-production")
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# Behind a TLS-terminating reverse proxy that sets X-Forwarded-Proto (see docs/console.md, "The console").
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # The RQ bridge (console/rq), where the rq extra is installed: the console then shows RQ's queues beside taskq's.
    *(["django_rq"] if extras.importable("django_rq") else []),
]
# taskq's own lines, as docs/getting-started.md gives them to a project (tests/test_getting_started.py compares).
INSTALLED_APPS.insert(0, "daphne")  # runserver then serves ASGI, so the live console works in development
INSTALLED_APPS += ["taskq.queues", "taskq.queues.history", "taskq.worker", "taskq.console", "taskq.metrics"]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Right after SecurityMiddleware, as WhiteNoise documents, so a bare `daphne taskq.console.asgi:application`
    # serves /static/ without nginx.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # django-rq's admin pages 500 on a queue index past the end of RQ_QUEUES: a 404 instead.
    "taskq.console.rq.admin_guard.RQQueueIndexGuard",
]

ROOT_URLCONF = "taskq.console.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # None of the project's own: the console's templates are found in its app, as in a project that installs it
        # (console/templates and console/static link to the repository's templates/ and static/; the wheel copies
        # those folders there).
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "taskq.console.wsgi.application"
ASGI_APPLICATION = "taskq.console.asgi.application"

# SQLite by default (a checkout runs as it is); a real deployment, docker-compose's included, uses PostgreSQL.
DATABASES = {"default": env_database("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Above the HTTP API's own limit (taskq.queues.api.http.MAX_BODY, 2 MiB), so the API answers an oversized body with its
# JSON 413 and never with the HTML 400 that Django's RequestDataTooBig gives (tests/api check the order).
DATA_UPLOAD_MAX_MEMORY_SIZE = 4 * 1024 * 1024

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Not the Manifest variant: that one needs collectstatic before any page renders, and tests and
    # `make run` should work straight from a checkout.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the finders (the apps' static dirs) so collectstatic is optional.
WHITENOISE_USE_FINDERS = True

# --- Redis and the task engine ---------------------------------------------------------------------------
# taskq's own settings (REDIS_URL, TASKS_*, SPARK_*, METRICS_*), each with its environment variable, default and
# meaning, are listed once, in queues/engine/settings.py; every one becomes the Django setting of the same name here.
# Relative directories are under the project. TASKS_REDACT gathers the two redaction lists in their Django form (see
# taskq.queues.engine.settings.REDACT_SETTING).
try:
    TASKQ = TaskqSettings.from_env(os.environ)
except ValidationError as exc:
    raise ImproperlyConfigured(exc.message) from None
TASKQ = replace(
    TASKQ, event_export_dir=str(BASE_DIR / TASKQ.event_export_dir), rollup_dir=str(BASE_DIR / TASKQ.rollup_dir)
)
globals().update(TASKQ.as_settings())
REDIS_URL: str = TASKQ.redis_url  # named again only because the channel layers and django-rq below read it
TASKS_REDACT = {"types": list(TASKQ.redact_types), "keys": list(TASKQ.redact_keys)}

# channels-redis for one server or Sentinel; in-process on a Redis Cluster (see console/channel_layers.py).
CHANNEL_LAYERS = channel_layers(REDIS_URL)

if "django_rq" in INSTALLED_APPS:
    RQ_QUEUES = {"default": {"URL": REDIS_URL}}

# --- Logging: everything to stderr, where daphne, docker and systemd expect it -------------------------------
LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {
        "stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "plain"},
    },
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    "loggers": {
        # Replaces Django's default "django" logger (console handler in DEBUG + propagation to root), which
        # would print every record twice.
        "django": {"handlers": ["stderr"], "level": env_str("DJANGO_LOG_LEVEL", "INFO").upper(), "propagate": False},
    },
}
