from django.apps import AppConfig


class HistoryConfig(AppConfig):
    """Daily rollups of the task history (``TaskDailyRollup``), the ``task_analytics`` command and the
    ``analytics:daily`` Spark task."""

    name = "taskq.queues.history"
    label = "taskq_history"
    verbose_name = "Task history"
    default_auto_field = "django.db.models.BigAutoField"
