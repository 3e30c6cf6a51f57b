"""The one live hub of a console process, started by the first page that subscribes: ``LiveHub`` tailing the
event streams, or, where the Redis holds asynq's keys (which carry no event stream), ``PollingHub``.
"""

from __future__ import annotations

import asyncio
import weakref

from taskq.queues import conf, key_format
from taskq.queues.engine.events import AsyncEventStreams

from .hub import LiveHub, default_inspector
from .polling import PolledStreams, PollingHub

_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LiveHub] = weakref.WeakKeyDictionary()


def live_hub() -> LiveHub:
    """The hub of the running event loop (one per console process: daphne runs one loop), started on first use.

    Keyed by loop because an asyncio Redis connection belongs to the loop that opened it (tests run many loops).
    """
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        taskq = conf.taskq_settings()
        if key_format.on_asynq(taskq):
            hub = PollingHub(PolledStreams(default_inspector))
        else:
            hub = LiveHub(AsyncEventStreams(conf.usable_redis_url(taskq), prefix=taskq.key_prefix))
        _hubs[loop] = hub
        hub.start()
    return hub
