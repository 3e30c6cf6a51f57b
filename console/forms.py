"""Every input the console accepts, parsed by a form: query strings of the pages and the bodies of actions.

An invalid value is a 400 with the form's message, never a 500 (no ``int(request.GET["page"])``). Numbers that
are valid but out of range (a page past the end) are clamped by the views.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone

from taskq.queues.conf import taskq_settings
from taskq.queues.engine import ValidationError as EngineValidationError
from taskq.queues.engine import nesting
from taskq.queues.engine import validation as check
from taskq.queues.engine.actions import STATE_ACTIONS, TASK_ACTIONS
from taskq.queues.engine.quoting import shown
from taskq.queues.engine.series import DEFAULT_RANGE, RANGES
from taskq.queues.engine.validation import escape_surrogates
from taskq.queues.models import validate_queue_name

from .models import ROWS_PER_PAGE_CHOICES, ConsolePreference

#: The tab order of the queue page, asynqmon's, with the tasks waiting for their dependencies after aggregating.
STATES = ("active", "pending", "aggregating", "waiting", "scheduled", "retry", "archived", "completed")
HISTORY_DAYS = (1, 7, 30, 90)
MAX_PAGE = 10**9
MAX_TASK_ID = 128
MAX_BATCH = 1000


def valid_text(value: str) -> None:
    """Every text field: the engine's rule for every string (``validation.text_problem``). A browser sends UTF-8
    that Django decodes (bytes that are not UTF-8 become U+FFFD there), so this refuses what code handing a form
    its data directly may give."""
    try:
        check.text(value, "the text", "console")
    except EngineValidationError as exc:
        raise ValidationError(exc.message) from None


def validate_new_type(value: str) -> None:
    """A new task's type (the new task and edit forms): the engine's rule for names (``validation.task_type``):
    visible, without control or invisible characters and without leading or trailing blanks. Not stripped
    first: a name is taken as typed or refused, never rewritten."""
    try:
        check.task_type(value, "console")
    except EngineValidationError as exc:
        raise ValidationError(exc.message) from None


def first_error(form: forms.Form) -> str:
    """One readable line naming the first bad field, for a 400 page."""
    for name, errors in form.errors.items():
        label = name if name != "__all__" else "input"
        return f"{label}: {errors[0]}"
    return "invalid input"


def _range_field() -> forms.ChoiceField:
    """The time charts' range (``?range=``), one of the engine's ranges; empty means the last hour."""
    names = ", ".join(RANGES)
    return forms.ChoiceField(
        choices=[(r, r) for r in RANGES],
        required=False,
        error_messages={"invalid_choice": f"“%(value)s” is not a chart range; use one of {names}"},
    )


class SeriesQuery(forms.Form):
    """The query string of a page with time charts: their range, and ``fragment=series`` to get the charts
    alone (what the live page fetches to redraw them)."""

    range = _range_field()
    fragment = forms.ChoiceField(choices=[("series", "series")], required=False)

    def clean_range(self) -> str:
        return self.cleaned_data.get("range") or DEFAULT_RANGE


class DashboardQuery(SeriesQuery):
    days = forms.TypedChoiceField(choices=[(d, d) for d in HISTORY_DAYS], coerce=int, required=False)

    def clean_days(self) -> int:
        return self.cleaned_data.get("days") or 7


class TaskFilter(forms.Form):
    """The queue page's filter of a state's tasks: a type prefix and a text in the payload or last error. The
    page's query string carries it, and so does the bulk bar's action while it is active."""

    type = forms.CharField(max_length=256, required=False, strip=True, validators=[valid_text])
    text = forms.CharField(max_length=200, required=False, strip=False, validators=[valid_text])

    @property
    def filtering(self) -> bool:
        return bool(self.cleaned_data.get("type") or self.cleaned_data.get("text"))


class TaskListQuery(SeriesQuery, TaskFilter):
    """The queue page's query string: which tab, which page, and the optional search and filters."""

    state = forms.ChoiceField(choices=[(s, s) for s in STATES], required=False)
    page = forms.IntegerField(min_value=1, required=False)
    size = forms.TypedChoiceField(choices=ROWS_PER_PAGE_CHOICES, coerce=int, required=False)
    task_id = forms.CharField(max_length=MAX_TASK_ID, required=False, strip=True, validators=[valid_text])

    def clean_state(self) -> str:
        return self.cleaned_data.get("state") or "active"

    def clean_page(self) -> int:
        # Far past the end is clamped to the last page by the view; this only bounds the arithmetic.
        return min(self.cleaned_data.get("page") or 1, MAX_PAGE)


class TaskDetailQuery(forms.Form):
    full = forms.ChoiceField(choices=[("payload", "payload"), ("result", "result")], required=False)
    unredacted = forms.BooleanField(required=False)


class TaskIdsField(forms.Field):
    """A list of task ids from repeated form fields (``task_ids=a&task_ids=b``)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: object) -> list[str]:
        if not value:
            return []
        if not isinstance(value, list | tuple):
            raise ValidationError("expected a list of task ids")
        ids = [str(v) for v in value]
        if len(ids) > MAX_BATCH:
            raise ValidationError(f"at most {MAX_BATCH} tasks per action, got {len(ids)}")
        for task_id in ids:
            if not task_id or len(task_id) > MAX_TASK_ID:
                raise ValidationError(f"a task id is 1 to {MAX_TASK_ID} characters long")
        return list(dict.fromkeys(ids))  # a row selected twice is acted on once


class TaskBatchForm(forms.Form):
    action = forms.ChoiceField(choices=[(a, a) for a in TASK_ACTIONS])
    task_ids = TaskIdsField(required=False)
    next = forms.CharField(max_length=2000, required=False, validators=[valid_text])


#: The most match ids a filter's bulk bar posts with its count: above it only the count is confirmed, and the
#: message counts the matches that went without naming them (a page of ten thousand ids is not worth its weight).
CONFIRMED_IDS = MAX_BATCH


class ConfirmedIdsField(forms.CharField):
    """The ids of the matches the operator confirmed, as the page found them: a JSON array of task ids."""

    def to_python(self, value: object) -> list[str] | None:
        text = super().to_python(value)
        if not text:
            return None
        try:
            ids = json.loads(text)
        except ValueError:
            raise ValidationError("expected a JSON array of task ids") from None
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ValidationError("expected a JSON array of task ids")
        if len(ids) > CONFIRMED_IDS:
            raise ValidationError(f"at most {CONFIRMED_IDS} task ids, got {len(ids)}")
        if not all(0 < len(i) <= MAX_TASK_ID for i in ids):
            raise ValidationError(f"a task id is 1 to {MAX_TASK_ID} characters long")
        return list(dict.fromkeys(ids))


class StateBulkForm(TaskFilter):
    """An action on every task of a state or, while a filter is given, on every match of the filter."""

    action = forms.ChoiceField(choices=[(a, a) for a in STATE_ACTIONS])
    state = forms.ChoiceField(choices=[(s, s) for s in STATES])
    expected = forms.IntegerField(min_value=0, required=False)  # the count the confirmation named
    confirmed = ConfirmedIdsField(required=False, strip=True)  # with a filter: the ids the confirmation named

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean()
        action, state = data.get("action"), data.get("state")
        if action and state and not STATE_ACTIONS[action].applies_to(state):
            raise ValidationError(f"{action} does not apply to {state} tasks")
        return data


class DeleteQueueForm(forms.Form):
    force = forms.BooleanField(required=False)


class PreferenceForm(forms.ModelForm):
    rows_per_page = forms.TypedChoiceField(choices=ROWS_PER_PAGE_CHOICES, coerce=int, label="Rows per page")
    theme = forms.ChoiceField(choices=ConsolePreference.Theme.choices, widget=forms.RadioSelect)

    class Meta:
        model = ConsolePreference
        fields = ["rows_per_page", "theme"]


def payload_as_text(payload: bytes) -> dict[str, str]:
    """A stored payload as the payload forms show it (``payload`` and ``encoding``): pretty JSON, else UTF-8 text,
    else base64."""
    try:
        pretty = json.dumps(nesting.loads(payload), indent=2, ensure_ascii=False)
        return {"payload": escape_surrogates(pretty), "encoding": "json"}
    except ValueError:
        pass
    try:
        return {"payload": payload.decode(), "encoding": "text"}
    except UnicodeDecodeError:
        return {"payload": base64.b64encode(payload).decode(), "encoding": "base64"}


class PayloadForm(forms.Form):
    """A payload as an operator types it (JSON, text or base64), turned into the bytes stored
    (``cleaned_data["payload_bytes"]``): the edit form's and the new task form's. JSON is checked for its depth
    here (``TASKS_MAX_PAYLOAD_DEPTH``) and stored compact; the engine checks the size. A payload that cannot be read
    is refused on the Payload field, where the other fields show their own refusals, not above the form."""

    ENCODINGS = (("json", "JSON"), ("text", "text (UTF-8)"), ("base64", "base64 (raw bytes)"))

    payload = forms.CharField(widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}), required=False,
                              strip=False, max_length=4 * 1024 * 1024, validators=[valid_text])  # fmt: skip
    encoding = forms.ChoiceField(choices=ENCODINGS)

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean() or {}
        if "payload" not in data:  # refused by the field itself (too long): one reason is enough
            return data
        text, encoding = data["payload"], data.get("encoding")
        if encoding == "json":
            try:
                value = nesting.loads(text, taskq_settings().max_payload_depth)
            except nesting.TooDeepError as exc:
                self.add_error("payload", f"the payload is {exc} (TASKS_MAX_PAYLOAD_DEPTH)")
            except ValueError as exc:
                self.add_error("payload", f"the payload is not valid JSON: {exc}")
            else:
                data["payload_bytes"] = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        elif encoding == "base64":
            try:
                data["payload_bytes"] = base64.b64decode(text.strip(), validate=True)
            except (binascii.Error, ValueError) as exc:
                self.add_error("payload", f"the payload is not valid base64: {exc}")
        elif encoding == "text":
            data["payload_bytes"] = text.encode()
        return data


class EditTaskForm(PayloadForm):
    """Edit and retry: the new payload (as JSON, text or base64), its type and the options an operator may change
    (the engine checks the type and the queue name: ``Inspector.edit_task``)."""

    type = forms.CharField(max_length=256, required=False, strip=False, validators=[validate_new_type],
                           help_text="change it when no worker handles this one (misspelt)")  # fmt: skip
    # Moving a task gives the other queue a new task: named as enqueue names one (no '.', '..', '*', '?', '[').
    queue = forms.CharField(max_length=128, required=False, strip=False, help_text="empty: its own queue",
                            validators=[validate_queue_name])  # fmt: skip
    max_retry = forms.IntegerField(min_value=0, max_value=1000, required=False)
    timeout = forms.FloatField(min_value=0.001, required=False, help_text="seconds")


class NewTaskQuery(forms.Form):
    """The new task form's query string: the context it was opened from (a queue page, a task type page)."""

    queue = forms.CharField(max_length=128, required=False, strip=True, validators=[valid_text])
    type = forms.CharField(max_length=256, required=False, strip=True, validators=[valid_text])


def _datetime_field(label: str) -> forms.DateTimeField:
    # A browser's datetime picker sends "2026-12-01T09:00:30"; read in the console's time zone (TIME_ZONE).
    widget = forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}, format="%Y-%m-%dT%H:%M:%S")
    return forms.DateTimeField(label=label, required=False, widget=widget)


def _seconds_field(label: str, help_text: str, low: float = 0.0) -> forms.FloatField:
    return forms.FloatField(label=label, min_value=low, required=False, help_text=help_text)


#: Where the engine's refusal of an enqueue belongs on the form, by the words its message starts with
#: (``taskq.queues.engine.validation`` names what it refuses first: "task type ...", "payload is ...").
ENGINE_SUBJECTS = {
    "task type": "type",
    "queue name": "queue",
    "header": "headers",  # "headers must be ...", "header 'x': ..."
    **{name: name for name in ("payload", "process_at", "process_in", "deadline", "unique", "retention", "timeout")},
}


class NewTaskForm(PayloadForm):
    """A task created from the console: its type (any name; the page suggests those its queue has seen), queue,
    payload and the options of ``Client.enqueue``. The engine checks the names and the payload's size when it
    enqueues; ``engine_refusal`` puts what it refuses on the field it concerns."""

    field_order = ["type", "queue", "payload", "encoding"]

    type = forms.CharField(max_length=256, strip=False, validators=[validate_new_type],
                           help_text="suggested: the types this queue has seen",
                           widget=forms.TextInput(attrs={"list": "task-types", "autocomplete": "off"}))  # fmt: skip
    queue = forms.CharField(max_length=128, strip=False, validators=[validate_queue_name], help_text="a new name "
                            "creates the queue", widget=forms.TextInput(attrs={"list": "queue-names"}))  # fmt: skip
    process_at = _datetime_field("Process at")
    process_in = _seconds_field("Process in", "seconds from now; empty (and no process at): now")
    max_retry = forms.IntegerField(min_value=0, max_value=1000, required=False, help_text="empty: 25")
    timeout = _seconds_field("Timeout", "seconds per attempt; empty: the worker's default", 0.001)
    deadline = _datetime_field("Deadline")
    unique = _seconds_field("Unique TTL", "seconds: a task of the same type and payload is refused meanwhile; "
                            "empty: the unique policy, if any", 0.001)  # fmt: skip
    retention = _seconds_field("Retention", "seconds a completed task is kept; empty: the retention policy, if any")
    headers = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}), required=False,
                              max_length=64 * 1024, validators=[valid_text],
                              help_text="one per line: name: value")  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        zone = timezone.get_current_timezone_name()
        self.fields["process_at"].help_text = f"{zone}; or give process in, not both"
        self.fields["deadline"].help_text = f"{zone}: past it the task is not run again"

    def clean_headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for number, line in enumerate(self.cleaned_data["headers"].splitlines(), 1):
            if not line.strip():
                continue
            name, colon, value = line.partition(":")
            if not colon or not name.strip():
                raise ValidationError(f"line {number}: write a header as name: value")
            if name.strip() in headers:
                raise ValidationError(f"line {number}: header {shown(name.strip())} is given twice")
            headers[name.strip()] = value.strip()
        return headers

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("process_at") is not None and data.get("process_in") is not None:
            self.add_error("process_in", "give process at or process in, not both")
        return data

    def enqueue_options(self) -> dict[str, Any]:
        """The ``Client.enqueue`` options the form gives; those left empty take the engine's defaults."""
        data = self.cleaned_data
        options: dict[str, Any] = {"queue": data["queue"], "headers": data["headers"] or None}
        for name in ("process_at", "process_in", "max_retry", "timeout", "deadline", "unique", "retention"):
            if data.get(name) is not None:
                options[name] = data[name]
        return options

    def engine_refusal(self, message: str) -> None:
        """Show the engine's refusal of the enqueue on the field it names, else above the form."""
        field = next((f for words, f in ENGINE_SUBJECTS.items() if message.startswith(words)), None)
        self.add_error(field, f"not created: {message}")


class WorkflowListQuery(forms.Form):
    """The workflows list's query string: one queue (empty: every queue) and a page."""

    queue = forms.CharField(max_length=256, required=False, strip=True)
    page = forms.IntegerField(min_value=1, max_value=MAX_PAGE, required=False)

    def clean_page(self) -> int:
        return self.cleaned_data.get("page") or 1


class SearchForm(forms.Form):
    """The search page's query string: the search (``queues/engine/search.py`` has the language) and the page."""

    q = forms.CharField(max_length=1000, required=False, strip=True, validators=[valid_text])
    page = forms.IntegerField(min_value=1, max_value=MAX_PAGE, required=False)
    size = forms.TypedChoiceField(choices=ROWS_PER_PAGE_CHOICES, coerce=int, required=False)


class SearchCompletionForm(forms.Form):
    """The query box's question: the search as typed so far and where the cursor is in it (its end when not
    given)."""

    q = forms.CharField(max_length=1000, required=False, strip=False, validators=[valid_text])
    cursor = forms.IntegerField(min_value=0, max_value=1000, required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        text = data["q"] = data.get("q") or ""
        if data.get("cursor") is None and "cursor" not in self.errors:
            data["cursor"] = len(text)
        elif data.get("cursor") is not None and data["cursor"] > len(text):
            self.add_error("cursor", f"a position in the search, 0 to its length ({len(text)})")
        return data


class SearchActionForm(forms.Form):
    """An action on every task a search matches."""

    q = forms.CharField(max_length=1000, strip=True, validators=[valid_text])
    action = forms.ChoiceField(choices=[(a, a) for a in TASK_ACTIONS])
    expected = forms.IntegerField(min_value=0, required=False)  # the count the confirmation named
