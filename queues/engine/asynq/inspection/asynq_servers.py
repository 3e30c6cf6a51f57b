"""asynq's servers: the servers whose heartbeat is current (asynq's ``ServerInfo``) with the tasks their workers run
(``WorkerInfo``), as taskq's ``ServerInfo``, read as asynq's ``Inspector.Servers`` reads them; and the Redis
server's own INFO.

asynq keeps no record of a server that ended and takes no quiet or stop through Redis (its servers stop on a
signal): those read as none, or are refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ... import validation as check
from ...errors import ServerNotFoundError
from ...inspection.server_ops import API_SERVED_WINDOW, ServerOps
from ...quoting import shown
from ...sans_io import Command
from ...server_records import Acknowledgement, ServerInfo, ServerRecord
from ..keys import ALL_SERVERS, ALL_WORKERS
from ..wire import Timestamp, WireError, WireServer, WireWorker
from .reads_core import refusing


def _ms(when: Timestamp | None) -> int | None:
    moment = when.datetime() if when is not None else None
    return None if moment is None else int(moment.timestamp() * 1000)


def worker_doc(worker: WireWorker) -> dict[str, Any]:
    """A running task as a taskq server's heartbeat lists it (times in epoch ms; no deadline: None)."""
    return {
        "id": worker.task_id,
        "type": worker.task_type,
        "queue": worker.queue,
        "started": _ms(worker.start_time),
        "deadline": _ms(worker.deadline),
    }


def server_doc(server: WireServer, workers: list[WireWorker]) -> ServerInfo:
    """asynq's ServerInfo as taskq's: its id is asynq's server id; asynq records no heartbeat time."""
    return ServerInfo(
        id=server.server_id,
        host=server.host,
        pid=server.pid,
        started_at=server.start_time.datetime() if server.start_time is not None else None,
        status=server.status,
        queues=dict(server.queues),
        strict=server.strict_priority,
        concurrency=server.concurrency,
        active=sorted((worker_doc(w) for w in workers), key=lambda w: (w["started"] or 0, w["id"])),
    )


def _decoded(kind: type[WireServer] | type[WireWorker], raws: Iterable[bytes | None]) -> list[Any]:
    """The messages of ``raws`` that decode; the others are skipped, as asynq skips bad data."""
    out = []
    for raw in raws:
        try:
            if raw is not None:
                out.append(kind.decode(raw))
        except WireError:
            continue
    return out


class AsynqServerOps(ServerOps):
    """Who serves asynq's queues: ``ServerOps``' reads over asynq's server and worker records."""

    def servers(self) -> list[ServerInfo]:
        """Servers whose heartbeat is current (their expiry in ``asynq:servers`` not passed), each with the tasks
        its workers run (from the workers records still current), by id.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        now = int(self.core.broker.clock.now())
        server_keys, worker_keys = self.core.batch(
            "servers",
            [
                Command("zrangebyscore", (ALL_SERVERS, now, "+inf")),
                Command("zrangebyscore", (ALL_WORKERS, now, "+inf")),
            ],
        )
        replies = self.core.batch(
            "servers",
            [Command("get", (key,)) for key in server_keys] + [Command("hvals", (key,)) for key in worker_keys],
        )
        servers = _decoded(WireServer, replies[: len(server_keys)])
        workers = _decoded(WireWorker, (raw for values in replies[len(server_keys) :] for raw in values))
        return sorted(
            (server_doc(s, [w for w in workers if w.server_id == s.server_id]) for s in servers), key=lambda s: s.id
        )

    def ended_servers(self, limit: int = 50) -> list[ServerRecord]:
        """None: asynq keeps no record of a server that ended.

        Raises:
            nothing: nothing is read.
        """
        return []

    def ended_server(self, server_id: str) -> ServerRecord:
        """There is none: asynq keeps no record of a server that ended.

        Raises:
            ValidationError: ``server_id`` is not a server id.
            ServerNotFoundError: always (no record is kept).
        """
        check.server_id(server_id, "inspector.ended_server")
        raise ServerNotFoundError(
            f"no record of server {shown(server_id)}: asynq keeps none of servers that ended",
            op="inspector.ended_server",
        )

    def acknowledgement(self, server_id: str) -> Acknowledgement | None:
        """None: asynq servers acknowledge nothing through Redis.

        Raises:
            ValidationError: the id is no server id.
        """
        check.server_id(server_id, "inspector.acknowledgement")
        return None

    def api_served_queues(self, within: float = API_SERVED_WINDOW) -> set[str]:
        """None: taskq's HTTP API does not serve asynq's queues.

        Raises:
            nothing: nothing is read.
        """
        return set()


refusing(
    AsynqServerOps,
    ["control_server", "control_servers", "wait_for_acknowledgement"],
    "server controls (asynq servers stop on a signal, not through Redis)",
)
