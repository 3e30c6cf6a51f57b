import importlib.util

from django.apps import AppConfig
from django.core.signals import setting_changed

from . import conf
from .engine import process_defaults, registry


class QueuesConfig(AppConfig):
    """Queue definitions and policies (models, admin); the Django-free engine lives in taskq.queues.engine."""

    name = "taskq.queues"
    label = "taskq"
    verbose_name = "taskq"
    # The key type of its migrations, whatever DEFAULT_AUTO_FIELD a project sets (or leaves unset: models.W042).
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Register the Redis of the Django settings as this process's default (see
        # taskq.queues.engine.process_defaults):
        # a bare ``Client()`` or ``AsyncClient()`` (in a view, in ``manage.py shell``) and ``handler.enqueue(...)``
        # then write where this process's worker command and console read. The engine imports no Django, so it
        # is told here. Nothing is built, parsed or connected at start-up: a malformed REDIS_URL must not stop
        # every command with a traceback from here. The system check taskq.E103 names it (redis_url_checks), and
        # a process that runs no checks meets it, named, at its first use of Redis (conf.usable_redis_url).
        configure_default_client()
        # Tests change settings with override_settings or pytest-django's ``settings``: follow them. taskq.queues.conf,
        # imported by now, forgets its settings first: its receiver connected first.
        setting_changed.connect(_reconfigure, dispatch_uid="queues.default_client")
        from . import signals  # app registry: it imports the models, which load after apps are ready

        signals.connect()
        install_tasks_resolver()
        # Registers the system check of TASKS_REDACT and TASKS_REDACT_PATTERNS (taskq.E110): a bad value stops
        # every command that runs checks (runserver, migrate, taskworker) with the check's message, and fails
        # closed everywhere else (each masking place asks for the rules, which raise).
        # The checks of the extras (taskq.E120-E123): a configured feature whose extra is not installed. The check
        # of an asynq Redis's keys (taskq.W106-W108).
        from . import extras_checks, key_format_checks, redaction_checks, redis_url_checks  # noqa: F401


#: The settings the engine's default client is built from.
CLIENT_SETTINGS = frozenset(
    {
        "REDIS_URL",
        "TASKS_KEY_PREFIX",
        "TASKS_EAGER",
        "TASKS_EAGER_PROPAGATES",
        "TASKS_EVENT_STREAM_MAXLEN",
        "TASKS_ARCHIVE_MAX_SIZE",
        "TASKS_ARCHIVE_MAX_AGE_SECONDS",
        "TASKS_MAX_PAYLOAD_DEPTH",
    }
)


def install_tasks_resolver() -> None:
    """Let workers run Django's ``@task`` functions enqueued through ``taskq.tasks_backend.TaskqBackend``, when
    this Django has the Tasks framework (``django.tasks``, or the ``django-tasks`` backport)."""
    if importlib.util.find_spec("django.tasks") is None and importlib.util.find_spec("django_tasks") is None:
        return
    from .tasks_runner import resolve  # optional: django-tasks (or django.tasks), checked just above

    registry.resolve_with(resolve)


def configure_default_client() -> None:
    """Make the settings' Redis and key prefix this process's default, and the settings' shared client the one
    ``handler.enqueue`` uses, built at its first use."""
    taskq = conf.taskq_settings()
    process_defaults.register(taskq.redis_url, taskq.key_prefix)
    process_defaults.defer_default_client(conf.get_client)


def _reconfigure(setting: str, **kwargs: object) -> None:
    if setting in CLIENT_SETTINGS:
        configure_default_client()
