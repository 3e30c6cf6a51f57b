"""The Django admin of queue definitions, policies and the audit log, and a view of the tasks in Redis.

Paused state and sizes live in Redis: the admin reads and changes them there through the engine's inspector.
Every action needs the ``taskq.operate_console`` permission (or a superuser), is a CSRF-checked POST, and is
written to the audit log.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import Model, QuerySet
from django.forms.fields import InvalidJSONInput
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from taskq.queues.engine.quoting import shown

from . import conf
from .api.tokens import assign_secret
from .audit import action_name, record_action
from .engine import EngineError, LayoutVersionError, QueueNotFoundError, nesting
from .engine.inspector import QueueInfo
from .engine.redaction import MASK
from .engine.transitions import RateLimit
from .models import ApiToken, AuditLog, PeriodicTask, QueueDefinition, RetentionPolicy, Tasks, UniquePolicy
from .redaction_access import can_see_unredacted, masked, record_unredacted_view, rules
from .task_admin import TaskBrowser, can_operate, can_view


def tasks_url(queue: str, state: str = "pending") -> str:
    return f"{reverse('admin:taskq_tasks_changelist')}?{urlencode({'queue': queue, 'state': state})}"


def inspector_for(request: HttpRequest) -> Any:
    return conf.get_inspector(actor=f"admin:{request.user.get_username()}")


class BoundedJSONField(forms.JSONField):
    """Django's JSON form field, with the text's nesting measured before it is parsed: Django's ``json.loads``
    raises RecursionError (a 500) on text nested a thousand deep; this names the limit it passes instead, and
    shows the text again as typed."""

    def _too_deep(self, value: Any) -> bool:
        return isinstance(value, str) and nesting.deeper_than(value, conf.taskq_settings().max_payload_depth)

    def to_python(self, value: Any) -> Any:
        if self._too_deep(value):
            depth = conf.taskq_settings().max_payload_depth
            raise forms.ValidationError(
                f"nested deeper than {depth} levels of arrays and objects (TASKS_MAX_PAYLOAD_DEPTH)",
                code="too_deep",
            )
        return super().to_python(value)

    def bound_data(self, data: Any, initial: Any) -> Any:
        return InvalidJSONInput(data) if self._too_deep(data) else super().bound_data(data, initial)


#: Every JSON field the admin edits takes its text through ``BoundedJSONField``.
BOUNDED_JSON = {models.JSONField: {"form_class": BoundedJSONField}}


class AuditedAdmin(admin.ModelAdmin):
    """Saving and deleting definitions and policies is written to the audit log as well as Django's own log."""

    formfield_overrides = BOUNDED_JSON

    def _audit(self, request: HttpRequest, action: str, obj: Model) -> None:
        queue = getattr(obj, "name", "") or getattr(obj, "queue", "")
        record_action(request.user, action_name(action, self.model._meta.model_name), queue=queue, detail=str(obj))

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        self._audit(request, "change" if change else "add", obj)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self._audit(request, "delete", obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            self._audit(request, "delete", obj)
        super().delete_queryset(request, queryset)


class LiveChangeList(ChangeList):
    """Attaches each listed queue's live figures from Redis (``obj.live``: QueueInfo, None when Redis has no
    such queue yet, or the error text), read once per page."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        inspector = inspector_for(request)
        for obj in self.result_list:
            try:
                obj.live = inspector.queue_info(obj.name)
            except QueueNotFoundError:
                obj.live = None
            except EngineError as exc:
                obj.live = str(exc)


@admin.register(QueueDefinition)
class QueueDefinitionAdmin(AuditedAdmin):
    list_display = ["name", "weight", "rank", "concurrency_cap", "rate", "state", "size", "tasks"]
    search_fields = ["name", "description"]
    actions = ["pause", "resume"]

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return LiveChangeList

    @admin.display(description="rate limit")
    def rate(self, obj: QueueDefinition) -> str:
        return str(RateLimit(obj.rate_limit, obj.rate_period))

    @admin.display(description="state")
    def state(self, obj: QueueDefinition) -> str:
        live = getattr(obj, "live", None)
        if isinstance(live, QueueInfo):
            return "paused" if live.paused else "running"
        return "no tasks yet" if live is None else f"unknown ({live})"

    @admin.display(description="size")
    def size(self, obj: QueueDefinition) -> str:
        live = getattr(obj, "live", None)
        if not isinstance(live, QueueInfo):
            return "-"
        return f"{live.size} ({live.pending} pending, {live.active} active, {live.archived} archived)"

    @admin.display(description="tasks")
    def tasks(self, obj: QueueDefinition) -> str:
        return str(format_html('<a href="{}">tasks</a>', tasks_url(obj.name)))

    def has_operate_permission(self, request: HttpRequest) -> bool:
        return can_operate(request.user)

    @admin.action(description="Pause the selected queues (in Redis)", permissions=["operate"])
    def pause(self, request: HttpRequest, queryset: QuerySet[QueueDefinition]) -> None:
        self._set_paused(request, queryset, True)

    @admin.action(description="Resume the selected queues (in Redis)", permissions=["operate"])
    def resume(self, request: HttpRequest, queryset: QuerySet[QueueDefinition]) -> None:
        self._set_paused(request, queryset, False)

    def _set_paused(self, request: HttpRequest, queryset: QuerySet[QueueDefinition], paused: bool) -> None:
        inspector = inspector_for(request)
        verb = "pause" if paused else "resume"
        for definition in queryset:
            try:
                (inspector.pause_queue if paused else inspector.unpause_queue)(definition.name)
            except QueueNotFoundError:
                self.message_user(
                    request,
                    f"{definition.name}: Redis does not know this queue yet (no task and "
                    f"no worker has served it), so it cannot be {verb}d.",
                    messages.WARNING,
                )
                continue
            except LayoutVersionError as exc:  # the same for every queue: say it once
                self.message_user(request, f"Nothing was {verb}d: {exc.message}", messages.ERROR)
                return
            except EngineError as exc:
                self.message_user(request, f"{definition.name}: {exc}", messages.ERROR)
                continue
            record_action(request.user, action_name(verb, "queue"), queue=definition.name, detail="from the admin")
            # The name as written, never first in the sentence, where the admin's messages capitalized it.
            self.message_user(request, f"Queue “{definition.name}” {verb}d.", messages.SUCCESS)


@admin.register(UniquePolicy)
class UniquePolicyAdmin(AuditedAdmin):
    list_display = ["type_pattern", "ttl"]
    search_fields = ["type_pattern"]


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(AuditedAdmin):
    list_display = ["__str__", "completed_retention", "archive_max_size", "archive_max_age"]
    search_fields = ["queue", "type_pattern"]


class ReadOnlyAdmin(admin.ModelAdmin):
    """An admin page that shows and never adds, changes or deletes."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def readable_detail(detail: str) -> str:
    """An entry's detail as a reader wants it: a JSON object (an ``edit_task`` entry's original and new payload
    and options) as one line per key, a payload's text with its own line breaks, nested values as indented JSON,
    instead of JSON-escaped text on one line; anything else as it is. Escaped by ``format_html``."""
    try:
        parsed = json.loads(detail)
    except ValueError:
        return detail or "—"
    if not isinstance(parsed, dict):
        return detail
    rows = format_html_join(
        "",
        "<dt><strong>{}</strong></dt><dd><pre style=\"white-space: pre-wrap; margin: 0 0 .5rem\">{}</pre></dd>",
        ((key, value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False))
         for key, value in parsed.items()),
    )  # fmt: skip
    return str(format_html("<dl>{}</dl>", rows))


@admin.register(AuditLog)
class AuditLogAdmin(ReadOnlyAdmin):
    """Read-only: entries are written by the actions themselves, never edited. The list and the entry show
    ``detail``, where payloads are masked by ``TASKS_REDACT``; an entry's unredacted original (kept only with
    ``TASKS_AUDIT_UNREDACTED``) is shown by its own page, to ``taskq.view_unredacted`` only, each read audited."""

    list_display = ["when", "username", "action", "queue", "tasks", "detail"]
    list_filter = ["action", "user", "queue", "created_at"]
    search_fields = ["username", "action", "queue", "detail"]
    date_hierarchy = "created_at"
    fields = readonly_fields = ["when", "user", "username", "action", "queue", "task_count", "task_ids_kept", "details"]

    @admin.display(description="when", ordering="created_at")
    def when(self, obj: AuditLog) -> str:
        return obj.when

    @admin.display(description="tasks", ordering="task_count")
    def tasks(self, obj: AuditLog) -> int:
        return int(obj.task_count)

    @admin.display(description="task ids")
    def task_ids_kept(self, obj: AuditLog) -> str:
        return obj.tasks_shown or "—"

    @admin.display(description="detail")
    def details(self, obj: AuditLog) -> str:
        return readable_detail(obj.detail)

    @admin.display(description="unredacted original")
    def unredacted_original(self, obj: AuditLog) -> str:
        url = reverse("admin:taskq_auditlog_unredacted", args=[obj.pk])
        return str(format_html('<a href="{}">Show unredacted original</a> (this look is audited)', url))

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*self.fields, *(["unredacted_original"] if self._may_reveal(request, obj) else [])]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return self.get_fields(request, obj)

    def _may_reveal(self, request: HttpRequest, obj: AuditLog | None) -> bool:
        return obj is not None and bool(obj.unredacted_detail) and can_see_unredacted(request.user)

    def get_urls(self) -> list[URLPattern]:
        reveal = path(
            "<int:object_id>/unredacted/",
            self.admin_site.admin_view(self.unredacted_view),
            name="taskq_auditlog_unredacted",
        )
        return [reveal, *super().get_urls()]

    def unredacted_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """Access: viewing the log and ``taskq.view_unredacted``; GET. Shows an entry's unredacted original and
        writes a ``task.view_unredacted`` entry naming it."""
        if request.method not in ("GET", "HEAD"):
            return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
        entry = get_object_or_404(AuditLog, pk=object_id)
        if not self.has_view_permission(request, entry) or not self._may_reveal(request, entry):
            if not entry.unredacted_detail:
                raise Http404("This entry keeps no unredacted original.")
            raise PermissionDenied(
                "Seeing it takes the “Can see redacted task payloads and results in full” permission."
            )
        record_unredacted_view(
            request.user, entry.queue, list(entry.task_ids or []), f"admin audit log entry {entry.pk}"
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "entry": entry,
            "title": f"Unredacted original of audit entry {entry.pk}",
        }
        return TemplateResponse(request, "admin/taskq/auditlog/unredacted.html", context)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or can_view(request.user)


@admin.register(Tasks)
class TasksAdmin(ReadOnlyAdmin):
    """Not a table: /admin/taskq/tasks/ lists a page of one queue's tasks in one state from Redis."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return can_view(request.user)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return can_view(request.user)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        return TaskBrowser(self, request, inspector_for(request)).respond()


@admin.register(PeriodicTask)
class PeriodicTaskAdmin(AuditedAdmin):
    """Periodic tasks; saving or deleting one mirrors the enabled set into Redis, and running schedulers follow."""

    list_display = ["name", "spec", "timezone", "task_type", "queue", "missed", "enabled", "entry_id"]
    list_filter = ["enabled", "queue", "missed"]
    search_fields = ["name", "task_type", "queue", "spec"]

    def _audit(self, request: HttpRequest, action: str, obj: Model) -> None:
        record_action(
            request.user, action_name(action, "periodictask"), queue=getattr(obj, "queue", ""), detail=str(obj)
        )

    # A payload under TASKS_REDACT is shown masked, and read-only, to a user without taskq.view_unredacted: the
    # form would show it in full, and saving the masked text back would overwrite the real one.
    def _masks_payload(self, request: HttpRequest, obj: PeriodicTask | None) -> bool:
        if obj is None or can_see_unredacted(request.user):
            return False
        try:
            entry = obj.entry()
        except EngineError:
            return bool(rules())  # a payload no entry can be made of is shown in full to nobody under rules
        return rules().hides(entry.type, entry.payload)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_fields(request, obj))  # the read-only fields come last: masked_payload too
        if self._masks_payload(request, obj) and "payload" in fields:
            fields[fields.index("payload")] = "masked_payload"
        return list(dict.fromkeys(fields))  # in the payload's place, once

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        readonly = list(super().get_readonly_fields(request, obj))
        return [*readonly, "masked_payload"] if self._masks_payload(request, obj) else readonly

    @admin.display(description="payload")
    def masked_payload(self, obj: PeriodicTask) -> str:
        try:
            entry = obj.entry()
        except EngineError:
            return MASK
        return masked(entry.type, entry.payload).decode("utf-8", "replace")

    @admin.display(description="entry id")
    def entry_id(self, obj: PeriodicTask) -> str:
        try:
            return str(obj.entry().id)
        except EngineError as exc:
            return f"invalid: {exc}"


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """HTTP API tokens. The secret is generated on save and shown once, in the confirmation message; only its
    hash is stored. Revoke rather than delete, so the last-used time stays on record."""

    formfield_overrides = BOUNDED_JSON

    list_display = ["name", "prefix", "queues", "namespaces", "created_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        secret = None if change else assign_secret(obj)
        super().save_model(request, obj, form, change)
        record_action(request.user, action_name("change" if change else "add", "apitoken"), detail=str(obj))
        if secret:
            messages.warning(
                request,
                f"The token of {shown(obj.name)} is {secret} — copy it now: "
                "it is not stored and will not be shown again.",
            )

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        record_action(request.user, action_name("revoke", "apitoken"), detail=", ".join(t.name for t in queryset))
        self.message_user(request, f"Revoked {count} token(s).")
