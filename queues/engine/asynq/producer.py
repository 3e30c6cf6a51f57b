"""Producers for Go asynq servers: ``AsynqClient`` writes a task exactly as asynq's Go client (v0.25-0.26) does,
so a Go ``asynq.Server`` runs it and Go's ``Inspector`` reads back every option; ``AsyncAsynqClient`` is the same
on an event loop. What is written is decided in ``enqueue_plan``; these only hold the broker and drive it.

Deliberately shares its name with ``queues/engine/producer.py``: that module plans taskq's own enqueues, this one
produces into asynq's keys.

>>> with AsynqClient("redis://127.0.0.1:6379/0") as client:
...     info = client.enqueue("email:deliver", b'{"to": "ada@example.com"}', queue="critical", max_retry=5)
"""

from __future__ import annotations

from typing import Any, Generic, Self, TypeVar, Unpack, cast

from .. import process_defaults, producer_tracing, tracing
from ..broker import AsyncBroker, Broker
from ..broker.core import BrokerCore
from ..errors import ValidationError
from ..message import TaskInfo
from ..sans_io import Flow
from ..validation import MAX_PAYLOAD_BYTES, PayloadLimits
from .enqueue_plan import OP, AsynqEnqueueOptions, enqueue_flow, plan

B = TypeVar("B", bound=BrokerCore)


class _Producer(Generic[B]):
    """What both faces share: where they connect, the payload limits, the queues listed, the plan of an enqueue."""

    def __init__(
        self,
        redis_url: str | None = None,
        *,
        broker: B | None = None,
        max_payload: int = MAX_PAYLOAD_BYTES,
        max_payload_depth: int = PayloadLimits.max_depth,
    ) -> None:
        if redis_url is not None and broker is not None:
            raise ValidationError("give redis_url or broker, not both", op="connect")
        self._owns_broker = broker is None
        self.broker: B = broker if broker is not None else self._connect(redis_url or process_defaults.redis_url())
        self.payload_limits = PayloadLimits(max_payload, max_payload_depth)
        self._listed: set[str] = set()  # queues this client has added to asynq:queues

    def _connect(self, redis_url: str) -> B:
        raise NotImplementedError

    def _flow(self, task_type: str, payload: Any, options: AsynqEnqueueOptions) -> Flow:
        """The enqueue, validated (ValidationError before any I/O), as a flow for the broker to drive."""
        placement = plan(self.broker.clock.now(), task_type, payload, options, self.payload_limits)
        return enqueue_flow(placement, self._listed)


def _carrying(options: AsynqEnqueueOptions) -> AsynqEnqueueOptions:
    """The options with the current trace context in the task's headers (asynq's message has a headers field,
    which Go's ``Task.Headers()`` reads back)."""
    return cast(AsynqEnqueueOptions, producer_tracing.carrying(options, producer_tracing.carried()))


class AsynqClient(_Producer[Broker]):
    """Enqueues tasks into asynq's keys for Go asynq servers (and taskq's worker in asynq mode). Thread-safe.

    >>> client = AsynqClient()  # or AsynqClient("redis://..."), or AsynqClient(broker=broker)
    >>> info = client.enqueue("image:resize", b"...", queue="media", unique_ttl=3600, process_in=60)

    Given no ``redis_url`` it connects where taskq's ``Client`` does (``process_defaults``). Given a ``broker``, it
    uses that one (its clock, its connections) and leaves it open on ``close``, which closes only what the client
    opened. ``max_payload`` and ``max_payload_depth`` bound a payload as taskq's ``Client`` does.
    """

    def _connect(self, redis_url: str) -> Broker:
        return Broker(redis_url)

    def enqueue(self, task_type: str, payload: Any = b"", **options: Unpack[AsynqEnqueueOptions]) -> TaskInfo:
        """Enqueue one task as asynq's ``client.Enqueue`` does (options: ``AsynqEnqueueOptions``; the rules:
        ``enqueue_plan``); returns its TaskInfo. Raises ValidationError naming a bad option, DuplicateTaskError
        while a unique twin holds the lock, TaskIdConflictError when the queue has a task of that id, or
        RedisUnavailableError; on any of them the task was not written. Inside a recording span the enqueue is a
        ``send`` span whose context the task carries in its headers, as with taskq's ``Client``."""
        if tracing.recording():
            with producer_tracing.Sending(producer_tracing.queue_of(options), task_type) as span:
                flow = self._flow(task_type, payload, _carrying(options))
                return producer_tracing.sent(span, cast(TaskInfo, self.broker.drive(OP, flow, replicated=True)))
        return cast(TaskInfo, self.broker.drive(OP, self._flow(task_type, payload, options), replicated=True))

    def close(self) -> None:
        if self._owns_broker:
            self.broker.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncAsynqClient(_Producer[AsyncBroker]):
    """``await client.enqueue(...)``: ``AsynqClient`` on an ``AsyncBroker``, with the same arguments, rules,
    results and errors. ``async with`` closes what it opened."""

    def _connect(self, redis_url: str) -> AsyncBroker:
        broker = AsyncBroker(redis_url)
        if broker.cluster and broker.topology.wait_replicas:  # WAIT after a write: see ``aio``
            raise ValidationError(
                "wait_replicas on a Redis Cluster URL works with the blocking AsynqClient", op="connect"
            )
        return broker

    async def enqueue(self, task_type: str, payload: Any = b"", **options: Unpack[AsynqEnqueueOptions]) -> TaskInfo:
        """As ``AsynqClient.enqueue``, awaited."""
        if tracing.recording():
            with producer_tracing.Sending(producer_tracing.queue_of(options), task_type) as span:
                flow = self._flow(task_type, payload, _carrying(options))
                return producer_tracing.sent(span, cast(TaskInfo, await self.broker.drive(OP, flow, replicated=True)))
        flow = self._flow(task_type, payload, options)
        return cast(TaskInfo, await self.broker.drive(OP, flow, replicated=True))

    async def close(self) -> None:
        if self._owns_broker:
            await self.broker.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
