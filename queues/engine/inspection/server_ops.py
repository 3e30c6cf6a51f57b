"""Servers: the worker servers whose heartbeat is current (``ServerInfo``) and those that ended (``ServerRecord``),
an operator's quiet or stop of one and its acknowledgement, the queues the HTTP API serves to consumers, and the
Redis server's own INFO. The records themselves are in ``server_records``, beside the worker's writer of them.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .. import validation as check
from ..clock import from_ms, to_ms
from ..errors import RedisCommandError, ServerNotFoundError, ValidationError
from ..quoting import shown
from ..sans_io import Command
from ..server_records import (
    CONTROL_TTL,
    SERVER_ACTIONS,
    Acknowledgement,
    ServerInfo,
    ServerRecord,
    acked,
    server_info,
    server_record,
)
from .inspector_core import InspectorCore

#: The key ``redis_info`` sets, with the server's reply, when INFO is refused.
INFO_REFUSED = "info_refused"
#: Seconds since the HTTP API last consumed from a queue for which it still counts as served (``serving``).
API_SERVED_WINDOW = 300.0
#: How often ``wait_for_acknowledgement`` looks: the server acts within milliseconds of the request.
ACK_POLL = 0.05


class ServerOps:
    """Who serves the queues, and the requests an operator sends a worker server."""

    def __init__(self, core: InspectorCore) -> None:
        self.core = core
        self.keys = core.keys

    def servers(self) -> list[ServerInfo]:
        """Servers whose heartbeat is current, with the tasks each is running.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        ids = self._running_server_ids()
        replies = self.core.batch(
            "servers",
            [
                command
                for server_id in ids
                for command in (
                    Command("get", (self.keys.server(server_id),)),
                    Command("hgetall", (self.keys.workers(server_id),)),
                )
            ],
        )
        servers = []
        for index in range(0, len(replies), 2):
            raw, workers = replies[index], replies[index + 1]
            if raw:
                active = sorted((json.loads(v) for v in workers.values()), key=lambda w: w.get("started", 0))
                servers.append(server_info(json.loads(raw), active))
        return sorted(servers, key=lambda s: s.id)

    def _running_server_ids(self) -> list[str]:
        now = to_ms(self.core.broker.clock.now())
        return [i.decode() for i in self.core.send("servers", "zrangebyscore", self.keys.servers, now, "+inf")]

    def server(self, server_id: str) -> ServerInfo:
        """One server whose heartbeat is current.

        Raises:
            ValidationError: ``server_id`` is not a string of at most 320 characters without control characters.
            ServerNotFoundError: no server of that id has a current heartbeat.
            RedisUnavailableError: Redis cannot be reached.
        """
        check.server_id(server_id, "inspector.server")
        for server in self.servers():
            if server.id == server_id:
                return server
        raise ServerNotFoundError(f"no running server {shown(server_id)}", op="inspector.server")

    def ended_servers(self, limit: int = 50) -> list[ServerRecord]:
        """The records of servers that stopped or were lost within ``TASKS_SERVER_RECORD_SECONDS``, the latest
        first (without those running again: a server that only lagged may come back after it was found lost).

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        ids = [i.decode() for i in self.core.send("ended_servers", "zrevrange", self.keys.ended_servers, 0, limit)]
        running = set(self._running_server_ids()) if ids else set()
        ids = [i for i in ids if i not in running]
        replies = self.core.each(
            "ended_servers", "hgetall", [(self.keys.ended_server(server_id),) for server_id in ids]
        )
        return [record for fields in replies if (record := server_record(fields)) is not None]

    def ended_server(self, server_id: str) -> ServerRecord:
        """The record of a server that stopped or was lost (``ended_servers``).

        Raises:
            ValidationError: ``server_id`` is not a string of at most 320 characters without control characters.
            ServerNotFoundError: no record of that server (it never ran, runs now, or ended too long ago).
            RedisUnavailableError: Redis cannot be reached.
        """
        check.server_id(server_id, "inspector.ended_server")
        record = server_record(self.core.send("ended_server", "hgetall", self.keys.ended_server(server_id)))
        if record is None:
            raise ServerNotFoundError(
                f"no server {shown(server_id)} is running or ended in the last hour", op="inspector.ended_server"
            )
        return record

    def control_server(self, server_id: str, action: str) -> None:
        """Ask a running server to ``quiet`` (stop fetching, requeue what it fetched ahead, finish what it runs) or
        ``stop`` (shut down gracefully). The request is published on the server's control channel, which it acts on
        at once, and stored for its next heartbeat (in case it was not listening); a quiet server stays quiet until
        it stops. A stop asked of a process under a ``--processes`` supervisor ends that process, which the
        supervisor starts again under a new id. ``wait_for_acknowledgement`` tells when the server acted.

        Raises:
            ValidationError: the action is not one of SERVER_ACTIONS, or the id is no server id.
            ServerNotFoundError: no server of that id has a current heartbeat.
            RedisUnavailableError: Redis cannot be reached.
        """
        _check_action(action, "inspector.control_server")
        self.server(server_id)
        self._ask(server_id, action)

    def control_servers(self, server_ids: list[str], action: str) -> list[str]:
        """Ask each of ``server_ids`` that is running now to ``quiet`` or ``stop``, as ``control_server`` does (the
        console's Quiet all and Stop all): the servers are read once, whatever their number. Those no
        longer running are left out, and so are those the action would not change (a quiet asked of a server that
        is not active, a stop of one already stopping). Returns the ids asked, in the order given.

        Raises:
            ValidationError: the action is not one of SERVER_ACTIONS, or an id is no server id.
            RedisUnavailableError: Redis cannot be reached.
        """
        _check_action(action, "inspector.control_servers")
        for server_id in server_ids:
            check.server_id(server_id, "inspector.control_servers")
        done = {"quiet": ("quiet", "stopping"), "stop": ("stopping",)}[action]
        running = {s.id for s in self.servers() if s.status not in done}
        asked = [server_id for server_id in dict.fromkeys(server_ids) if server_id in running]
        for server_id in asked:
            self._ask(server_id, action)
        return asked

    def _ask(self, server_id: str, action: str) -> None:
        key = self.keys.control(server_id)
        if action == "quiet" and self.core.send("control_server", "get", key) == b"stop":
            return  # a stop already asked wins over a later quiet
        self.core.send("control_server", "set", key, action, ex=CONTROL_TTL)
        channel = self.keys.control_channel(server_id, self.core.database)
        self.core.send("control_server", "publish", channel, action)

    def acknowledgement(self, server_id: str) -> Acknowledgement | None:
        """The last request the server acted on, if any (kept an hour, also after the server has gone).

        Raises:
            ValidationError: the id is no server id.
            RedisUnavailableError: Redis cannot be reached.
        """
        check.server_id(server_id, "inspector.acknowledgement")
        raw = self.core.send("acknowledgement", "get", self.keys.control_ack(server_id))
        if not raw:
            return None
        try:
            doc = json.loads(raw)
            return Acknowledgement(str(doc["action"]), from_ms(doc.get("at")))
        except (ValueError, TypeError, KeyError):
            return None  # written by another version: as good as none

    def wait_for_acknowledgement(self, server_id: str, action: str, timeout: float) -> Acknowledgement | None:
        """Wait up to ``timeout`` seconds (real time) for the server to act on ``action`` (a stop counts for a
        quiet: it quiets first). Returns its acknowledgement, or None when none came in time.

        Raises:
            ValidationError: the id is no server id.
            RedisUnavailableError: Redis cannot be reached.
        """
        deadline = time.monotonic() + timeout
        while True:
            ack = self.acknowledgement(server_id)
            if ack is not None and acked(action, ack.action):
                return ack
            if time.monotonic() >= deadline:
                return None
            time.sleep(ACK_POLL)

    def api_served_queues(self, within: float = API_SERVED_WINDOW) -> set[str]:
        """The queues the HTTP API's consume endpoint polled within the last ``within`` seconds: served, though
        no worker reads them. One HGETALL of a small hash.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        polled = self.core.send("api_served_queues", "hgetall", self.keys.api_consumed)
        since = to_ms(self.core.broker.clock.now() - within)
        return {queue.decode() for queue, ms in polled.items() if ms.isdigit() and int(ms) >= since}

    def redis_info(self) -> dict[str, Any]:
        """Redis's INFO (version, uptime, memory, clients, persistence…) for the console, the CLI and /metrics.

        Where the server refuses INFO (renamed or disabled: managed Redis often does), what it still answers:
        ``info_refused`` (``INFO_REFUSED``) holds the server's reply, and ``dbsize`` the number of keys when DBSIZE
        is allowed. Callers show that instead of failing.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        try:
            return dict(self.core.send("redis_info", "info"))
        except RedisCommandError as exc:
            info: dict[str, Any] = {INFO_REFUSED: exc.message}
        try:
            info["dbsize"] = int(self.core.send("redis_info", "dbsize"))
        except RedisCommandError:
            pass  # refused too: the refusal alone is what there is to show
        return info


def _check_action(action: str, op: str) -> None:
    if action not in SERVER_ACTIONS:
        raise ValidationError(f"action must be one of {', '.join(SERVER_ACTIONS)}, not {shown(action)}", op=op)
