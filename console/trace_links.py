"""The task page's trace ids, each a link into the trace viewer ``TASKS_CONSOLE_TRACE_URL`` names.

A task carries its producer's context in its headers (``traceparent``), and, after an operator ran, edited or
cancelled it, the operator's (``taskq-operator-traceparent``; ``queues/engine/operator_trace.py``). A worker makes
each attempt a child of the operator's context when the task carries one, else of the producer's: so an attempt's
trace is that of the last operator action before it (whose event carries its trace id), else the producer's.

The template is the viewer's URL with ``{trace_id}`` where the id goes. It is filled by plain replacement, not
``str.format``, so a template with braces of its own (Grafana's Explore URLs hold JSON) works. One that is not an
http(s) URL with ``{trace_id}`` in it is the system check error ``taskq.E130``; the page then shows plain ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.core import checks

from taskq.queues import conf
from taskq.queues.engine.operator_trace import OPERATOR_TRACEPARENT, trace_id

PLACEHOLDER = "{trace_id}"
HINT = (
    "Give the URL of one trace in your viewer with {trace_id} where the id goes, such as Jaeger's "
    "http://localhost:16686/trace/{trace_id}, or leave TASKS_CONSOLE_TRACE_URL unset (see docs/tracing.md)."
)


@dataclass(frozen=True)
class TraceLink:
    """A trace id, and its URL in the viewer ("" without a usable template)."""

    trace_id: str
    url: str = ""


def template_problem(template: object) -> str | None:
    """Why ``template`` cannot be the trace URL template, or None (an unset one, "", is fine: no links)."""
    if template == "":
        return None
    if not isinstance(template, str):
        return f"TASKS_CONSOLE_TRACE_URL must be a URL template (a string), not {type(template).__name__}"
    if PLACEHOLDER not in template:
        return f"TASKS_CONSOLE_TRACE_URL has no {PLACEHOLDER} where the trace id goes: {template[:200]!r}"
    try:
        parts = urlsplit(template.replace(PLACEHOLDER, "0"))
    except ValueError as exc:
        return f"TASKS_CONSOLE_TRACE_URL is not a URL ({exc}): {template[:200]!r}"
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"TASKS_CONSOLE_TRACE_URL must be an http(s) URL with a host: {template[:200]!r}"
    return None


@checks.register()
def check_trace_url(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    # Not scoped to app_configs: the setting is the whole process's, as REDIS_URL's check is.
    problem = template_problem(conf.taskq_settings().console_trace_url)
    return [] if problem is None else [checks.Error(problem, hint=HINT, id="taskq.E130")]


def link(trace: str) -> TraceLink | None:
    """``trace`` with its URL when the template is usable; None for no trace id."""
    if not trace:
        return None
    template = conf.taskq_settings().console_trace_url
    if template_problem(template) is not None or not template:
        return TraceLink(trace)
    return TraceLink(trace, template.replace(PLACEHOLDER, trace))


def task_traces(task: Any, events: Iterable[Any], attempts: list[Any]) -> dict[str, TraceLink | None]:
    """The producer's and the last operator's trace of ``task`` (from its headers, as the viewer may see them:
    a redaction pattern that matches them hides them), and each of ``attempts`` given its ``trace`` (see the
    module), read from ``events``, the task's events that ``attempts`` were read from."""
    headers = getattr(task, "headers", None) or {}
    producer = trace_id(headers.get("traceparent"))
    current, starts = producer, []
    for event in events:
        if getattr(event, "trace", ""):
            current = event.trace
        elif event.to_state == "active":
            starts.append(current)
    for attempt, trace in zip(attempts, starts, strict=False):
        attempt.trace = link(trace)
    return {"producer": link(producer), "operator": link(trace_id(headers.get(OPERATOR_TRACEPARENT)))}
