"""The framework's public names, from Django 6's ``django.tasks`` or the ``django-tasks`` backport on 5.2."""

from __future__ import annotations

try:
    from django.tasks import TaskResultStatus
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
    from django.tasks.signals import task_enqueued
except ImportError:
    from django_tasks import TaskResultStatus
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist
    from django_tasks.signals import task_enqueued

__all__ = ["InvalidTask", "TaskResultDoesNotExist", "TaskResultStatus", "task_enqueued"]
