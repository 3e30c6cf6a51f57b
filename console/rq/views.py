"""Pages and actions for django-rq queues, under /rq/.

Access follows the console's rules (``taskq.console.access``): every page needs login and ``taskq.view_console``;
requeue and delete are POST (CSRF-checked) and need ``taskq.operate_console``, and are refused in read-only mode.
Redis being down is the engine's ``RedisUnavailableError``, which ``taskq.console.access`` turns into a 503 page.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from taskq.console.access import operator_action, viewer_page
from taskq.console.errors import bad_request, error_page, not_found
from taskq.console.page_render import render
from taskq.console.permissions import can_operate
from taskq.queues.audit import record_action

from . import bridge
from .forms import JobListForm


def rq_errors(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Map the bridge's named errors to pages: unknown queue or job 404, bad input 400, wrong job state 409."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except (bridge.UnknownQueueError, bridge.JobNotFoundError) as exc:
            return not_found(request, exc.message)
        except (bridge.UnknownRegistryError, bridge.InvalidPageError) as exc:
            return bad_request(request, exc.message)
        except bridge.InvalidJobStateError as exc:
            return error_page(request, 409, "Not possible in this state", exc.message)

    return wrapper


@viewer_page
@rq_errors
def rq_index(request: HttpRequest) -> HttpResponse:
    """Every queue configured in RQ_QUEUES with its job count per registry."""
    return render(
        request, "taskq/rq/index.html", {"rq_queues": bridge.rq_queue_summaries(), "registries": bridge.REGISTRIES}
    )


@viewer_page
@rq_errors
def rq_queue(request: HttpRequest, queue_name: str) -> HttpResponse:
    """One RQ queue: a tab per registry with its count, and a page of the selected registry's jobs."""
    summary = bridge.rq_queue_summary(queue_name)  # first: an unknown queue is a 404 before bad input is a 400
    form = JobListForm(request.GET)
    if not form.is_valid():
        return bad_request(request, form.error_text())
    jobs = bridge.rq_jobs(
        queue_name, form.cleaned_data["registry"], form.cleaned_data["page"], form.cleaned_data["size"]
    )
    return render(request, "taskq/rq/queue.html", {"summary": summary, "jobs": jobs})


@viewer_page
@rq_errors
def rq_job(request: HttpRequest, queue_name: str, job_id: str) -> HttpResponse:
    """One RQ job: call, status, times, TTLs, dependencies, latest traceback or return value."""
    return render(
        request,
        "taskq/rq/job.html",
        {"job": bridge.rq_job(queue_name, job_id), "can_operate": can_operate(request.user)},
    )


@operator_action
@rq_errors
def rq_requeue(request: HttpRequest, queue_name: str, job_id: str) -> HttpResponse:
    """Requeue one failed job through RQ's FailedJobRegistry; back to the job's page."""
    bridge.requeue_failed(queue_name, job_id)
    record_action(request.user, "rq_requeue_job", queue=queue_name, task_ids=[job_id], detail="RQ failed job requeued")
    messages.success(request, f"Requeued RQ job {job_id}.")
    return redirect(reverse("taskq:rq:job", args=[queue_name, job_id]))


@operator_action
@rq_errors
def rq_delete(request: HttpRequest, queue_name: str, job_id: str) -> HttpResponse:
    """Delete one job (not a running one) through RQ's Job.delete; back to the registry it was in."""
    registry = bridge.delete_job(queue_name, job_id) or "queued"
    record_action(
        request.user, "rq_delete_job", queue=queue_name, task_ids=[job_id], detail=f"RQ job deleted from {registry}"
    )
    messages.success(request, f"Deleted RQ job {job_id}.")
    return redirect(reverse("taskq:rq:queue", args=[queue_name]) + f"?registry={registry}")
