"""The servers page (every worker process with a current heartbeat, and the tasks it runs, then those that ended in
the last hour), one server's page (or, once it has ended, its record), and the operator's quiet and stop."""

from __future__ import annotations

import time
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from ..access import operator_action, viewer_page
from .common import acting_inspector, inspector


@viewer_page
def servers(request: HttpRequest) -> HttpResponse:
    """Access: viewers. Reads the server registry (a sorted set by heartbeat) and each server's workers hash, and
    the records of the servers that ended within ``TASKS_SERVER_RECORD_SECONDS``."""
    engine = inspector()
    rows = [server_row(s) for s in engine.servers()]
    return render(request, "console/servers.html", {"rows": rows, "ended": engine.ended_servers()})


def server_row(server: Any) -> dict[str, Any]:
    """What the page's row of ``server`` (a ServerInfo) shows; the live hub renders new servers' rows with it."""
    from queues.engine.clock import from_ms

    running = [
        dict(task, started_at=from_ms(task.get("started")), deadline_at=from_ms(task.get("deadline")))
        for task in server.active
    ]
    queues = sorted(server.queues.items(), key=lambda item: (-item[1], item[0]))
    return {"server": server, "running": running, "queues": queues}


@viewer_page
def server_detail(request: HttpRequest, server_id: str) -> HttpResponse:
    """Access: viewers. One server: where it runs, what it serves and how, its heartbeat, what it runs now (live,
    as on the servers page) and what it has finished since it started; operators may quiet or stop it. Once it
    has ended: its record (how and when, and what became of each task it held); 404 when there is none."""
    from queues.engine import ServerNotFoundError

    engine = inspector()
    try:
        server = engine.server(server_id)
    except ServerNotFoundError:
        record = engine.ended_server(server_id)  # a ServerNotFoundError of its own: a 404 naming both cases
        queues = sorted(record.server.queues.items(), key=lambda item: (-item[1], item[0]))
        return render(request, "console/server_ended.html", {"record": record, "queues": queues})
    now = time.time()
    heartbeat_age = now - server.heartbeat_at.timestamp() if server.heartbeat_at else None
    context = {"row": server_row(server), "heartbeat_age": heartbeat_age, "open_details": True}
    return render(request, "console/server.html", context)


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
    from queues.audit import record_action

    engine = acting_inspector(request)
    engine.control_server(server_id, action)
    record_action(request.user, f"{action}_server", detail=f"server {server_id}")
    if engine.wait_for_acknowledgement(server_id, action, ACK_WAIT) is not None:
        messages.success(request, f"Server {server_id} {CONTROLS[action]}.")
    else:
        messages.warning(
            request,
            f"Server {server_id} was asked to {action} but has not acknowledged within {ACK_WAIT:g} s; "
            "it acts at its next heartbeat if it is alive.",
        )
    return redirect(reverse("server", args=[server_id]))
