"""The asyncio producer API: the same surface as ``Client``, for code running on an event loop."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Unpack, cast

import redis
import redis.asyncio

from . import composite_enqueue, handlers, process_defaults, producer, topology, workflows
from .broker import EngineOptions, not_replicated
from .clock import to_ms
from .coalescing import AsyncEnqueueCoalescer
from .composite_enqueue import SubmitOptions
from .connection import connect_async, is_cluster
from .errors import EngineError, ValidationError
from .handlers import Registry
from .layout import check_flow
from .message import TaskInfo
from .policies import PolicyCache, PolicySet
from .producer_flows import enqueue_flow, wait_flow
from .redis_errors import run_scripts_pipelined_async, translated
from .sans_io import Flow, Pipeline, Request, drive_async, outcomes_of, run_command_async, script_runs
from .settings import DEFAULTS
from .transitions import Call, Placement, Transitions
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
        conn: redis.asyncio.Redis | None = None,
        policies: bool = True,
        policy_refresh: float = 1.0,
        registry: Registry | None = None,
        **options: Unpack[EngineOptions],
    ):
        redis_url = redis_url or process_defaults.redis_url()
        self.conn = conn if conn is not None else connect_async(redis_url)
        self.topology = topology.parse(redis_url)
        if self.topology.wait_replicas and is_cluster(self.conn):
            # WAIT must follow the write on the same connection to the slot's master, which redis-py's asyncio
            # cluster client cannot promise; the blocking Client does it.
            raise ValidationError(
                "wait_replicas on a Redis Cluster URL works with the blocking Client, not the AsyncClient",
                op="connect",
            )
        self.transitions = Transitions(
            options["prefix"] if "prefix" in options else process_defaults.key_prefix(),
            options.get("clock"),
            options.get("limits"),
            cluster=is_cluster(self.conn),
        )
        self.keys = self.transitions.keys
        self.clock = self.transitions.clock
        self.payload_limits = PayloadLimits(max_payload, max_payload_depth)
        self.policies = PolicyCache(self.keys, policy_refresh) if policies else None
        #: Whose handler options workflow members take when they give none (as in ``Client``).
        self.registry = registry if registry is not None else handlers.registry
        self._layout_checked = False  # before the first request, as the blocking client does
        # Concurrent enqueue calls (tasks of the loop) share script calls, as in Client (see coalescing).
        self._coalescer = AsyncEnqueueCoalescer(self._write_queue, self._execute)

    async def enqueue(self, type: str, payload: Any = b"", **options: Any) -> TaskInfo:
        if "group" in options or "after" in options:
            return cast(
                TaskInfo,
                await drive_async(
                    composite_enqueue.enqueue_composite_flow(
                        self.transitions, self.clock.now(), type, payload, options, self.payload_limits
                    ),
                    self._execute,
                ),
            )
        now = self.clock.now()
        placement = producer.plan(
            self.keys, now, type, payload, options, "client.enqueue", self.payload_limits, await self._policies()
        )
        return await self._coalescer.enqueue(placement)

    async def enqueue_many(self, items: Iterable[Any], **options: Any) -> list[TaskInfo]:
        now = self.clock.now()
        placements = producer.plan_many(
            self.keys, now, items, options, "client.enqueue_many", self.payload_limits, await self._policies()
        )
        return cast(
            list[TaskInfo], await drive_async(enqueue_flow(self.transitions, placements, to_ms(now)), self._execute)
        )

    async def submit(self, workflow: Any, **options: Unpack[SubmitOptions]) -> Any:
        flow = composite_enqueue.submit_workflow_flow(
            self.transitions, self.clock.now(), workflow, self.payload_limits, **options, handlers=self.registry
        )
        return await drive_async(flow, self._execute)

    async def wait_workflow(self, workflow_id: str, *, queue: str = "default", timeout: float | None = None) -> Any:
        return await drive_async(workflows.wait_flow(self.keys, queue, workflow_id, timeout), self._execute)

    async def wait(self, task_id: str, *, queue: str = "default", timeout: float | None = None) -> TaskInfo:
        return cast(TaskInfo, await drive_async(wait_flow(self.keys, queue, task_id, timeout), self._execute))

    async def _policies(self) -> PolicySet | None:
        if self.policies is None:
            return None
        return cast(PolicySet, await drive_async(self.policies.flow(), self._execute))

    def _write_queue(self, placements: list[Placement]) -> Flow:
        """The flow that writes one queue's placements in one script call (the coalescer runs it)."""
        return enqueue_flow(self.transitions, placements, to_ms(self.clock.now()))

    async def _execute(self, request: Request) -> Any:
        if isinstance(request, Call | Pipeline) and not self._layout_checked:  # before the first write, as in Client
            await drive_async(check_flow(self.keys, "client"), self._send)
            self._layout_checked = True
        return await self._send(request)

    async def _send(self, request: Request) -> Any:
        op = f"client.{getattr(request, 'op', getattr(request, 'name', ''))}"
        if isinstance(request, Call):
            with translated(op, script=request.script.name):
                return request.parse(await self._run(request))
        if isinstance(request, Pipeline):
            return await self._run_pipeline(request)
        with translated(op):
            return await run_command_async(self.conn, request)

    async def _run_pipeline(self, pipeline: Pipeline) -> list[Any]:
        """As ``Broker.run_pipeline``: one after another on a Cluster client or with ``wait_replicas``."""
        if is_cluster(self.conn) or self.topology.wait_replicas:
            outcomes: list[Any] = []
            for call in pipeline.calls:
                try:
                    outcomes.append(await self._send(call))
                except EngineError as exc:
                    return [*outcomes, exc]
            return outcomes
        replies = await run_scripts_pipelined_async(self.conn, script_runs(pipeline.calls), pipeline.meanwhile)
        return outcomes_of(pipeline.calls, replies)

    async def _run(self, call: Call) -> Any:
        """Run a transition; with ``wait_replicas`` in the URL, only once that many replicas have it (see Broker)."""
        replicas = self.topology.wait_replicas
        if not replicas:
            return await call.script.run_async(self.conn, call.keys, call.args)
        reply, confirmed = await call.script.run_and_wait_async(
            self.conn, call.keys, call.args, replicas, self.topology.wait_timeout_ms
        )
        if confirmed < replicas:
            raise not_replicated(call.op, confirmed, self.topology)
        return reply

    async def close(self) -> None:
        await self.conn.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
