"""The workflows list (each queue's workflows, newest first, with their progress and where each failed or stalls)
and the workflow page: a chain, parallel or chord with each member's role, dependencies and state, where it is, and
the operator's actions on it (retry a failed one, cancel the rest, archive its stuck steps).

Deliberately shares its name with ``queues/engine/workflows.py``: this is the Workflows pages (console views are
named after their pages), that the workflows themselves.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from taskq.queues import audit
from taskq.queues.engine import FailedPreconditionError
from taskq.queues.engine.actions import WORKFLOW_ACTIONS
from taskq.queues.engine.quoting import shown
from taskq.queues.redaction_access import mask_workflow

from ..access import operator_action, viewer_page
from ..errors import bad_request, error_page
from ..forms import WorkflowListQuery, first_error
from ..page_render import render
from ..renderers import workflow_context
from .actions import perform
from .common import absent_on_asynq, acting_inspector, inspector

#: Workflows listed per queue and page.
LIST_SIZE = 20

#: How the page shows each action of the engine's table (``actions.WORKFLOW_ACTIONS``): the button, what it does
#: (the page's guidance and the confirmation), and what the message after it says of one step and of several
#: ("1 step runs again", "2 steps run again"). Keys name the URL and, followed by ``_workflow``, the audit action.
BUTTONS = {
    "retry": (
        "Retry the failed step",
        "The failed step runs again (its retry count as it is) and the steps its failure cancelled wait for it "
        "again, as if it had not failed; the workflow is running again. The on_error callback is not run again.",
        ("runs again", "run again"),
    ),
    "cancel": (
        "Cancel the rest",
        "Every step that has not started is archived as cancelled; steps running now finish on their own. Nothing "
        "more of the workflow runs: not on_success, and not on_error unless a failure released it already.",
        ("cancelled", "cancelled"),
    ),
    "archive": (
        "Archive the stuck step",
        "Steps that have not started (pending, or waiting for a retry or a later time) are archived now, as if "
        "their retries were spent: the workflow fails, its waiting steps are cancelled and on_error runs.",
        ("archived", "archived"),
    ),
}


@viewer_page
def workflow_list(request: HttpRequest) -> HttpResponse:
    """Access: viewers. Every queue's newest workflows with their state, progress and failing step (three round
    trips per queue: the range, the records, the members that have not ended), or one queue's, paged
    (``?queue=&page=``); an unknown queue is a 404."""
    absent_on_asynq("workflows")
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
        found = {wf: mask_workflow(info) for wf, info in insp.workflow_summaries(name, [w for w, _ in shown]).items()}
        sections.append(
            {
                "queue": name,
                "rows": [(wf, created, found.get(wf)) for wf, created in shown],
                "previous": _list_url(name, page - 1) if page > 1 else "",
                "next": _list_url(name, page + 1) if len(rows) > LIST_SIZE else "",
            }
        )
    return render(request, "taskq/workflows.html", {"sections": sections, "queue": queue, "page": page})


def _list_url(queue: str, page: int) -> str:
    return str(reverse("taskq:workflows")) + "?" + urlencode({"queue": queue, "page": page})


@viewer_page
def workflow_detail(request: HttpRequest, queue: str, workflow_id: str) -> HttpResponse:
    """Access: viewers. Reads the workflow's hash, one HMGET per member, and in one pipeline which members' tasks
    still exist (a member that succeeded without retention is gone: its id is not linked). 404 for an unknown
    queue or workflow, or one whose record has expired. The page follows the queue's events live (``workflow``
    in ``console/live``); the actions are rendered for every action, shown where they apply."""
    absent_on_asynq("workflows")
    insp = inspector()
    info = insp.workflow(queue, workflow_id)
    context = workflow_context(insp, queue, info)
    context["actions"] = [(name, *BUTTONS[name], name in info.actions()) for name in WORKFLOW_ACTIONS]
    return render(request, "taskq/workflow.html", context)


@operator_action
def workflow_action(request: HttpRequest, queue: str, workflow_id: str, action: str) -> HttpResponse:
    """Access: operators (POST, CSRF). One of ``WORKFLOW_ACTIONS`` through the engine (one script each), audited as
    ``<action>_workflow`` (the audit log's ``<verb>_<object>``). An unknown workflow is a 404; an action that does
    not apply to the workflow as it is now (a retry of a running one, say) a 409 that says why, and nothing
    changes."""
    absent_on_asynq("workflows")
    if action not in WORKFLOW_ACTIONS:  # the URLconf names only these; kept for a view called otherwise
        return bad_request(request, f"unknown workflow action {shown(action)}")
    try:
        moved = perform(acting_inspector(request), WORKFLOW_ACTIONS[action], queue, workflow_id)
    except FailedPreconditionError as exc:
        return error_page(request, 409, f"{BUTTONS[action][0]}: not now", exc.message)
    audit.record_action(
        request.user, f"{action}_workflow", queue=queue, detail=f"workflow {workflow_id}: {moved} member(s)"
    )
    one, several = BUTTONS[action][2]
    steps = f"1 step {one}" if moved == 1 else f"{moved} steps {several}"
    messages.success(request, f"Workflow {workflow_id}: {steps}.")
    return redirect("taskq:workflow", queue=queue, workflow_id=workflow_id)
