from django.apps import AppConfig


class QueuesConfig(AppConfig):
    """Queue definitions and policies (models, admin); the Django-free engine lives in queues.engine."""

    name = "queues"
    verbose_name = "Queues"

    def ready(self) -> None:
        # Register the Redis of the Django settings as this process's default (see queues.engine.process_defaults):
        # a bare ``Client()`` or ``AsyncClient()`` (in a view, in ``manage.py shell``) and ``handler.enqueue(...)``
        # then write where this process's worker command and console read. The engine imports no Django, so it
        # is told here. The connection opens lazily, so this costs nothing at start-up.
        from django.core.signals import setting_changed

        configure_default_client()
        # Tests change settings with override_settings or pytest-django's ``settings``: follow them. queues.conf,
        # imported by now, forgets its settings first: its receiver connected first.
        setting_changed.connect(_reconfigure, dispatch_uid="queues.default_client")
        from . import signals

        signals.connect()
        install_tasks_resolver()
        # Registers the system check of TASKS_REDACT and TASKS_REDACT_PATTERNS (taskq.E110): a bad value stops
        # every command that runs checks (runserver, migrate, taskworker) with the check's message, and fails
        # closed everywhere else (each masking place asks for the rules, which raise).
        from . import redaction_checks  # noqa: F401


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
    """Let workers run Django's ``@task`` functions enqueued through ``queues.tasks_backend.TaskqBackend``, when
    this Django has the Tasks framework (``django.tasks``, or the ``django-tasks`` backport)."""
    import importlib.util

    if importlib.util.find_spec("django.tasks") is None and importlib.util.find_spec("django_tasks") is None:
        return
    from .engine import registry
    from .tasks_runner import resolve

    registry.resolve_with(resolve)


def configure_default_client() -> None:
    from . import conf
    from .engine import configure_from_settings

    configure_from_settings(conf.taskq_settings())


def _reconfigure(setting: str, **kwargs: object) -> None:
    if setting in CLIENT_SETTINGS:
        configure_default_client()
