"""The admin's task view: one page of a queue's tasks in one state, read from Redis, with run / archive / delete /
cancel on the selected tasks.

Access: the admin site's own rule (active staff), then ``view_console`` to look and ``operate_console`` to act
(superusers hold both). Input goes through forms; a bad queue, state or page gives a message, never a 500; an
action is a CSRF-checked POST, recorded in the audit log, then redirects back to the page (no resubmission).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse

from taskq.queues.engine.quoting import shown

from .audit import action_name, record_action
from .conf import taskq_settings
from .engine import STATES, EngineError, LayoutVersionError, QueueNotFoundError, RedisUnavailableError
from .engine.actions import TASK_ACTIONS
from .engine.validation import MAX_QUEUE_NAME, MAX_TASK_ID
from .redaction_access import redact_task
from .rendering import preview, render_bytes
from .request_trace import request_context

VIEW_PERMISSION = "taskq.view_console"
OPERATE_PERMISSION = "taskq.operate_console"
PAGE_SIZE = 50
MAX_SELECTED = 1000
ACTIONS = {"run": "run now", "archive": "archive", "delete": "delete", "cancel": "cancel"}


def can_view(user: Any) -> bool:
    return bool(user.is_active and (user.has_perm(VIEW_PERMISSION) or user.has_perm(OPERATE_PERMISSION)))


def can_operate(user: Any) -> bool:
    """Operators may act, unless the console runs read-only (TASKS_CONSOLE_READ_ONLY), which binds the admin's
    queue and task actions too: read-only means nobody changes queues from the web."""
    if taskq_settings().console_read_only:
        return False
    return bool(user.is_active and user.has_perm(OPERATE_PERMISSION))


class PageForm(forms.Form):
    queue = forms.CharField(max_length=MAX_QUEUE_NAME, required=False)
    state = forms.ChoiceField(choices=[(s, s) for s in STATES], required=False)
    page = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)


class ActionForm(PageForm):
    action = forms.ChoiceField(choices=list(ACTIONS.items()))

    def __init__(self, data: Any, task_ids: list[str]) -> None:
        super().__init__(data)
        self.task_ids = task_ids

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not cleaned.get("queue"):
            raise forms.ValidationError("No queue given.")
        if not self.task_ids:
            raise forms.ValidationError("Select at least one task.")
        if len(self.task_ids) > MAX_SELECTED:
            raise forms.ValidationError(f"Select at most {MAX_SELECTED} tasks at once.")
        if any(not task_id or len(task_id) > MAX_TASK_ID for task_id in self.task_ids):
            raise forms.ValidationError(f"Task ids are 1 to {MAX_TASK_ID} characters long.")
        return cleaned


def _errors(form: forms.Form) -> list[str]:
    return [
        f"{'' if name == '__all__' else name + ': '}{error}" for name, errors in form.errors.items() for error in errors
    ]


class TaskBrowser:
    """One request to the task view."""

    template = "admin/taskq/tasks.html"

    def __init__(self, model_admin: Any, request: HttpRequest, inspector: Any) -> None:
        self.model_admin = model_admin
        self.request = request
        self.inspector = inspector

    def respond(self) -> HttpResponse:
        if not can_view(self.request.user):
            raise PermissionDenied
        if self.request.method == "POST":
            return self.act()
        return self.show()

    # -- reading -----------------------------------------------------------------------------------------------

    def _page_params(self) -> tuple[str, str, int]:
        """Queue, state and page; a bad value is reported and replaced by its default."""
        form = PageForm(self.request.GET)
        form.is_valid()
        for error in _errors(form):
            messages.error(self.request, f"Ignored a bad parameter: {error}")
        data = form.cleaned_data  # only the fields that passed
        return data.get("queue") or "", data.get("state") or "pending", data.get("page") or 1

    def show(self) -> HttpResponse:
        queue, state, page = self._page_params()
        context: dict[str, Any] = {
            "queue": queue,
            "state": state,
            "page": page,
            "tasks": [],
            "rows": [],
            "counts": {},
            "queues": [],
            "states": STATES,
            "actions": ACTIONS,
            "page_size": PAGE_SIZE,
            "can_operate": can_operate(self.request.user),
        }
        status = 200
        try:
            context["queues"] = self.inspector.queues()
            if queue:
                info = self.inspector.queue_info(queue)
                context["info"] = info
                context["counts"] = info.counts()
                # Masked for everyone, as the console's lists are: full values only on the console's task page,
                # where each look is audited.
                context["tasks"] = [redact_task(t) for t in self.inspector.list_tasks(queue, state, page, PAGE_SIZE)]
                # Each payload as a line, unfolding to pretty JSON, text or a hex dump (of the masked bytes).
                context["rows"] = [(t, preview(t.payload), render_bytes(t.payload)) for t in context["tasks"]]
                total = context["counts"].get(state, 0)
                context["has_next"] = page * PAGE_SIZE < total
                if page > 1 and not context["tasks"]:
                    messages.warning(self.request, f"Page {page} is past the last page of {state} tasks.")
        except QueueNotFoundError:
            messages.error(self.request, f"There is no queue named {shown(queue)}.")
            context["queue"] = ""
        except RedisUnavailableError as exc:
            messages.error(self.request, f"Redis is unreachable: {exc.message}")
            status = 503
        except EngineError as exc:
            messages.error(self.request, str(exc))
        context["links"] = {
            "prev": self._url(context["queue"], state, page - 1) if page > 1 else "",
            "next": self._url(context["queue"], state, page + 1) if context.get("has_next") else "",
        }
        context["state_links"] = [(s, context["counts"].get(s, 0), self._url(context["queue"], s, 1)) for s in STATES]
        context["queue_links"] = [(q, self._url(q, state, 1)) for q in context["queues"]]
        return TemplateResponse(self.request, self.template, {**self._admin_context(), **context}, status=status)

    def _admin_context(self) -> dict[str, Any]:
        opts = self.model_admin.model._meta
        return {
            **self.model_admin.admin_site.each_context(self.request),
            "opts": opts,
            "app_label": opts.app_label,
            "title": "Tasks",
            "has_view_permission": True,
        }

    def _url(self, queue: str, state: str, page: int) -> str:
        params = {"state": state, "page": page} | ({"queue": queue} if queue else {})
        return f"{self.request.path}?{urlencode(params)}"

    # -- acting ------------------------------------------------------------------------------------------------

    def act(self) -> HttpResponse:
        if not can_operate(self.request.user):
            raise PermissionDenied
        form = ActionForm(self.request.POST, self.request.POST.getlist("task_ids"))
        if not form.is_valid():
            for error in _errors(form):
                messages.error(self.request, error)
            data = form.cleaned_data
            return HttpResponseRedirect(
                self._url(data.get("queue") or "", data.get("state") or "pending", data.get("page") or 1)
            )
        data = form.cleaned_data
        queue, action = data["queue"], data["action"]
        with request_context(self.request):  # each task acted on records the operator's context
            done, refused = self._apply(queue, action, form.task_ids)
        detail = f"{len(done)} done" + (f"; refused: {'; '.join(refused)}" if refused else "") + " (admin)"
        record_action(self.request.user, action_name(action, "task"), queue=queue, task_ids=done, detail=detail)
        if done:
            messages.success(self.request, f"{ACTIONS[action].capitalize()}: {len(done)} task(s) in {queue}.")
        for reason in refused[:20]:
            messages.error(self.request, reason)
        return HttpResponseRedirect(self._url(queue, data["state"] or "pending", data["page"] or 1))

    def _apply(self, queue: str, action: str, task_ids: list[str]) -> tuple[list[str], list[str]]:
        method = getattr(self.inspector, TASK_ACTIONS[action].method)
        done: list[str] = []
        refused: list[str] = []
        for task_id in task_ids:
            try:
                method(queue, task_id)
            except RedisUnavailableError as exc:
                refused.append(f"Redis is unreachable: {exc.message}")
                break
            except LayoutVersionError as exc:  # the same for every task: say it once
                refused.append(f"Nothing was done: {exc.message}")
                break
            except EngineError as exc:
                refused.append(f"{task_id[:64]}: {exc.message[:200]}")
            else:
                done.append(task_id)
        return done, refused
