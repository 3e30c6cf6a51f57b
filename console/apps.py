from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The operations console: dashboard pages and (later) WebSocket consumers."""

    name = "taskq.console"
    label = "taskq_console"
    verbose_name = "Console"
    # The key type of its migrations, whatever DEFAULT_AUTO_FIELD a project sets (or leaves unset: models.W042).
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # registers checks: the trace viewer's URL template (taskq.E130), the live socket's route (taskq.W131)
        from . import trace_links  # noqa: F401
        from .live import socket_check  # noqa: F401
