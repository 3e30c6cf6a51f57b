"""Search across queues with the search language (``queues/engine/search.py``): paged matches, and an action on
every match ("select all N matching"): confirmed with the count, audited, done task by task (each a short script
call, so Redis is never blocked), within the bound on the work one search does.

Deliberately shares its name with ``queues/engine/search.py``: this is the Search page (console views are named
after their pages), that the language it runs.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse

from taskq.queues.engine.actions import TASK_ACTIONS
from taskq.queues.engine.search import KEYS, QuerySyntaxError
from taskq.queues.engine.search_completion import InspectorSources, complete
from taskq.queues.redaction_access import mask_task_text, masked, rules
from taskq.queues.rendering import preview

from ..access import operator_action, viewer_page
from ..errors import bad_request
from ..forms import SearchActionForm, SearchCompletionForm, SearchForm, first_error
from ..page_render import render
from .actions import act_on_matches
from .common import acting_inspector, inspector, preference


def search_url(query: str, **params: object) -> str:
    return str(reverse("taskq:search")) + "?" + urlencode({"q": query, **{k: v for k, v in params.items() if v}})


@viewer_page
def search(request: HttpRequest) -> HttpResponse:
    """Access: viewers. Reads at most the inspector's scan bound of tasks (it says when the bound stopped it).
    Payloads are shown and searched as TASKS_REDACT masks them, whoever looks."""
    form = SearchForm(request.GET)
    if not form.is_valid():
        return bad_request(request, first_error(form))
    query, size = form.cleaned_data["q"], form.cleaned_data["size"] or preference(request).rows_per_page
    context: dict[str, object] = {"query": query, "keys": KEYS, "result": None, "error": ""}
    if query:
        try:
            result = inspector().search(query, page=form.cleaned_data["page"] or 1, size=size, redaction=rules())
        except QuerySyntaxError as exc:
            context["error"] = exc.message
            return render(request, "taskq/search.html", context, status=400)
        context["result"] = result
        context["rows"] = [(mask_task_text(task), preview(masked(task.type, task.payload))) for task in result.tasks]
        window = range(max(1, result.page - 2), min(result.pages, result.page + 2) + 1)
        context["page_links"] = [(n, search_url(query, page=n, size=form.cleaned_data["size"])) for n in window]
        # Only what some match's state allows, with how many it would act on: no "Cancel all 45" with none active.
        counts = {name: sum(a.applies_to(t.state) for t in result.matches) for name, a in TASK_ACTIONS.items()}
        context["actions"] = [(action, count) for action, count in counts.items() if count]
    return render(request, "taskq/search.html", context)


@viewer_page
def search_complete(request: HttpRequest) -> HttpResponse:
    """Access: viewers. The query box's completions (``queues/engine/search_completion.py``) at ``cursor`` of ``q``:
    ``{"start", "end", "options": [{"text", "label", "detail"}]}``, each option's text replacing ``q[start:end]``.
    Offers only what the search page shows anyone who may open it: the parser's keys, queue names, task types,
    states, and payload paths read from payloads masked by TASKS_REDACT (keys, never values). Bad input is a 400
    ``{"error": ...}``."""
    form = SearchCompletionForm(request.GET)
    if not form.is_valid():
        return JsonResponse({"error": first_error(form)}, status=400)
    sources = InspectorSources(inspector(), rules())
    found = complete(form.cleaned_data["q"], form.cleaned_data["cursor"], sources)
    options = [{"text": o.text, "label": o.label, "detail": o.detail} for o in found.options]
    return JsonResponse({"start": found.start, "end": found.end, "options": options})


@operator_action
def search_action(request: HttpRequest) -> HttpResponse:
    """Run, archive, delete or cancel every task the search matches, where its state allows; the others are
    counted as refused. Audited once, as ``search_<action>``, with the search and the counts."""
    form = SearchActionForm(request.POST)
    if not form.is_valid():
        return bad_request(request, first_error(form))
    query, action = form.cleaned_data["q"], form.cleaned_data["action"]
    insp = acting_inspector(request)
    result = insp.search(query, size=1, redaction=rules())  # QuerySyntaxError is a 400 (engine_errors)
    matches = [(task.queue, task.id, task.state) for task in result.matches]
    read, expected = (result.scanned, result.total), form.cleaned_data["expected"]
    act_on_matches(request, insp, action, matches, "search", json.dumps(query, ensure_ascii=False), read, expected)
    return redirect(search_url(query))
