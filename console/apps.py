from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The operations console: dashboard pages and (later) WebSocket consumers."""

    name = "taskq.console"
    label = "taskq_console"
    verbose_name = "Console"
