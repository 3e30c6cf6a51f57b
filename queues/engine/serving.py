"""Which live servers read which queue: the console's warning about a queue whose pending tasks nobody will fetch
(dashboard, queue page, ``tasks stats``) and the ``taskq_queue_servers`` gauge of /metrics.

A server reads a queue while its heartbeat is current (``Inspector.servers``), it is active (a quiet or stopping
server fetches nothing new) and it serves the queue by name or by a ``--queues`` pattern (``ServerInfo.reads``).
A queue the HTTP API's consume endpoint polled within ``API_SERVED_WINDOW`` is served too
(``Inspector.api_served_queues``): its consumers are programs in other languages, and pointing a Python worker
at it would take their tasks and fail them for want of a handler.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from .inspector import API_SERVED_WINDOW, QueueInfo
from .server_records import ServerInfo

__all__ = ["API_SERVED_WINDOW", "readers", "unserved"]


def readers(queues: Iterable[str], servers: Sequence[ServerInfo]) -> dict[str, int]:
    """Queue -> how many live servers read it (0 for a queue none reads)."""
    return {queue: sum(1 for server in servers if server.reads(queue)) for queue in queues}


def unserved(
    infos: Iterable[QueueInfo], servers: Sequence[ServerInfo], api_served: Collection[str] = ()
) -> list[QueueInfo]:
    """The queues that have pending tasks and no live server reading them, in the order given, leaving out those
    in ``api_served`` (``Inspector.api_served_queues``). A paused queue is one too: resuming it would not get its
    tasks run either."""
    return [
        info
        for info in infos
        if info.pending and info.queue not in api_served and not any(server.reads(info.queue) for server in servers)
    ]
