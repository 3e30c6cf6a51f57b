"""The workflows list (each queue's workflows, newest first) and the workflow page: a chain, group or chord with
each member's role, dependencies and state, and where it is."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from ..access import viewer_page
from ..errors import bad_request
from ..forms import WorkflowListQuery, first_error
from ..rendering import preview
from .common import inspector

#: Workflows listed per queue and page.
LIST_SIZE = 20


@viewer_page
def workflow_list(request: HttpRequest) -> HttpResponse:
    """Access: viewers. Every queue's newest workflows with their states (one range read and one pipeline per
    queue), or one queue's, paged (``?queue=&page=``); an unknown queue is a 404."""
    query = WorkflowListQuery(request.GET)
    if not query.is_valid():
        return bad_request(request, first_error(query))
    queue, page = query.cleaned_data["queue"], query.cleaned_data["page"]
    insp = inspector()
    sections = []
    for name in [queue] if queue else insp.queues():
        rows = insp.workflows(name, page=page, size=LIST_SIZE + 1)  # one more: is there an older page?
        if not rows and not queue:
            continue
        shown = rows[:LIST_SIZE]
        states = insp.workflow_states(name, [wf for wf, _ in shown])
        sections.append(
            {
                "queue": name,
                "rows": [(wf, created, states.get(wf, "expired")) for wf, created in shown],
                "previous": _list_url(name, page - 1) if page > 1 else "",
                "next": _list_url(name, page + 1) if len(rows) > LIST_SIZE else "",
            }
        )
    return render(request, "console/workflows.html", {"sections": sections, "queue": queue, "page": page})


def _list_url(queue: str, page: int) -> str:
    from urllib.parse import urlencode

    return str(reverse("workflows")) + "?" + urlencode({"queue": queue, "page": page})


@viewer_page
def workflow_detail(request: HttpRequest, queue: str, workflow_id: str) -> HttpResponse:
    """Access: viewers. Reads the workflow's hash, one HMGET per member, and in one pipeline which members' tasks
    still exist (a member that succeeded without retention is gone: its id is not linked). 404 for an unknown
    queue or workflow, or one whose record has expired."""
    insp = inspector()
    info = insp.workflow(queue, workflow_id)
    types = {m.id: m.type for m in info.members}
    rows = [(m, [(dep, types.get(dep, "")) for dep in m.after], _result(m.type, m.result)) for m in info.members]
    counts: dict[str, int] = {}
    for m in info.members:
        counts[m.state] = counts.get(m.state, 0) + 1
    linked = [m.id for m in info.members] + ([info.failed_member] if info.failed_member else [])
    return render(
        request,
        "console/workflow.html",
        {
            "queue": queue,
            "workflow": info,
            "rows": rows,
            "current": info.current,
            "counts": sorted(counts.items()),
            "existing": insp.existing_tasks((queue, task_id) for task_id in linked),
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
