"""What a worker process reads and writes in Redis besides the transition scripts: the leases that expired
(for the recoverer), the server and worker registry (heartbeat), and the pub/sub channels that carry
cancellations and wake idle workers. Only the engine talks to Redis; the worker goes through this class.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import redis

from .broker import BrokerStore
from .clock import to_ms
from .connection import database_of
from .transitions import Leased


class WorkerStore(BrokerStore):
    area = "worker"

    def known_queues(self) -> set[str]:
        """Every queue name Redis knows (producers add a queue with its first task, workers the queues they serve)."""
        return {name.decode() for name in self._call("known_queues", self.broker.conn.smembers, self.keys.queues)}

    def has_pending(self, queue: str) -> bool:
        return bool(self._call("has_pending", self.broker.conn.exists, self.keys.queue(queue).pending))

    def register_queues(self, queues: list[str]) -> None:
        """Make the served queues visible to the console even before their first task."""
        if queues:
            self._call("register_queues", self.broker.conn.sadd, self.keys.queues, *queues)

    def expired_leases(self, queue: str, expired_before: float, limit: int = 100) -> list[Leased]:
        """Active tasks whose lease ran out before ``expired_before`` (epoch seconds), with their current token."""
        q = self.keys.queue(queue)
        conn = self.broker.conn
        ids = self._call(
            "expired_leases", conn.zrangebyscore, q.lease, "-inf", to_ms(expired_before), start=0, num=limit
        )
        if not ids:
            return []
        pipe = conn.pipeline(transaction=False)
        for task_id in ids:
            pipe.hmget(q.task(task_id.decode()), "type", "msg", "payload", "retried", "lease")
        rows = self._call("expired_leases", pipe.execute)
        return [
            Leased(task_id.decode(), f[0] or b"", f[1] or b"", f[2] or b"", int(f[3] or 0), (f[4] or b"").decode())
            for task_id, f in zip(ids, rows, strict=True)
        ]

    def write_server(self, server: dict[str, Any], running: dict[str, dict[str, Any]], ttl: float) -> None:
        """Publish this server and what it runs, expiring unless the next heartbeat renews them."""
        server_id = server["id"]
        ttl_ms = to_ms(ttl)
        pipe = self.broker.conn.pipeline(transaction=True)
        pipe.set(self.keys.server(server_id), json.dumps(server), px=ttl_ms)
        pipe.zadd(self.keys.servers, {server_id: to_ms(self.broker.clock.now()) + ttl_ms})
        pipe.delete(self.keys.workers(server_id))
        if running:
            pipe.hset(self.keys.workers(server_id), mapping={k: json.dumps(v) for k, v in running.items()})
            pipe.pexpire(self.keys.workers(server_id), ttl_ms)
        # Forget servers that stopped heartbeating long ago (crashed without deregistering).
        pipe.zremrangebyscore(self.keys.servers, "-inf", to_ms(self.broker.clock.now()) - 3600_000)
        self._call("write_server", pipe.execute)

    def control(self, server_id: str) -> str | None:
        """What an operator asked of this server (``Inspector.control_server``), if anything."""
        value = self._call("control", self.broker.conn.get, self.keys.control(server_id))
        return value.decode() if value else None

    def clear_server(self, server_id: str) -> None:
        pipe = self.broker.conn.pipeline(transaction=True)
        pipe.delete(self.keys.server(server_id), self.keys.workers(server_id), self.keys.control(server_id))
        pipe.zrem(self.keys.servers, server_id)
        self._call("clear_server", pipe.execute)

    def resubscribe(self, pubsub: redis.client.PubSub, added: list[str], removed: list[str]) -> None:
        """Follow a change of the served queues: wake-ups of the added queues, none of the removed ones."""
        if added:
            self._call("subscribe", pubsub.subscribe, *[self.keys.queue(q).pending for q in added])
        if removed:
            self._call("subscribe", pubsub.unsubscribe, *[self.keys.queue(q).pending for q in removed])

    def subscribe(self, queues: list[str], patterns: Sequence[str] = ()) -> tuple[redis.client.PubSub, str]:
        """A pub/sub on the cancel channel, on each queue's pending-list channel (see ``lua/_lib.lua``) and on the
        pending-list channels of every queue a glob pattern matches (``tq:{tenant-*}:pending``: braces are plain
        characters to Redis's glob), so a queue created later wakes the worker too."""
        pubsub = self.broker.conn.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
        cancel = self.keys.cancel_channel(database_of(self.broker.conn))
        self._call("subscribe", pubsub.subscribe, cancel, *[self.keys.queue(q).pending for q in queues])
        if patterns:
            self._call("subscribe", pubsub.psubscribe, *[self.keys.queue(p).pending for p in patterns])
        return pubsub, cancel
