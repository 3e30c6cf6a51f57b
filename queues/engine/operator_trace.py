"""The operator's trace context on a task: an operator who runs, edits or cancels one task caused its next attempt,
so the context of the operator's request (the current span when the action is taken) goes into the task's headers
as ``taskq-operator-traceparent`` / ``taskq-operator-tracestate``, and the worker makes the later attempts children
of it (with a link to the producer's context, which stays in ``traceparent``).

The headers are written by the action's own script, which first checks that the task's options (``msg``) are still
the ones they were built from (a compare-and-set), so the context is written exactly when the action applies. The
action's event carries the operator's trace id (its ``trace`` field), so the task's page can tell which attempts
came after it. Where no span is current (or the ``otel`` extra is not installed) nothing is written and the action
runs as before.

Also here, without OpenTelemetry: reading the trace id out of a W3C ``traceparent``, for the console's links.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from . import nesting, tracing

#: The operator's W3C context in a task's headers (the producer's is ``traceparent`` / ``tracestate``).
OPERATOR_TRACEPARENT = "taskq-operator-traceparent"
OPERATOR_TRACESTATE = "taskq-operator-tracestate"
OPERATOR_HEADERS = (OPERATOR_TRACEPARENT, OPERATOR_TRACESTATE)

# W3C Trace Context: version-traceid-parentid-flags, lowercase hex; version ff is invalid, and a version above 00
# may append fields after the flags.
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16


def trace_id(traceparent: str | None) -> str:
    """The trace id (32 hex digits) of a W3C ``traceparent``; "" for none or a malformed one (W3C: ignore it)."""
    match = _TRACEPARENT.fullmatch(traceparent.strip()) if isinstance(traceparent, str) else None
    if match is None:
        return ""
    version, trace, span, _, rest = match.groups()
    if version == "ff" or trace == _ZERO_TRACE or span == _ZERO_SPAN or (version == "00" and rest):
        return ""
    return trace


def current_headers() -> dict[str, str]:
    """The current trace context as the operator's headers; empty when no span is current (no SDK records, or the
    extra is not installed) or the application's propagator writes no W3C ``traceparent``."""
    if not tracing.recording():
        return {}
    carrier = tracing.inject({})
    if not trace_id(carrier.get("traceparent")):
        return {}
    headers = {OPERATOR_TRACEPARENT: carrier["traceparent"]}
    if carrier.get("tracestate"):
        headers[OPERATOR_TRACESTATE] = carrier["tracestate"]
    return headers


def with_operator_headers(headers: Mapping[str, str], operator: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with ``operator``'s context replacing any older operator context (a tracestate too, so no
    state of an older action is left beside a newer traceparent)."""
    return {name: value for name, value in headers.items() if name not in OPERATOR_HEADERS} | dict(operator)


@dataclass(frozen=True)
class OperatorMark:
    """What an action's script writes: the task's options as they were read (``expected``, the compare-and-set),
    the options with the operator's context (``options``), and its trace id for the action's event."""

    expected: bytes
    options: bytes
    trace_id: str

    def script_args(self) -> list[bytes | str]:
        return [self.expected, self.options, self.trace_id]


#: The arguments a script takes for no mark: it writes nothing and its event carries no trace.
NO_MARK: list[bytes | str] = ["", "", ""]


def mark(stored: bytes | None, operator: Mapping[str, str]) -> OperatorMark | None:
    """The mark for a task whose options are ``stored``; None when there is nothing to write (no context, no task,
    or options whose headers are not a JSON object, which are left as they are)."""
    if not operator or not stored:
        return None
    try:
        doc = nesting.loads(stored)
    except ValueError:  # TooDeepError and malformed JSON alike: a record this version cannot rewrite
        return None
    headers = doc.get("headers", {}) if isinstance(doc, dict) else None
    if not isinstance(headers, dict):
        return None
    doc["headers"] = with_operator_headers(headers, operator)
    options = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    return OperatorMark(stored, options, trace_id(operator[OPERATOR_TRACEPARENT]))
