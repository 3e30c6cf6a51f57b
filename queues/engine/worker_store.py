"""What a worker process reads and writes in Redis besides the transition scripts: the leases that expired
(for the recoverer), the server and worker registry (heartbeat), the acknowledgement of an operator's quiet or
stop, the records of servers that ended (see ``server_records``), and the pub/sub channels that carry
cancellations, operators' requests and wake-ups. Only the engine talks to Redis; the worker goes through this class.

It deliberately shares its name with ``queues/engine/asynq/worker_store.py``, which does the same over Go asynq's
keys.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .broker import BrokerStore, Subscription
from .clock import to_ms
from .sans_io import Command, command
from .server_records import CONTROL_TTL, LOST, LOST_REASON, SERVER_FIELD, task_field
from .transitions import Leased

#: Most lost servers one round of the recoverer records.
LOST_BATCH = 100


class WorkerStore(BrokerStore):
    area = "worker"

    def known_queues(self) -> set[str]:
        """Every queue name Redis knows (producers add a queue with its first task, workers the queues they serve)."""
        return {name.decode() for name in self._send("known_queues", "smembers", self.keys.queues)}

    def has_pending(self, queue: str) -> bool:
        return bool(self._send("has_pending", "exists", self.keys.queue(queue).pending))

    def register_queues(self, queues: list[str]) -> None:
        """Make the served queues visible to the console even before their first task."""
        if queues:
            self._send("register_queues", "sadd", self.keys.queues, *queues)

    def expired_leases(self, queue: str, expired_before: float, limit: int = 100) -> list[Leased]:
        """Active tasks whose lease ran out before ``expired_before`` (epoch seconds), with their current token."""
        q = self.keys.queue(queue)
        ids = self._send("expired_leases", "zrangebyscore", q.lease, "-inf", to_ms(expired_before), start=0, num=limit)
        fields = ("type", "msg", "payload", "retried", "lease")
        rows = self._batch(
            "expired_leases", [command("hmget", q.task(task_id.decode()), *fields) for task_id in ids], atomic=False
        )
        return [
            Leased(task_id.decode(), f[0] or b"", f[1] or b"", f[2] or b"", int(f[3] or 0), (f[4] or b"").decode())
            for task_id, f in zip(ids, rows, strict=True)
        ]

    def write_server(
        self, server: dict[str, Any], running: dict[str, dict[str, Any]], ttl: float, keep: float = 0.0
    ) -> None:
        """Publish this server and what it runs. The registry entry expires unless the next heartbeat renews it;
        the server and its running tasks are kept ``keep`` seconds longer, so that whoever finds the server lost
        can record what it was and what it held (``record_lost_servers``)."""
        server_id = server["id"]
        ttl_ms = to_ms(ttl)
        kept_ms = ttl_ms + to_ms(keep)
        workers = self.keys.workers(server_id)
        commands = [
            command("set", self.keys.server(server_id), json.dumps(server), px=kept_ms),
            command("zadd", self.keys.servers, {server_id: to_ms(self.broker.clock.now()) + ttl_ms}),
            command("delete", workers),
        ]
        if running:
            commands.append(command("hset", workers, mapping={k: json.dumps(v) for k, v in running.items()}))
            commands.append(command("pexpire", workers, kept_ms))
        # Forget servers that stopped heartbeating long ago (crashed without deregistering).
        commands.append(
            command("zremrangebyscore", self.keys.servers, "-inf", to_ms(self.broker.clock.now()) - 3600_000)
        )
        self._batch("write_server", commands)

    def control(self, server_id: str) -> str | None:
        """What an operator asked of this server (``Inspector.control_server``), if anything."""
        value = self._send("control", "get", self.keys.control(server_id))
        return value.decode() if value else None

    def acknowledge(self, server_id: str, action: str) -> None:
        """Tell whoever asked (``Inspector.wait_for_acknowledgement``) that this server acted on ``action``."""
        doc = json.dumps({"action": action, "at": to_ms(self.broker.clock.now())})
        self._send("acknowledge", "set", self.keys.control_ack(server_id), doc, ex=CONTROL_TTL)

    def clear_server(self, server_id: str, record: dict[str, Any] | None = None, keep: float = 0.0) -> None:
        """Deregister this server; with ``record`` (``server`` and ``tasks``, see ``server_records``), in the same
        transaction, keep the record of how it ended for ``keep`` seconds. The acknowledgement stays: a stop's
        ack may be read after the server has gone."""
        commands = []
        if record is not None:
            # A graceful exit is the last word, over a "lost" of a server that only lagged.
            commands.append(command("delete", self.keys.ended_server(server_id)))
            commands += self._record(record["server"], record["tasks"], keep, only_new=False)
        commands.append(
            command("delete", self.keys.server(server_id), self.keys.workers(server_id), self.keys.control(server_id))
        )
        commands.append(command("zrem", self.keys.servers, server_id))
        self._batch("clear_server", commands)

    def record_lost_servers(self, keep: float) -> list[str]:
        """Record the servers whose heartbeat ran out without a graceful exit (it would have deregistered them):
        their last heartbeat, and the tasks they were running, which the recoverer will retry once their leases
        run out. A server recorded already is left alone, so any number of workers may run this at once. Returns
        the ids recorded now."""
        op = "record_lost_servers"
        now_ms = to_ms(self.broker.clock.now())
        expired = self._send(
            op, "zrangebyscore", self.keys.servers, "-inf", now_ms - 1, start=0, num=LOST_BATCH, withscores=True
        )
        if not expired:
            return []
        reads = []
        for raw_id, _ in expired:
            server_id = raw_id.decode()
            reads += [
                command("exists", self.keys.ended_server(server_id)),
                command("get", self.keys.server(server_id)),
                command("hgetall", self.keys.workers(server_id)),
            ]
        replies = self._batch(op, reads, atomic=False)
        recorded = []
        writes = []
        for index, (raw_id, score) in enumerate(expired):
            known, raw, running = replies[3 * index : 3 * index + 3]
            if known:
                continue
            server_id = raw_id.decode()
            ended = int(score)
            server = dict(json.loads(raw)) if raw else {"id": server_id}
            server.update(status=LOST, how=LOST, reason=LOST_REASON, ended=ended)
            tasks = []
            for value in running.values():
                task = json.loads(value)
                tasks.append({**task, "outcome": "running", "at": ended})
            writes += self._record(server, tasks, keep, only_new=True)
            writes.append(command("delete", self.keys.server(server_id), self.keys.workers(server_id)))
            recorded.append(server_id)
        self._batch(op, writes)
        return recorded

    def note_recovered(self, server_id: str, task: dict[str, Any], keep: float) -> bool:
        """Add a task recovered after its lease to the record of the server that held it, if that server has one
        (a lease the HTTP API handed out, for one, has no server). Returns whether it was added."""
        key = self.keys.ended_server(server_id)
        if not self._send("note_recovered", "exists", key):
            return False
        doc = {k: task.get(k) for k in ("type", "outcome", "detail", "at")}
        self._batch(
            "note_recovered",
            [
                command("hset", key, task_field(task["queue"], task["id"]), json.dumps(doc)),
                command("pexpire", key, to_ms(keep)),
            ],
        )
        return True

    def _record(
        self, server: dict[str, Any], tasks: list[dict[str, Any]], keep: float, only_new: bool
    ) -> list[Command]:
        """The writes of one server's record: ``only_new`` leaves a record written first (by another recoverer,
        or a task recovered meanwhile) as it is."""
        key = self.keys.ended_server(server["id"])
        write = "hsetnx" if only_new else "hset"
        commands = [command(write, key, SERVER_FIELD, json.dumps(server))]
        for task in tasks:
            doc = {k: task.get(k) for k in ("type", "outcome", "detail", "at")}
            commands.append(command(write, key, task_field(task["queue"], task["id"]), json.dumps(doc)))
        return [
            *commands,
            command("pexpire", key, to_ms(keep)),
            command("zadd", self.keys.ended_servers, {server["id"]: server["ended"]}),
            command("zremrangebyscore", self.keys.ended_servers, "-inf", to_ms(self.broker.clock.now() - keep)),
        ]

    def resubscribe(self, pubsub: Subscription, added: list[str], removed: list[str]) -> None:
        """Follow a change of the served queues: wake-ups of the added queues, none of the removed ones."""
        if added:
            pubsub.subscribe(*[self.keys.queue(q).pending for q in added])
        if removed:
            pubsub.unsubscribe(*[self.keys.queue(q).pending for q in removed])

    def subscribe(
        self, queues: list[str], patterns: Sequence[str] = (), server_id: str = ""
    ) -> tuple[Subscription, str, str]:
        """A pub/sub on the cancel channel, on ``server_id``'s control channel (an operator's quiet or stop), on
        each queue's pending-list channel (see ``lua/_lib.lua``) and on the pending-list channels of every queue a
        glob pattern matches (``tq:{tenant-*}:pending``: braces are plain characters to Redis's glob), so a queue
        created later wakes the worker too. Returns the pub/sub and the names of the cancel and control channels
        (the latter empty without ``server_id``). Subscription confirmations are read as messages of their own
        type: a reader acts on ``message`` and ``pmessage`` only."""
        db = self.database()
        cancel = self.keys.cancel_channel(db)
        control = self.keys.control_channel(server_id, db) if server_id else ""
        channels = [cancel, *([control] if control else []), *[self.keys.queue(q).pending for q in queues]]
        pubsub = self.broker.subscription(f"{self.area}.subscribe")
        pubsub.subscribe(*channels)
        if patterns:
            pubsub.psubscribe(*[self.keys.queue(p).pending for p in patterns])
        return pubsub, cancel, control

    def database(self) -> int:
        """The database number the broker's connections select (0 on a cluster): the cancel and control channels
        carry it, since Redis's pub/sub spans every database of a server."""
        return self.broker.database
