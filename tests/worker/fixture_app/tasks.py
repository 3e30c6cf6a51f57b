"""Handlers of an installed app, found by the worker's discovery (see test_config.py)."""

from taskq.queues.engine import Registry, handler

discovered = Registry()


@handler("fixture:discovered", registry=discovered)
def discovered_handler(task):  # pragma: no cover - only registered, never run
    pass
