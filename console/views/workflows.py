"""The workflow page: a chain, group or chord with each member's role, dependencies and state, and where it is."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from ..access import viewer_page
from ..rendering import preview
from .common import inspector


@viewer_page
def workflow_detail(request: HttpRequest, queue: str, workflow_id: str) -> HttpResponse:
    """Access: viewers. Reads the workflow's hash and one HMGET per member (404 for an unknown queue or
    workflow, or one whose record has expired)."""
    info = inspector().workflow(queue, workflow_id)
    types = {m.id: m.type for m in info.members}
    rows = [(m, [(dep, types.get(dep, "")) for dep in m.after], _result(m.type, m.result)) for m in info.members]
    counts: dict[str, int] = {}
    for m in info.members:
        counts[m.state] = counts.get(m.state, 0) + 1
    return render(
        request,
        "console/workflow.html",
        {
            "queue": queue,
            "workflow": info,
            "rows": rows,
            "current": info.current,
            "counts": sorted(counts.items()),
        },
    )


def _result(task_type: str, result: Any) -> str | None:
    """One line of a member's result (decoded JSON, or bytes), masked as TASKS_REDACT says."""
    from queues.redaction import masked

    if result is None:
        return None
    if not isinstance(result, bytes):
        result = json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode()
    return preview(masked(task_type, result))
