"""The handler module of the OTLP test's worker (``taskworker --import tests.tracing.otlp_tasks``), set up as an
application would: on import it sets the worker process's tracer provider, service ``taskq-worker``, with a batch
span processor and the OTLP/HTTP exporter, which reads its endpoint from ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``.

``test:otlp-flaky`` fails its first attempt and completes its second; each attempt opens a span of its own
(``handle <task id>``) under the current one (the attempt's), to show that a handler's spans join the trace.
Imported only by the worker subprocess, so it registers into that process's global registry and provider.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from taskq.queues.engine import Task, handler

SERVICE = "taskq-worker"
TASK = "test:otlp-flaky"

provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)


class FirstAttemptFails(RuntimeError):
    """What the first attempt raises, so that the task is retried once."""


@handler(TASK, retry_delay=lambda n, e, t: 0.1)
def flaky(task: Task) -> None:
    # Under the attempt's span, which the worker makes current while the handler runs.
    with trace.get_tracer(__name__).start_as_current_span(f"handle {task.id}") as span:
        span.set_attribute("test.retried", task.retried)
        if task.retried == 0:
            raise FirstAttemptFails("the first attempt fails")
