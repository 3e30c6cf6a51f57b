from django.apps import AppConfig


class WorkerConfig(AppConfig):
    """Makes the worker's management commands (taskworker, taskscheduler) available to manage.py."""

    name = "taskq.worker"
    label = "taskq_worker"
    verbose_name = "Worker"
