"""Django settings for the taskq console.

Every deployment knob comes from the environment with a default that works on a laptop (SQLite, a local
redis-server on 6379). The TASKS_* values are read by ``queues.conf`` and the worker; keep their names in sync
with docker-compose.yml (tests/test_compose.py checks that every variable it sets is read here).
"""

from __future__ import annotations

from pathlib import Path

from console.channel_layers import channel_layers
from console.database_url import parse_database_url
from console.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

# The default only exists so a fresh checkout runs; docker-compose.yml and any real deployment set their own.
SECRET_KEY = env_str("SECRET_KEY", "django-insecure-taskq-dev-only-do-not-use-in-production")
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# Behind a TLS-terminating reverse proxy that sets X-Forwarded-Proto (see README, "The console").
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    # daphne first: its runserver replaces Django's so `manage.py runserver` serves ASGI (WebSockets).
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_rq",
    "console",
    "queues",
    "queues.history",
    "worker",
    "metrics",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Right after SecurityMiddleware, as WhiteNoise documents, so a bare `daphne console.asgi:application`
    # serves /static/ without nginx.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "console.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.context.console",
            ],
        },
    },
]

WSGI_APPLICATION = "console.wsgi.application"
ASGI_APPLICATION = "console.asgi.application"

DATABASES = {"default": parse_database_url(env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

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
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Not the Manifest variant: that one needs collectstatic before any page renders, and tests and
    # `make run` should work straight from a checkout.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the finders (app static dirs + STATICFILES_DIRS) so collectstatic is optional.
WHITENOISE_USE_FINDERS = True

# --- Redis and the task engine ---------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")

TASKS_KEY_PREFIX = env_str("TASKS_KEY_PREFIX", "tq")
TASKS_LEASE_SECONDS = env_float("TASKS_LEASE_SECONDS", 30.0)
# None means "derive from the lease": the worker picks a safe fraction of TASKS_LEASE_SECONDS.
TASKS_HEARTBEAT_SECONDS = env_float("TASKS_HEARTBEAT_SECONDS", None)
TASKS_RECOVERER_SECONDS = env_float("TASKS_RECOVERER_SECONDS", None)
TASKS_CLOCK_SKEW_SECONDS = env_float("TASKS_CLOCK_SKEW_SECONDS", None)
TASKS_FORWARDER_SECONDS = env_float("TASKS_FORWARDER_SECONDS", 1.0)
TASKS_JANITOR_SECONDS = env_float("TASKS_JANITOR_SECONDS", 8.0)
# Group aggregation defaults of every queue (a QueueDefinition may override them) and the aggregator's round.
TASKS_GROUP_GRACE_SECONDS = env_float("TASKS_GROUP_GRACE_SECONDS", 60.0)
TASKS_GROUP_MAX_DELAY_SECONDS = env_float("TASKS_GROUP_MAX_DELAY_SECONDS", 0.0)
TASKS_GROUP_MAX_SIZE = env_int("TASKS_GROUP_MAX_SIZE", 0)
TASKS_AGGREGATOR_SECONDS = env_float("TASKS_AGGREGATOR_SECONDS", 1.0)
TASKS_ARCHIVE_MAX_SIZE = env_int("TASKS_ARCHIVE_MAX_SIZE", 10_000)
TASKS_ARCHIVE_MAX_AGE_SECONDS = env_int("TASKS_ARCHIVE_MAX_AGE_SECONDS", 90 * 24 * 3600)
TASKS_EVENT_STREAM_MAXLEN = env_int("TASKS_EVENT_STREAM_MAXLEN", 100_000)
TASKS_SHUTDOWN_TIMEOUT = env_float("TASKS_SHUTDOWN_TIMEOUT", 8.0)
# The console shows everything but hides and refuses every operator action.
TASKS_CONSOLE_READ_ONLY = env_bool("TASKS_CONSOLE_READ_ONLY", False)
# Payloads and results shown masked to people (README, "Redaction"): task types by prefix, whole; JSON keys at
# any depth, their values. Comma-separated. queues.view_unredacted may reveal them, each look audited.
TASKS_REDACT = {"types": env_list("TASKS_REDACT_TYPES", []), "keys": env_list("TASKS_REDACT_KEYS", [])}
# When a taskscheduler enqueues the daily task-history rollups (cron, UTC); empty: never.
TASKS_ANALYTICS_SCHEDULE = env_str("TASKS_ANALYTICS_SCHEDULE", "15 0 * * *")
# HTTP API (/api/v1/): how long past its TTR a consumer's lease is left before a consume recovers it (clock
# differences between machines), and how many long polls may wait at once per console process.
TASKS_API_RECOVERY_SKEW_SECONDS = env_float("TASKS_API_RECOVERY_SKEW_SECONDS", 1.0)
TASKS_API_MAX_WAITERS = env_int("TASKS_API_MAX_WAITERS", 64)
# The event exporter (one active across workers; taskworker runs it when TASKS_EVENT_EXPORT is on), the analytics
# job's output, and where Spark runs: local[*] in-process, SPARK_MASTER=spark://..., or SPARK_REMOTE=sc://...
TASKS_EVENT_EXPORT = env_bool("TASKS_EVENT_EXPORT", False)
TASKS_EVENT_EXPORT_DIR = env_str("TASKS_EVENT_EXPORT_DIR", str(BASE_DIR / "var" / "events"))
TASKS_ROLLUP_DIR = env_str("TASKS_ROLLUP_DIR", str(BASE_DIR / "var" / "rollups"))
TASKS_EVENT_EXPORT_CAP = env_int("TASKS_EVENT_EXPORT_CAP", 1_000_000)
SPARK_MASTER = env_str("SPARK_MASTER", "local[*]")
SPARK_REMOTE = env_str("SPARK_REMOTE", "")
SPARK_APP_NAME = env_str("SPARK_APP_NAME", "taskq")
SPARK_CONF = env_str("SPARK_CONF", "")  # JSON object or k=v;k=v
# Bearer token a Prometheus scrape of /metrics must send; empty leaves /metrics open (no login: it has its own).
METRICS_TOKEN = env_str("METRICS_TOKEN", "")

# channels-redis for one server or Sentinel; in-process on a Redis Cluster (see console/channel_layers.py).
CHANNEL_LAYERS = channel_layers(REDIS_URL)

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
