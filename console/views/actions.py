"""Operator actions: pause, resume and delete a queue; run, archive, delete or cancel tasks, one by one, a
whole state at once, or every match of a filter or search.

Each is a POST checked by ``operator_action`` (login, permission, CSRF, not read-only), does its work through
the engine's inspector, records an audit entry of what it did, and redirects back with a message.

Deliberately shares its name with ``queues/engine/actions.py``, the engine's table of these actions (their states
and Inspector methods), which this module dispatches by.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from taskq.queues import audit
from taskq.queues.engine import FailedPreconditionError, QueueNotEmptyError, TaskNotFoundError
from taskq.queues.engine.actions import STATE_ACTIONS, TASK_ACTIONS, Action
from taskq.queues.redaction_access import rules

from ..access import operator_action
from ..errors import bad_request
from ..forms import DeleteQueueForm, StateBulkForm, TaskBatchForm, first_error
from .common import FILTER_SCAN, acting_inspector, queue_url, safe_next

#: How a message says what happened to the tasks, by task action (``actions.TASK_ACTIONS``).
DONE = {"run": "moved to pending", "archive": "archived", "delete": "deleted", "cancel": "asked to cancel"}


def perform(insp: Any, action: Action, *args: str) -> Any:
    """Do ``action`` through the inspector: the method the table names, given ``args`` (a queue, then a task id,
    a state or a workflow id). ``tests/engine/test_action_table.py`` checks that every method the table names
    exists with these arguments, so a renamed method fails a test rather than an operator's click."""
    return getattr(insp, action.method)(*args)


def _audit(
    request: HttpRequest,
    action: str,
    queue: str,
    task_ids: list[str] | None = None,
    detail: str = "",
    task_count: int | None = None,
) -> None:
    audit.record_action(request.user, action, queue=queue, task_ids=task_ids, detail=detail, task_count=task_count)


@operator_action
def pause_queue(request: HttpRequest, queue: str) -> HttpResponse:
    done = f"Queue {queue} paused: workers take no new tasks from it."
    return _paused_or_resumed(request, queue, "pause_queue", done)


@operator_action
def resume_queue(request: HttpRequest, queue: str) -> HttpResponse:
    return _paused_or_resumed(request, queue, "resume_queue", f"Queue {queue} resumed.")


def _paused_or_resumed(request: HttpRequest, queue: str, action: str, done: str) -> HttpResponse:
    """``action`` is the audit log's name, after the button (Pause: pause_queue; Resume: resume_queue). A queue
    already in the state asked for is left as it is and said so (asynq's Inspector refuses to pause a paused
    queue: a double click, or two operators at once), with nothing audited."""
    insp = acting_inspector(request)
    change = insp.pause_queue if action == "pause_queue" else insp.unpause_queue
    try:
        change(queue)
    except FailedPreconditionError as exc:
        messages.info(request, f"Queue {queue} left as it was: {exc.message}.")
    else:
        _audit(request, action, queue)
        messages.success(request, done)
    return redirect(safe_next(request, request.POST.get("next"), "taskq:dashboard"))


@operator_action
def delete_queue(request: HttpRequest, queue: str) -> HttpResponse:
    """Refused while the queue holds tasks, unless forced; refused while tasks are active even then."""
    form = DeleteQueueForm(request.POST)
    if not form.is_valid():
        return bad_request(request, first_error(form))
    force = form.cleaned_data["force"]
    try:
        acting_inspector(request).delete_queue(queue, force=force)
    except QueueNotEmptyError as exc:
        # The engine's reply ends with its own hint ("; force to delete them"): the console's names the checkbox.
        reason, hint = (exc.message, "") if force else (exc.message.split(";")[0], " Tick “force” to delete them too.")
        messages.error(request, f"Queue {queue} was not deleted: {reason}.{hint}")
        return redirect(safe_next(request, request.POST.get("next"), "taskq:dashboard"))
    _audit(request, "delete_queue", queue, detail="forced" if force else "")
    messages.success(request, f"Queue {queue} deleted.")
    return redirect("taskq:dashboard")


#: Task ids a refusal message names per reason; the rest of them are counted ("and 12 more").
IDS_NAMED = 10

Refusals = dict[str, list[str]]  # why -> the ids refused for that reason, in the order they were tried


def act_on_tasks(insp: Any, action: str, targets: Iterable[tuple[str, str]]) -> tuple[dict[str, list[str]], Refusals]:
    """Apply one of TASK_ACTIONS to each (queue, task id), task by task: the ids done, by queue, and the ids
    refused, by why (gone, or in a state the action does not take)."""
    spec = TASK_ACTIONS[action]
    done: dict[str, list[str]] = {}
    refused: Refusals = {}
    for queue, task_id in targets:
        try:
            perform(insp, spec, queue, task_id)
        except TaskNotFoundError:
            refused.setdefault(GONE, []).append(task_id)
        except FailedPreconditionError as exc:
            refused.setdefault(exc.message, []).append(task_id)  # "task is active, it cannot be run"
        else:
            done.setdefault(queue, []).append(task_id)
    return done, refused


#: Why a task that was there when the page was read is not acted on: it is no longer stored.
GONE = "gone since the page was read (succeeded without retention, or deleted)"


def refusal_report(refused: Refusals, noun: str = "task") -> str:
    """Every refused task, counted, and why, its ids named (IDS_NAMED per reason at most): "2 tasks refused, left
    as they were — task is active, it cannot be run (1): a1; gone since the page was read (…) (1): b2."."""
    total = sum(len(ids) for ids in refused.values())
    parts = [f"{why} ({len(ids)}): {_named(ids)}" for why, ids in refused.items()]
    left = "left as it was" if total == 1 else "left as they were"
    return f"{total} {noun}{'s' if total != 1 else ''} refused, {left} — " + "; ".join(parts) + "."


def _named(ids: list[str]) -> str:
    """The ids, IDS_NAMED of them at most, the rest counted: "a1, b2 and 12 more"."""
    return ", ".join(ids[:IDS_NAMED]) + (f" and {len(ids) - IDS_NAMED} more" if len(ids) > IDS_NAMED else "")


def unmatched_report(expected: int | None, found: int, what: str, unmatched: Refusals | None = None) -> str:
    """When the operator confirmed ``expected`` tasks and the action found ``found``: what became of the others,
    so no task of the count the confirmation named goes unmentioned. ``unmatched``: the confirmed tasks that no
    longer matched, by why, when their ids are known: each is named (IDS_NAMED per reason at most), as refusals
    are."""
    if unmatched:
        gone = sum(len(ids) for ids in unmatched.values())
        said = f"You confirmed {expected}; {gone} of them no longer {what} when the action ran and were left alone — "
        said += "; ".join(f"{why} ({len(ids)}): {_named(ids)}" for why, ids in unmatched.items()) + "."
        extra = found - ((expected or 0) - gone)
        return said + (f" {extra} more {what} by the time the action ran, and were included." if extra > 0 else "")
    if expected is None or expected == found:
        return ""
    if found < expected:
        missing = expected - found
        return (
            f"You confirmed {expected}; {missing} of them no longer {what} when the action ran (moved or deleted "
            "since the page was read) and were left alone."
        )
    return f"You confirmed {expected}; {found - expected} more {what} by the time the action ran, and were included."


@dataclass(frozen=True)
class Confirmed:
    """The ids of a filter's matches the operator confirmed, as the page found them in ``queue``'s ``state`` tab
    (it posts them up to ``forms.CONFIRMED_IDS`` matches)."""

    ids: list[str]
    queue: str
    state: str


def act_on_matches(
    request: HttpRequest,
    insp: Any,
    action: str,
    matches: list[tuple[str, str, str]],
    source: str,
    terms: str,
    read: tuple[int, int],
    expected: int | None = None,
    confirmed: Confirmed | None = None,
) -> None:
    """Apply one of TASK_ACTIONS to every match (queue, task id, state) that ``source`` found: the search page's
    "act on every match" (``search``) and the queue page's bulk bar while a filter is active (``filter``), task by
    task (``act_on_tasks``: each a short script call, so Redis is never blocked). A match in a state the action does
    not take is refused without a call; one that moved or went since it was read is refused by the inspector.
    Audited once per queue acted on (once if none) as ``<source>_<action>``, with ``terms`` (the search or the
    filter) and the counts: done, refused, and any confirmed tasks that no longer matched (skipped). ``read`` is
    (tasks read, tasks held): fewer read means the search stopped at its bound, and the messages say to run the
    action again for the rest. ``expected``: the count the operator confirmed, and ``confirmed`` the ids when the
    page posted them; the messages account for every task of it, and name each one that no longer matched, and
    why."""
    if confirmed is not None:
        expected = len(confirmed.ids)  # what the confirmation named, counted from the ids it named
    allowed = TASK_ACTIONS[action].states
    takes = [(queue, task_id) for queue, task_id, state in matches if state in allowed]
    not_taken: Refusals = {}
    for _queue, task_id, state in matches:
        if state not in allowed:
            not_taken.setdefault(f"task is {state}; {action} takes {', '.join(sorted(allowed))}", []).append(task_id)
    done, refused_moved = act_on_tasks(insp, action, takes)
    refused_by_why = {**not_taken, **refused_moved}
    refused = sum(len(ids) for ids in refused_by_why.values())
    count = sum(len(ids) for ids in done.values())
    unmatched = _unmatched(insp, confirmed, {task_id for _queue, task_id, _state in matches})
    skipped = _skipped(expected, confirmed, len(matches), unmatched)
    scanned, total = read
    bound = "" if scanned >= total else f"; the {source} read {scanned} of {total} tasks (its bound)"
    gone = f", {skipped} no longer matched (skipped)" if skipped else ""
    detail = f"{source} {terms}: {count} done, {refused} refused{gone}{bound}"
    for queue, ids in done.items():
        audit.record_action(request.user, f"{source}_{action}", queue=queue, task_ids=ids, detail=detail)
    if not done:
        audit.record_action(request.user, f"{source}_{action}", detail=detail)
    messages.success(request, f"{count} matching task{'s' if count != 1 else ''} {DONE[action]}.")
    if refused:
        messages.warning(request, refusal_report(refused_by_why, "matching task"))
    said = unmatched_report(expected, len(matches), "matched", unmatched)
    if said:
        messages.warning(request, said)
    if bound:
        read_of = f"{scanned} of {total} tasks read"
        messages.warning(request, f"The {source} stopped at its bound ({read_of}): run the action again for the rest.")


def _unmatched(insp: Any, confirmed: Confirmed | None, found: set[str]) -> Refusals:
    """The confirmed ids the action no longer found among the matches, by why: gone, in another state now, or
    still in the tab's state but no longer matching the filter (its type or payload changed, an edit)."""
    unmatched: Refusals = {}
    if confirmed is None:
        return unmatched
    for task_id in confirmed.ids:
        if task_id in found:
            continue
        try:
            now = insp.get_task(confirmed.queue, task_id).state
        except TaskNotFoundError:
            why = GONE
        else:
            why = (
                f"now {now}, no longer {confirmed.state}" if now != confirmed.state else "no longer matches the filter"
            )
        unmatched.setdefault(why, []).append(task_id)
    return unmatched


def _skipped(expected: int | None, confirmed: Confirmed | None, found: int, unmatched: Refusals) -> int:
    """How many confirmed tasks were left alone because they no longer matched: those named when the ids were
    posted, else what the count says (the confirmed count less the matches found, when fewer were found)."""
    if confirmed is not None:
        return sum(len(ids) for ids in unmatched.values())
    return 0 if expected is None else max(0, expected - found)


@operator_action
def task_batch(request: HttpRequest, queue: str) -> HttpResponse:
    """Run, archive, delete or cancel the selected tasks; each one that cannot be (gone, wrong state) is
    reported, the others are done."""
    form = TaskBatchForm(request.POST)
    if not form.is_valid():
        return bad_request(request, first_error(form))
    action, ids = form.cleaned_data["action"], form.cleaned_data["task_ids"]
    back = safe_next(request, form.cleaned_data["next"], queue_url(queue))
    if not ids:
        messages.warning(request, "No tasks selected.")
        return redirect(back)
    insp = acting_inspector(request)
    insp.queue_info(queue)  # an unknown queue is a 404 before anything else
    done_by_queue, refused = act_on_tasks(insp, action, [(queue, task_id) for task_id in ids])
    done = done_by_queue.get(queue, [])
    refused_count = sum(len(ids) for ids in refused.values())
    if done:
        _audit(request, TASK_ACTIONS[action].method, queue, done, detail=f"{refused_count} refused" if refused else "")
        messages.success(request, f"{len(done)} task{'s' if len(done) != 1 else ''} {DONE[action]}.")
    if refused:
        messages.error(request, refusal_report(refused))
    if action == "delete" and len(ids) == 1 and done and "/tasks/" in back:
        back = queue_url(queue)  # the task page of a deleted task would only say 404
    return redirect(back)


@operator_action
def state_bulk(request: HttpRequest, queue: str) -> HttpResponse:
    """Run, archive, delete or cancel every task of one state, in chunks (the engine's bulk scripts); with a
    filter (type, text), every match of the filter instead (see ``filter_bulk``)."""
    form = StateBulkForm(request.POST)
    if not form.is_valid():
        return bad_request(request, first_error(form))
    if form.filtering:
        return filter_bulk(request, queue, form.cleaned_data)
    action, state = form.cleaned_data["action"], form.cleaned_data["state"]
    spec = STATE_ACTIONS[action]
    count = perform(acting_inspector(request), spec, queue, *([state] if spec.takes_state else []))
    expected = form.cleaned_data["expected"]
    went = f"; confirmed {expected}, {expected - count} no longer {state} (skipped)" if (expected or 0) > count else ""
    _audit(request, action, queue, detail=f"state={state}{went}", task_count=count)
    messages.success(request, f"{count} {state} task{'s' if count != 1 else ''} {DONE[action.removesuffix('_all')]}.")
    unmatched = unmatched_report(expected, count, f"were {state}")
    if unmatched:
        messages.warning(request, unmatched)
    return redirect(queue_url(queue, state=state))


def filter_bulk(request: HttpRequest, queue: str, data: dict[str, Any]) -> HttpResponse:
    """The bulk bar while the queue page's filter is active: the action on every match the filter finds, as the
    page found them (payloads masked as TASKS_REDACT says), within the bound of one filter's scan, task by task
    (``act_on_matches``, as the search page's action on every match). The audit entry records the filter."""
    action, state, task_type, text = (data[k] for k in ("action", "state", "type", "text"))
    insp = acting_inspector(request)
    found = insp.search_tasks(
        queue, state, task_type=task_type or None, text=text or None, limit=1, scan_limit=FILTER_SCAN, redaction=rules()
    )
    # The audit entry keeps the filter whole, written as JSON like every value the console quotes.
    terms = (
        f"state={state} type={json.dumps(task_type, ensure_ascii=False)} text={json.dumps(text, ensure_ascii=False)}"
    )
    matches = [(queue, task_id, state) for task_id in found.match_ids]
    read = (found.scanned, found.total)
    confirmed = Confirmed(data["confirmed"], queue, state) if data["confirmed"] is not None else None
    act_on_matches(
        request, insp, action.removesuffix("_all"), matches, "filter", terms, read, data["expected"], confirmed
    )
    return redirect(queue_url(queue, state=state, type=task_type, text=text))
