from django.apps import AppConfig


class WorkerConfig(AppConfig):
    """Makes the worker's management commands (taskworker, demo_traffic) available to manage.py."""

    name = "worker"
    verbose_name = "Worker"
