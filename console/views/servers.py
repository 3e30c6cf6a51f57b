"""The servers page (every worker process with a current heartbeat, and the tasks it runs, then those that ended in
the last hour), one server's page (or, once it has ended, its record), and the operator's quiet and stop."""

from __future__ import annotations

import time
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from taskq.queues import audit
from taskq.queues.engine import ServerNotFoundError
from taskq.queues.engine.clock import to_ms

from ..access import operator_action, viewer_page
from ..page_render import render
from ..renderers import server_row
from .common import absent_on_asynq, acting_inspector, inspector


@viewer_page
def servers(request: HttpRequest) -> HttpResponse:
    """Access: viewers. Reads the server registry (a sorted set by heartbeat) and each server's workers hash, and
    the records of the servers that ended within ``TASKS_SERVER_RECORD_SECONDS``."""
    engine = inspector()
    listed = engine.servers()
    fleet = [
        fleet_form("quiet", [s.id for s in listed if s.status == "active"]),
        fleet_form("stop", [s.id for s in listed if s.status != "stopping"]),
    ]
    rows = [server_row(s) for s in listed]
    context = {"rows": rows, "ended": engine.ended_servers(), "fleet": fleet, "rendered_at": to_ms(time.time())}
    return render(request, "taskq/servers.html", context)


@viewer_page
def server_detail(request: HttpRequest, server_id: str) -> HttpResponse:
    """Access: viewers. One server: where it runs, what it serves and how, its heartbeat, what it runs now (live,
    as on the servers page) and what it has finished since it started; operators may quiet or stop it. Once it
    has ended: its record (how and when, and what became of each task it held); 404 when there is none."""
    engine = inspector()
    try:
        server = engine.server(server_id)
    except ServerNotFoundError:
        record = engine.ended_server(server_id)  # a ServerNotFoundError of its own: a 404 naming both cases
        queues = sorted(record.server.queues.items(), key=lambda item: (-item[1], item[0]))
        return render(request, "taskq/server_ended.html", {"record": record, "queues": queues})
    context = {"row": server_row(server), "open_details": True}
    return render(request, "taskq/server.html", context)


#: What each control does once the server acknowledged, as the message after it says.
CONTROLS = {
    "quiet": "quieted: it fetches no new task, gave back the tasks it had fetched ahead, and finishes the ones it runs",
    "stop": "is stopping: it finishes or requeues what it runs and exits; this page then shows how it ended",
}
#: Seconds the console waits for the server's acknowledgement before answering: it comes within milliseconds
#: from a listening server; one that was not listening acts at its next heartbeat.
ACK_WAIT = 3.0


@operator_action
def control_server(request: HttpRequest, server_id: str, action: str) -> HttpResponse:
    """Quiet or stop a server through Redis (``Inspector.control_server``), audited as ``<action>_server``, and
    wait briefly for its acknowledgement, so the page it returns to shows the new state."""
    absent_on_asynq("control")
    engine = acting_inspector(request)
    engine.control_server(server_id, action)
    audit.record_action(request.user, f"{action}_server", detail=f"server {server_id}")
    if engine.wait_for_acknowledgement(server_id, action, ACK_WAIT) is not None:
        messages.success(request, f"Server {server_id} {CONTROLS[action]}.")
    else:
        messages.warning(
            request,
            f"Server {server_id} was asked to {action} but has not acknowledged within {ACK_WAIT:g} s; "
            "it acts at its next heartbeat if it is alive.",
        )
    return redirect(reverse("taskq:server", args=[server_id]))


#: Quiet all and Stop all, as the message after them says.
FLEET_CONTROLS = {"quiet": "quieted", "stop": "asked to stop"}


def fleet_form(action: str, ids: list[str]) -> dict[str, Any]:
    """The Quiet all or Stop all form of the servers list: the ids it sends (those listed that it would change),
    its button and its confirmation, which names their count."""
    n, s = len(ids), "" if len(ids) == 1 else "s"
    confirm = {
        "quiet": f"Quiet all {n} active server{s}? Each fetches no new task and finishes what it runs; "
        f"{'it stays' if n == 1 else 'they stay'} quiet until {'it stops' if n == 1 else 'they stop'}.",
        "stop": f"Stop all {n} server{s}? Each shuts down gracefully: running tasks get its shutdown timeout to "
        "finish, the rest go back to pending.",
    }[action]
    label = f"{action.capitalize()} all ({n})"
    url = reverse(f"taskq:servers-{action}-all")
    return {"action": action, "url": url, "ids": ids, "confirm": confirm, "label": label, "danger": action == "stop"}


@operator_action
def control_all_servers(request: HttpRequest, action: str) -> HttpResponse:
    """Quiet or stop every server the operator saw listed and confirmed (the form sends their ids, so the count the
    confirmation named is the count acted on; a server that ended or already did so meanwhile is left out), through
    ``Inspector.control_servers``. One audit entry, ``<action>_all_servers``, names the servers asked. Waits up to
    ``ACK_WAIT`` seconds in all for their acknowledgements, as the per-server action does."""
    absent_on_asynq("control")
    engine = acting_inspector(request)
    asked = engine.control_servers(request.POST.getlist("server"), action)
    if not asked:
        messages.info(request, f"No listed server is left to {action}: the list has changed since it was shown.")
        return redirect(reverse("taskq:servers"))
    audit.record_action(request.user, f"{action}_all_servers", detail=f"servers {', '.join(asked)}")
    deadline = time.monotonic() + ACK_WAIT
    silent = [
        server_id
        for server_id in asked
        if engine.wait_for_acknowledgement(server_id, action, max(0.0, deadline - time.monotonic())) is None
    ]
    count = f"{len(asked)} server{'' if len(asked) == 1 else 's'}"
    if silent:
        messages.warning(
            request,
            f"{count} {FLEET_CONTROLS[action]}; {', '.join(silent)} did not acknowledge within {ACK_WAIT:g} s "
            "and act at their next heartbeat if they are alive.",
        )
    else:
        messages.success(request, f"{count} {FLEET_CONTROLS[action]}: {', '.join(asked)}.")
    return redirect(reverse("taskq:servers"))
