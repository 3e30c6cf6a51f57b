"""The servers page (every worker process with a current heartbeat, and the tasks it runs), one server's page,
and the operator's quiet and stop."""

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
    """Access: viewers. Reads the server registry (a sorted set by heartbeat) and each server's workers hash."""
    return render(request, "console/servers.html", {"rows": [server_row(s) for s in inspector().servers()]})


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
    as on the servers page) and what it has finished since it started; operators may quiet or stop it."""
    server = inspector().server(server_id)  # 404 once its heartbeat is gone
    now = time.time()
    heartbeat_age = now - server.heartbeat_at.timestamp() if server.heartbeat_at else None
    context = {"row": server_row(server), "heartbeat_age": heartbeat_age, "open_details": True}
    return render(request, "console/server.html", context)


#: What each control does, as the message after it says.
CONTROLS = {
    "quiet": "asked to quiet: it fetches no new task and finishes the ones it runs (at its next heartbeat)",
    "stop": "asked to stop: it finishes or requeues what it runs and exits (at its next heartbeat)",
}


@operator_action
def control_server(request: HttpRequest, server_id: str, action: str) -> HttpResponse:
    """Quiet or stop a server through Redis (``Inspector.control_server``), audited as ``<action>_server``."""
    from queues.audit import record_action

    acting_inspector(request).control_server(server_id, action)
    record_action(request.user, f"{action}_server", detail=f"server {server_id}")
    messages.success(request, f"Server {server_id} {CONTROLS[action]}.")
    return redirect(reverse("server", args=[server_id]))
