"""The control CLI, ``python manage.py tasks``, modelled on asynq's: stats, queue, task and server commands.

One module per command group (``queue_commands``, ``task_commands``, ``server_commands``, ``stats_commands``),
argument parsing in ``parser``, rendering in ``output``, the entry point and error mapping in ``main``.
"""

from .main import main

__all__ = ["main"]
