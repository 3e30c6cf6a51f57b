"""The producer's spans (the ``otel`` extra): a PRODUCER span per enqueue, whose context the task carries in its
headers, so that the worker's attempts are its children and it is a child of the caller's current span.

The names follow OpenTelemetry's messaging semantic conventions: a span ``send <queue>`` of kind PRODUCER with
``messaging.system = "taskq"``, ``messaging.operation.type``, ``messaging.destination.name`` (the queue) and
``messaging.message.id`` (the task id); taskq's own attributes are under ``taskq.``. A batch (``enqueue_many``) gets
one ``send`` span with ``messaging.batch.message_count``, and each of its tasks a ``create <queue>`` span of its own
(the conventions: each message gets its own creation context), which its headers carry and the ``send`` span links.
A workflow's submit is one ``send`` span whose context every member carries (the conventions' rule for messages
that have no ``create`` span). A periodic entry's fire is a root span: no request caused it.

Headers the caller set win: a task whose headers hold a ``traceparent`` already keeps it, with its ``tracestate``
(a producer may forward a context of its own), and a batch's ``send`` span links that context.

Every producer path asks ``tracing.recording()`` first and goes on as before when it is false: with the extra not
installed or no SDK recording, no span object is made and the headers are the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from . import tracing
from .validation import MAX_HEADERS

try:  # optional: otel
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.trace import Link, NoOpTracerProvider, ProxyTracerProvider, SpanKind, Status, StatusCode
except ImportError:
    trace = None  # type: ignore[assignment]

Info = TypeVar("Info")
Result = TypeVar("Result")

#: ``messaging.system`` of every taskq span.
SYSTEM = "taskq"
DEFAULT_QUEUE = "default"


def sdk_configured() -> bool:
    """Whether the application set a tracer provider of its own (an SDK), so a root span would be recorded: what a
    periodic fire, which no request caused, asks before it makes one."""
    return trace is not None and not isinstance(trace.get_tracer_provider(), (ProxyTracerProvider, NoOpTracerProvider))


def carried() -> dict[str, str]:
    """The current context's trace headers (``traceparent``, ``tracestate``), empty when there is none."""
    return tracing.inject({})


def bound(function: Callable[[], Result]) -> Callable[[], Result]:
    """``function``, to run later (when a transaction commits) in the trace context current now, so that an enqueue
    deferred to the commit joins the trace of the call that asked for it; ``function`` itself where no span
    records."""
    if not tracing.recording():
        return function
    context = otel_context.get_current()

    def in_context() -> Result:
        token = otel_context.attach(context)
        try:
            return function()
        finally:
            otel_context.detach(token)

    return in_context


def headers_with(headers: Any, context_headers: Mapping[str, str]) -> Any:
    """``headers`` (a task's, possibly None) with ``context_headers`` added under them. Left as they are where the
    caller's own carry a ``traceparent``, where they are no dict (validation refuses them by name), and where the
    two together would pass the limit of headers a task may have."""
    if headers is None:
        headers = {}
    if not context_headers or not isinstance(headers, dict) or "traceparent" in headers:
        return headers
    merged = {**context_headers, **headers}
    return merged if len(merged) <= MAX_HEADERS else headers


def carrying(options: Mapping[str, Any], context_headers: Mapping[str, str]) -> dict[str, Any]:
    """An enqueue's ``options`` whose ``headers`` carry ``context_headers`` (see ``headers_with``)."""
    return {**options, "headers": headers_with(options.get("headers"), context_headers)}


def queue_of(options: Mapping[str, Any]) -> Any:
    return options.get("queue", DEFAULT_QUEUE)


def _attributes(operation: str, queue: Any, task_type: Any = None, count: int | None = None) -> dict[str, Any]:
    attributes: dict[str, Any] = {"messaging.system": SYSTEM, "messaging.operation.type": operation}
    if isinstance(queue, str):
        attributes["messaging.destination.name"] = queue
    if isinstance(task_type, str):
        attributes["taskq.task.type"] = task_type
    if count is not None:
        attributes["messaging.batch.message_count"] = count
    return attributes


def _name(operation: str, queue: Any) -> str:
    """``<operation> <queue>``, or the operation alone when the queue is not one name (a batch over several, or
    a value validation is about to refuse)."""
    return f"{operation} {queue}" if isinstance(queue, str) and queue else operation


class Sending:
    """A PRODUCER ``send`` span, current inside the ``with`` block (so ``carried()`` gives its context): a child of
    the current span, or a root span (``root``). An exception leaving the block is recorded on the span, which then
    has the error status and ``error.type``, and goes on to the caller unchanged. A class rather than a generator:
    it runs on every traced enqueue."""

    def __init__(
        self,
        queue: Any,
        task_type: Any = None,
        *,
        root: bool = False,
        count: int | None = None,
        links: Iterable[Any] = (),
    ) -> None:
        self.span = tracing.tracer().start_span(
            _name("send", queue),
            context=Context() if root else None,
            kind=SpanKind.PRODUCER,
            attributes=_attributes("send", queue, task_type, count),
            links=[Link(context) for context in links],
        )
        self._token: Any = None

    def __enter__(self) -> Any:
        self._token = otel_context.attach(trace.set_span_in_context(self.span))
        return self.span

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: Any) -> None:
        otel_context.detach(self._token)
        if isinstance(error, Exception):
            self.span.record_exception(error)
            self.span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
            self.span.set_attribute("error.type", type(error).__qualname__)
        self.span.end()


def sent(span: Any, info: Info) -> Info:
    """``info`` (what the enqueue returned), its task id recorded on ``span`` as the message's id."""
    task_id = getattr(info, "id", None)
    if isinstance(task_id, str):
        span.set_attribute("messaging.message.id", task_id)
    return info


class Batch:
    """The tasks of one ``enqueue_many`` call, each with a creation context of its own in its headers: a
    ``create`` span, a child of the caller's current span, or the ``traceparent`` its headers held already.
    ``items`` are the call's items with those headers (a pair becomes a dict); ``links`` the creation contexts, for
    the ``send`` span; ``queue`` the one queue of every task, else None. An item validation will refuse is kept
    as it came and gets no span."""

    def __init__(self, items: Iterable[Any], options: Mapping[str, Any]) -> None:
        self.items: list[Any] = []
        self.links: list[Any] = []
        self._creates: list[Any] = []
        shared = options.get("headers")
        queues = set()
        for item in items:
            own = _as_dict(item)
            headers = _task_headers(shared, own) if own is not None else None
            if own is None or headers is None:
                self.items.append(item)
                continue
            queue = own.get("queue", queue_of(options))
            queues.add(queue if isinstance(queue, str) else "")
            own["headers"] = self._created(headers, queue, own.get("type"))
            self.items.append(own)
        self.queue: str | None = queues.pop() if len(queues) == 1 else None

    def _created(self, headers: dict[str, str], queue: Any, task_type: Any) -> dict[str, str]:
        """``headers`` with the task's creation context: the one they hold, or a new ``create`` span's."""
        if "traceparent" in headers:
            self.links.append(trace.get_current_span(tracing.extract(headers)).get_span_context())
            self._creates.append(None)
            return headers
        span = tracing.tracer().start_span(
            _name("create", queue), kind=SpanKind.PRODUCER, attributes=_attributes("create", queue, task_type)
        )
        self.links.append(span.get_span_context())
        self._creates.append(span)
        with_context: dict[str, str] = headers_with(headers, tracing.inject({}, trace.set_span_in_context(span)))
        return with_context

    def ended(self, infos: list[Any] | None) -> None:
        """End the ``create`` spans (once), each with its task's id when the tasks were written (``infos``, in
        order)."""
        for n, span in enumerate(self._creates):
            if span is None:
                continue
            if infos is not None and n < len(infos):
                sent(span, infos[n])
            span.end()
        self._creates = []


def _as_dict(item: Any) -> dict[str, Any] | None:
    """An item of ``enqueue_many`` as a dict of its own options, or None for what is neither a pair nor a dict."""
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return {"type": item[0], "payload": item[1]}
    if isinstance(item, Mapping):
        return dict(item)
    return None


def _task_headers(shared: Any, own: dict[str, Any]) -> dict[str, str] | None:
    """A task's headers in a batch, as ``enqueue_many`` takes them: the item's own when it gives some (they replace
    the call's), else the call's; None where they are no dict (validation refuses them)."""
    headers = own["headers"] if "headers" in own else shared
    headers = {} if headers is None else headers
    return headers if isinstance(headers, dict) else None


@contextmanager
def sending_batch(items: Iterable[Any], options: Mapping[str, Any]) -> Iterator[Batch]:
    """The ``send`` span of an ``enqueue_many`` call, current inside the block, linking each task's creation
    context; the block writes ``batch.items`` and hands what it wrote to ``batch.ended``."""
    batch = Batch(items, options)
    try:
        with Sending(batch.queue, count=len(batch.items), links=batch.links):
            yield batch
    finally:
        batch.ended(None)  # what the block did not end (it failed): the create spans end without ids
