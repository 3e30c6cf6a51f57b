"""taskq: a Redis task queue with asynq's semantics, a separate worker process and a Django operations console.

    from taskq import Client, handler

    @handler("email:deliver", queue="critical", max_retry=5)
    def deliver(task):
        send(task.json()["to"])

    Client().enqueue("email:deliver", {"to": "ada@example.com"})

This package is the one import name the distribution claims. Its Django apps are ``taskq.queues`` (the engine,
models, admin, API and CLI), ``taskq.worker``, ``taskq.console`` and ``taskq.metrics``; their labels start with
``taskq``. In a checkout they are the repository's top-level folders, which the wheel (and an editable install)
links under this package (taskq/queues -> ../queues...): each is importable by its ``taskq.`` name only.

What is imported here is the engine's public API (``taskq.queues.engine``), which imports no Django: any Python
program can enqueue. Django's Tasks framework backend is ``taskq.tasks_backend.TaskqBackend``.
"""

from taskq.queues.engine import *  # noqa: F403 - the engine's __all__ is the package's public API
from taskq.queues.engine import __all__ as __all__
