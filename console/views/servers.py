"""The servers page: every worker process with a current heartbeat, and the tasks it runs."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from ..access import viewer_page
from .common import inspector


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
