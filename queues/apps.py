from django.apps import AppConfig


class QueuesConfig(AppConfig):
    """Queue definitions and policies (models, admin); the Django-free engine lives in queues.engine."""

    name = "queues"
    verbose_name = "Queues"
