"""The producer API: enqueue tasks, enqueue many at once, wait for a task's end. Imports no Django.

The path of one ``client.enqueue(type, payload, **options)``, top-down:

1. ``client``: reads the admin's policies (``policies.PolicyCache``: from memory, at most once a second from Redis)
   and checks the keyspace's layout before its first write (``layout``).
2. ``producer.plan``: validates the arguments into a ``transitions.Placement`` (the task message, where it goes,
   its unique lock). Nothing is sent before this.
3. ``coalescing.EnqueueCoalescer``: gathers the calls of concurrent threads into rounds and sends each round (or a
   caller's task alone) to the broker as one ``lua/enqueue.lua`` call per queue, the flow
   ``producer_flows.write_flow`` building the TaskInfos while Redis runs it.
4. ``broker.Broker``: sends the call (FCALL or EVALSHA, see ``broker.scripting``) and translates what Redis
   answers (``redis_errors``). A task the script refuses comes back as a ``transitions.Refusal``, from which
   ``producer_flows.refused`` builds the caller's error (``DuplicateTaskError``, ``TaskIdConflictError``) once.

``enqueue_many`` drives ``producer_flows.enqueue_flow`` on the broker itself, without the coalescer (a refused
chunk raises a ``BulkEnqueueError``); groups, dependencies and workflows go through ``composite_enqueue``;
``AsyncClient`` (``aio``) takes the same road on an ``AsyncBroker``.

Where a client given no URL connects: see ``process_defaults`` (what the Django app registers at start-up, else
``$REDIS_URL``, else the local Redis).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Unpack, cast

from . import composite_enqueue, handlers, process_defaults, producer, producer_tracing, tracing, workflows
from .broker import Broker, BrokerOptions, BrokerOwner
from .clock import Clock, to_ms
from .coalescing import EnqueueCoalescer
from .composite_enqueue import SubmitOptions
from .eager import EagerRunner, unsupported
from .handlers import Registry
from .layout import check_flow
from .message import TaskInfo
from .policies import PolicyCache, PolicySet
from .producer_flows import enqueue_flow, wait_flow
from .sans_io import Flow, before_first_write
from .settings import DEFAULTS, TaskqSettings
from .transitions import Limits
from .validation import MAX_PAYLOAD_BYTES, PayloadLimits


class Client(BrokerOwner):
    """Enqueues tasks. Thread-safe: redis-py's connection pool serves concurrent callers.

    >>> client = Client()  # or Client("redis://127.0.0.1:6379/0")
    >>> info = client.enqueue("email:deliver", {"to": "ada@example.com"}, queue="critical", max_retry=5)

    Given no ``redis_url`` it connects where the worker and the console of the same process do: in a Django
    process (a view, ``manage.py shell``) to ``settings.REDIS_URL``, which the app registers at start-up; elsewhere
    to ``$REDIS_URL``; else to ``redis://127.0.0.1:6379/0``. Given no ``prefix``, it takes the key prefix the same
    way (``settings.TASKS_KEY_PREFIX``, ``$TASKS_KEY_PREFIX``, ``tq``). See ``process_defaults``.

    Unique TTL and retention default to the policies defined in the admin (mirrored in Redis, re-checked at most
    every ``policy_refresh`` seconds) when the caller gives none; ``policies=False`` turns that off.

    Workflow members (``submit``) take the options of their handler in ``registry`` (default: the global one)
    where they give none, as ``handler.enqueue`` applies them to a plain task.

    With ``eager=True`` nothing goes to Redis: ``enqueue`` validates as usual, then runs the handler ``registry``
    (default: the global one) has for the type, in the calling thread, and returns its outcome; with
    ``eager_propagates`` (the default) the handler's exception is raised to the caller (see ``eager``).
    """

    def __init__(
        self,
        redis_url: str | None = None,
        *,
        max_payload: int = MAX_PAYLOAD_BYTES,
        max_payload_depth: int = DEFAULTS.max_payload_depth,
        policies: bool = True,
        policy_refresh: float = 1.0,
        eager: bool = False,
        eager_propagates: bool = True,
        registry: Registry | None = None,
        **options: Unpack[BrokerOptions],
    ):
        if "prefix" not in options:  # asked only when not given: the default reads the environment
            options["prefix"] = process_defaults.key_prefix()
        self.broker = Broker(redis_url or process_defaults.redis_url(), **options)
        self.payload_limits = PayloadLimits(max_payload, max_payload_depth)
        # Eager mode reads no policies either: it must work without a Redis.
        self.policies = PolicyCache(self.broker.keys, policy_refresh) if policies and not eager else None
        self.eager = EagerRunner(self.clock, registry=registry, propagate=eager_propagates) if eager else None
        #: Whose handler options (max_retry, timeout, retention) workflow members take when they give none.
        self.registry = registry if registry is not None else handlers.registry
        # Checked before the first request, not here: a client is often built while Redis is still starting.
        self._layout_checked = False
        # Concurrent enqueue calls from many threads share script calls (see coalescing).
        self._coalescer = EnqueueCoalescer(self.broker)

    @classmethod
    def from_settings(cls, settings: TaskqSettings, **options: Any) -> Client:
        """A client as taskq's settings configure one: Redis, key prefix, stream and archive limits, payload
        depth, eager mode; ``options`` (``registry``, ``clock``...) as for the constructor."""
        return cls(
            settings.redis_url,
            prefix=settings.key_prefix,
            limits=Limits.from_settings(settings),
            max_payload_depth=settings.max_payload_depth,
            eager=settings.eager,
            eager_propagates=settings.eager_propagates,
            **options,
        )

    @property
    def clock(self) -> Clock:
        return self.broker.clock

    def validate(self, type: str, payload: Any = b"", *, op: str = "client.validate", **options: Any) -> None:
        """Check an enqueue's arguments as ``enqueue`` checks them, writing nothing: for callers that enqueue
        later (``taskq.queues.transaction.enqueue_on_commit``) and want bad input to fail now. Raises
        ValidationError."""
        producer.plan(self.broker.keys, self.clock.now(), type, payload, options, op, self.payload_limits)

    def enqueue(self, type: str, payload: Any = b"", **options: Any) -> TaskInfo:  # `type`: the public name
        """Enqueue one task (options in the README). Raises ValidationError, DuplicateTaskError,
        TaskIdConflictError or RedisUnavailableError; on any of them nothing was written.

        ``group="user:42"`` puts it in that group of its queue to be aggregated (see ``aggregation``);
        ``after=[task_id, ...]`` makes it wait until those tasks of its queue have succeeded (see ``workflows``),
        with their results as ``task.results`` when ``pass_results=True``.

        Inside a recording span (OpenTelemetry, the ``otel`` extra) the enqueue is a ``send`` span whose context
        the task carries in its headers (see ``producer_tracing``)."""
        if tracing.recording():
            with producer_tracing.Sending(producer_tracing.queue_of(options), type) as span:
                options = producer_tracing.carrying(options, producer_tracing.carried())
                return producer_tracing.sent(span, self._enqueue(type, payload, options))
        return self._enqueue(type, payload, options)

    def _enqueue(self, type: str, payload: Any, options: dict[str, Any]) -> TaskInfo:
        if self.eager is not None and ("group" in options or "after" in options):
            raise unsupported("client.enqueue", "aggregate groups or wait for dependencies (group=, after=)")
        if "group" in options or "after" in options:
            flow = composite_enqueue.enqueue_composite_flow(
                self.broker.transitions, self.clock.now(), type, payload, options, self.payload_limits
            )
            return cast(TaskInfo, self._write("client.enqueue", flow))
        now = self.clock.now()
        placement = producer.plan(
            self.broker.keys, now, type, payload, options, "client.enqueue", self.payload_limits, self._policies()
        )
        if self.eager is not None:
            return self.eager.run(placement.message, "client.enqueue")
        if not self._layout_checked:
            self._check_layout()
        return self._coalescer.enqueue(placement)

    def enqueue_many(self, items: Iterable[Any], **options: Any) -> list[TaskInfo]:
        """Enqueue many tasks: ``items`` are (type, payload) pairs or dicts with per-task options; ``options``
        apply to all. One script call per queue and chunk of 1,000. Every item is validated before anything is
        written; each chunk is all-or-nothing, and when a later chunk is refused the error's ``enqueued``
        lists what the earlier chunks enqueued. Inside a recording span, the call is one ``send`` span and each
        task gets a creation context of its own (see ``producer_tracing``)."""
        if tracing.recording():
            with producer_tracing.sending_batch(items, options) as batch:
                infos = self._enqueue_many(batch.items, options)
                batch.ended(infos)
                return infos
        return self._enqueue_many(items, options)

    def _enqueue_many(self, items: Iterable[Any], options: dict[str, Any]) -> list[TaskInfo]:
        now = self.clock.now()
        placements = producer.plan_many(
            self.broker.keys, now, items, options, "client.enqueue_many", self.payload_limits, self._policies()
        )
        if self.eager is not None:  # in order, each after the one before has ended
            return [self.eager.run(placement.message, "client.enqueue_many") for placement in placements]
        flow = enqueue_flow(self.broker.transitions, placements, to_ms(now))
        return cast(list[TaskInfo], self._write("client.enqueue_many", flow))

    def submit(self, workflow: Any, **options: Unpack[SubmitOptions]) -> Any:
        """Submit a workflow (``chain``, ``parallel``, ``chord`` or one ``sig``), all or nothing; returns its
        ``WorkflowInfo``. ``options`` (``queue``, ``on_success``, ``on_error``, ``workflow_id``, ``keep``): see
        ``SubmitOptions``. Inside a recording span, the submit is one ``send`` span whose context every member
        carries."""
        if self.eager is not None:
            raise unsupported("client.submit", "submit workflows")
        if tracing.recording():
            with producer_tracing.Sending(options.get("queue", producer_tracing.DEFAULT_QUEUE)):
                return self._submit(workflow, producer_tracing.carried(), options)
        return self._submit(workflow, {}, options)

    def _submit(self, workflow: Any, context_headers: dict[str, str], options: SubmitOptions) -> Any:
        flow = composite_enqueue.submit_workflow_flow(
            self.broker.transitions,
            self.clock.now(),
            workflow,
            self.payload_limits,
            **options,
            handlers=self.registry,
            context_headers=context_headers,
        )
        return self._write("client.submit", flow)

    def wait_workflow(self, workflow_id: str, *, queue: str = "default", timeout: float | None = None) -> Any:
        """Block until the workflow has succeeded or failed and return its final ``WorkflowInfo`` (with every
        member's outcome and result). Raises TimeoutError, or TaskNotFoundError for an unknown workflow."""
        if self.eager is not None:
            raise unsupported("client.wait_workflow", "wait for a workflow")
        flow = workflows.wait_flow(self.broker.keys, queue, workflow_id, timeout)
        return self.broker.drive("client.wait_workflow", flow)

    def wait(self, task_id: str, *, queue: str = "default", timeout: float | None = None) -> TaskInfo:
        """Block until the task is completed or archived and return its final TaskInfo.

        The result is on the TaskInfo when the task was enqueued with a retention (without one a task is deleted
        when it succeeds, so only its end is known). Raises TimeoutError after ``timeout`` seconds, and
        TaskNotFoundError when there is no such task or it was deleted."""
        if self.eager is not None:
            raise unsupported("client.wait", "wait for a task (enqueue returned its outcome already)")
        return cast(TaskInfo, self.broker.drive("client.wait", wait_flow(self.broker.keys, queue, task_id, timeout)))

    def _policies(self) -> PolicySet | None:
        if self.policies is None:
            return None
        return self.policies.fresh() or cast(PolicySet, self.broker.drive("client.policies", self.policies.flow()))

    def _check_layout(self) -> None:
        """Before the first write (reads of policies come before validation, and bad input must leave the keyspace
        as it was). Two threads may both check; the check is idempotent."""
        self.broker.check_layout("client")
        self._layout_checked = True

    def _write(self, op: str, flow: Flow) -> Any:
        """Run a flow that validates its arguments, then writes: the key layout is checked before its first
        write, once per client."""
        if not self._layout_checked:
            flow = before_first_write(flow, self._layout_flow())
        return self.broker.drive(op, flow, replicated=True)

    def _layout_flow(self) -> Flow:
        yield from check_flow(self.broker.keys, "client")
        self._layout_checked = True


def configure(redis_url: str | None = None, *, prefix: str | None = None, **options: Any) -> Client:
    """Make ``redis_url`` and ``prefix`` this process's default Redis (where a ``Client()`` given no URL connects,
    see ``process_defaults``) and set the client that ``Handler.enqueue`` uses. ``options`` are the client's."""
    url, key_prefix = redis_url or process_defaults.redis_url(), prefix or process_defaults.key_prefix()
    process_defaults.register(url, key_prefix)
    return _set_default(Client(url, prefix=key_prefix, **options))


def configure_from_settings(settings: TaskqSettings) -> Client:
    """``configure`` from a whole settings object: its Redis becomes the process default and the default client
    is the one ``settings`` configure (the Django app does this at start-up and when its settings change)."""
    process_defaults.register(settings.redis_url, settings.key_prefix)
    return _set_default(Client.from_settings(settings))


def _set_default(client: Client) -> Client:
    process_defaults.set_default_client(client)
    return client


def default_client() -> Client:
    """The configured client, or on first use the one the environment's settings configure (``REDIS_URL``,
    ``TASKS_KEY_PREFIX``, ``TASKS_EAGER``..., read as ``console/settings.py`` reads them; unset, the local Redis).
    A variable that is set but cannot be read raises ValidationError naming it."""
    return cast(Client, process_defaults.default_enqueuer())


def _build_default_client() -> Client:
    # Nothing registered (no Django app started): the environment's settings, as console/settings.py reads them.
    return Client.from_settings(TaskqSettings.from_env(os.environ))


process_defaults.install_default_client(_build_default_client)
