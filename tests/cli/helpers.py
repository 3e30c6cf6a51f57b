"""Helpers of the CLI tests: the CLI run in-process with captured streams, and tasks seeded in every state.

Tasks reach active, retry, archived and completed through the engine's own transition scripts (dequeue, retry,
archive, complete), so the CLI reads exactly what a real worker would have left behind.
"""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass
from typing import Any

from taskq.queues.cli import main
from taskq.queues.engine import Client
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.failures import Failure
from taskq.queues.engine.worker_store import WorkerStore


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, self.err
        return json.loads(self.out)

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def invoke(*argv: str) -> Result:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=stdout, stderr=stderr)
    return Result(code, stdout.getvalue(), stderr.getvalue())


class _Ago:
    """The wall clock ``seconds`` back: the clock of a seeded attempt's enqueue and lease (see ``Seed.active``)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def now(self) -> float:
        return time.time() - self.seconds


def _started(ran: float) -> float:
    """When an attempt that ran ``ran`` seconds up to now started (0: unknown, as the scripts take it)."""
    return time.time() - ran if ran else 0.0


class Seed:
    """Puts tasks into each state the way the engine's scripts do."""

    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url
        self.client = Client(redis_url)
        self.broker = Broker(redis_url)
        self.ops = self.broker.transitions

    def pending(
        self,
        task_type: str = "email:deliver",
        payload: Any = None,
        queue: str = "default",
        client: Client | None = None,
        **options: Any,
    ) -> str:
        payload = {"to": "ada@example.com"} if payload is None else payload
        return (client or self.client).enqueue(task_type, payload, queue=queue, **options).id

    def scheduled(self, queue: str = "default", delay: float = 600, **options: Any) -> str:
        return self.pending(queue=queue, process_in=delay, **options)

    def active(self, queue: str = "default", ran: float = 0.0, **options: Any) -> tuple[str, str]:
        """A task leased to a (pretend) worker; the queue must hold no other pending task. With ``ran``, it was
        enqueued and leased that many seconds ago, so an attempt acknowledged now with ``_started(ran)`` ran that
        long and its times read in order (created, dequeued, started, ended)."""
        client = Client(self.redis_url, clock=_Ago(ran)) if ran else self.client
        try:
            task_id = self.pending(queue=queue, client=client, **options)
            leased = client.broker.run(client.broker.transitions.dequeue(queue, 1, 60, "test-worker", "tok-"))
        finally:
            if client is not self.client:
                client.close()
        assert [t.id for t in leased] == [task_id]
        return task_id, leased[0].token

    def retry(self, queue: str = "default", error: str = "SMTP 451: try later", **attempt: Any) -> str:
        """A task whose attempt failed into retry (due in ten minutes); ``attempt``: see ``_failed``."""
        return self._failed(
            queue,
            lambda task_id, token, **end: self.ops.retry(queue, task_id, token, time.time() + 600, error, **end),
            **attempt,
        )

    def archived(self, queue: str = "default", error: str = "bounced", **attempt: Any) -> str:
        """A task whose attempt failed into the archive; ``attempt``: see ``_failed``."""
        return self._failed(
            queue, lambda task_id, token, **end: self.ops.archive(queue, task_id, token, error, **end), **attempt
        )

    def _failed(
        self, queue: str, transition: Any, failure: Failure | None = None, ran: float = 0.0, **options: Any
    ) -> str:
        """Lease a task enqueued with ``options`` and end its attempt with ``transition``, as a worker does:
        ``failure`` is what the handler raised, as the worker hands it on (traceback and error group); ``ran``, how
        many seconds ago the attempt's handler started, as the worker reports it (0: unknown)."""
        task_id, token = self.active(queue, ran, **options)
        self.broker.run(transition(task_id, token, worker="test-worker", failure=failure, started=_started(ran)))
        return task_id

    def completed(
        self, queue: str = "default", result: bytes = b'{"sent":true}', ran: float = 0.0, **options: Any
    ) -> str:
        task_id, token = self.active(queue, ran, retention=600, **options)
        self.broker.run(self.ops.write_result(queue, task_id, token, "result", result))
        self.broker.run(self.ops.complete(queue, [(task_id, token, 600.0)], "test-worker", [_started(ran)]))
        return task_id

    def aggregating(self, queue: str = "default", group: str = "g") -> str:
        return self.client.enqueue("report:part", {"n": 1}, queue=queue, group=group).id

    def waiting(self, queue: str = "default") -> str:
        """A task waiting for another of its queue, which is pending."""
        return self.client.enqueue("report:build", {"n": 2}, queue=queue, after=[self.pending(queue=queue)]).id

    def in_state(self, state: str, queue: str = "default") -> str:
        """One task of ``queue`` put in ``state`` (any of the eight) by the method of that name; returns its id."""
        made = getattr(self, state)(queue=queue)
        return made[0] if state == "active" else made

    def server(self, server_id: str = "host-1:42", running: dict[str, dict[str, Any]] | None = None) -> None:
        info = {
            "id": server_id,
            "host": "host-1",
            "pid": 42,
            "started": int(time.time() * 1000) - 90_000,
            "status": "active",
            "queues": {"default": 3, "critical": 6},
            "strict": False,
            "concurrency": 8,
        }
        WorkerStore(self.broker).write_server(info, running or {}, ttl=60)

    def acknowledge(self, server_id: str, action: str) -> None:
        WorkerStore(self.broker).acknowledge(server_id, action)

    def ended_server(self, server_id: str, tasks: list[tuple[str, str, str]]) -> None:
        """The record a server leaves at a graceful exit (SIGTERM), holding ``tasks``: (queue, id, outcome)."""
        now = int(time.time() * 1000)
        server = {"id": server_id, "host": "host-1", "pid": 7, "started": now - 90_000, "status": "stopped",
                  "how": "graceful", "reason": "SIGTERM or SIGINT", "ended": now, "queues": {"default": 1}}  # fmt: skip
        held = [{"queue": q, "id": i, "type": "email:deliver", "outcome": o, "at": now + n} for n, (q, i, o) in
                enumerate(tasks)]  # fmt: skip
        WorkerStore(self.broker).clear_server(server_id, {"server": server, "tasks": held}, keep=3600)

    def close(self) -> None:
        self.client.close()
        self.broker.close()
