"""The asyncio producer API: the same surface as ``Client``, for code running on an event loop, on an
``AsyncBroker`` (the road of ``client``'s docstring, awaited)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Unpack, cast

from . import composite_enqueue, handlers, process_defaults, producer, producer_tracing, tracing, workflows
from .broker import AsyncBroker, AsyncRedis, EngineOptions
from .clock import to_ms
from .coalescing import AsyncEnqueueCoalescer
from .composite_enqueue import SubmitOptions
from .errors import ValidationError
from .handlers import Registry
from .layout import check_flow
from .message import TaskInfo
from .policies import PolicyCache, PolicySet
from .producer_flows import enqueue_flow, wait_flow
from .sans_io import Flow, before_first_write
from .settings import DEFAULTS
from .validation import MAX_PAYLOAD_BYTES, PayloadLimits


class AsyncClient:
    """``await client.enqueue(...)``, ``enqueue_many``, ``submit``, ``wait``, ``wait_workflow``: the arguments,
    results and errors are those of ``Client`` (the same flows run underneath, see ``client``'s docstring), and
    so is where it connects without a URL (see ``process_defaults``)."""

    def __init__(
        self,
        redis_url: str | None = None,
        *,
        max_payload: int = MAX_PAYLOAD_BYTES,
        max_payload_depth: int = DEFAULTS.max_payload_depth,
        conn: AsyncRedis | None = None,
        policies: bool = True,
        policy_refresh: float = 1.0,
        registry: Registry | None = None,
        **options: Unpack[EngineOptions],
    ):
        redis_url = redis_url or process_defaults.redis_url()
        self.broker = AsyncBroker(
            redis_url,
            prefix=options["prefix"] if "prefix" in options else process_defaults.key_prefix(),
            clock=options.get("clock"),
            limits=options.get("limits"),
            conn=conn,
        )
        if self.broker.topology.wait_replicas and self.broker.cluster:
            # WAIT must follow the write on the same connection to the slot's master, which redis-py's asyncio
            # cluster client cannot promise; the blocking Client does it.
            raise ValidationError(
                "wait_replicas on a Redis Cluster URL works with the blocking Client, not the AsyncClient",
                op="connect",
            )
        self.transitions = self.broker.transitions
        self.keys = self.broker.keys
        self.clock = self.broker.clock
        self.payload_limits = PayloadLimits(max_payload, max_payload_depth)
        self.policies = PolicyCache(self.keys, policy_refresh) if policies else None
        #: Whose handler options workflow members take when they give none (as in ``Client``).
        self.registry = registry if registry is not None else handlers.registry
        self._layout_checked = False  # before the first write, as the blocking client does
        # Concurrent enqueue calls (tasks of the loop) share script calls, as in Client (see coalescing).
        self._coalescer = AsyncEnqueueCoalescer(self.broker)

    async def enqueue(self, type: str, payload: Any = b"", **options: Any) -> TaskInfo:
        if tracing.recording():  # as Client.enqueue: a send span, whose context the task carries
            with producer_tracing.Sending(producer_tracing.queue_of(options), type) as span:
                options = producer_tracing.carrying(options, producer_tracing.carried())
                return producer_tracing.sent(span, await self._enqueue(type, payload, options))
        return await self._enqueue(type, payload, options)

    async def _enqueue(self, type: str, payload: Any, options: dict[str, Any]) -> TaskInfo:
        if "group" in options or "after" in options:
            flow = composite_enqueue.enqueue_composite_flow(
                self.transitions, self.clock.now(), type, payload, options, self.payload_limits
            )
            return cast(TaskInfo, await self._write("client.enqueue", flow))
        now = self.clock.now()
        placement = producer.plan(
            self.keys, now, type, payload, options, "client.enqueue", self.payload_limits, await self._policies()
        )
        if not self._layout_checked:
            await self._check_layout()
        return await self._coalescer.enqueue(placement)

    async def enqueue_many(self, items: Iterable[Any], **options: Any) -> list[TaskInfo]:
        if tracing.recording():  # as Client.enqueue_many: one send span, a creation context per task
            with producer_tracing.sending_batch(items, options) as batch:
                infos = await self._enqueue_many(batch.items, options)
                batch.ended(infos)
                return infos
        return await self._enqueue_many(items, options)

    async def _enqueue_many(self, items: Iterable[Any], options: dict[str, Any]) -> list[TaskInfo]:
        now = self.clock.now()
        placements = producer.plan_many(
            self.keys, now, items, options, "client.enqueue_many", self.payload_limits, await self._policies()
        )
        flow = enqueue_flow(self.transitions, placements, to_ms(now))
        return cast(list[TaskInfo], await self._write("client.enqueue_many", flow))

    async def submit(self, workflow: Any, **options: Unpack[SubmitOptions]) -> Any:
        if tracing.recording():  # as Client.submit: one send span, whose context every member carries
            with producer_tracing.Sending(options.get("queue", producer_tracing.DEFAULT_QUEUE)):
                return await self._submit(workflow, producer_tracing.carried(), options)
        return await self._submit(workflow, {}, options)

    async def _submit(self, workflow: Any, context_headers: dict[str, str], options: SubmitOptions) -> Any:
        flow = composite_enqueue.submit_workflow_flow(
            self.transitions,
            self.clock.now(),
            workflow,
            self.payload_limits,
            **options,
            handlers=self.registry,
            context_headers=context_headers,
        )
        return await self._write("client.submit", flow)

    async def wait_workflow(self, workflow_id: str, *, queue: str = "default", timeout: float | None = None) -> Any:
        flow = workflows.wait_flow(self.keys, queue, workflow_id, timeout)
        return await self.broker.drive("client.wait_workflow", flow)

    async def wait(self, task_id: str, *, queue: str = "default", timeout: float | None = None) -> TaskInfo:
        return cast(TaskInfo, await self.broker.drive("client.wait", wait_flow(self.keys, queue, task_id, timeout)))

    async def _policies(self) -> PolicySet | None:
        """From memory while fresh (as the blocking client), else read from Redis."""
        if self.policies is None:
            return None
        return self.policies.fresh() or cast(
            PolicySet, await self.broker.drive("client.policies", self.policies.flow())
        )

    async def _check_layout(self) -> None:
        """As ``Client._check_layout``."""
        await self.broker.check_layout("client")
        self._layout_checked = True

    async def _write(self, op: str, flow: Flow) -> Any:
        """As ``Client._write``."""
        if not self._layout_checked:
            flow = before_first_write(flow, self._layout_flow())
        return await self.broker.drive(op, flow, replicated=True)

    def _layout_flow(self) -> Flow:
        yield from check_flow(self.keys, "client")
        self._layout_checked = True

    async def close(self) -> None:
        await self.broker.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
