"""The parts of the console's pages that are rendered twice: by a page's view, into the page, and by the live hub,
for the pages open, so a live page reads as a fresh load. A view and the hub both call these; the hub imports no
view. (The task page's live sections have their own module, ``console/task_page.py``, and the queue tabs' rows are
the page's own partial, ``taskq/_task_rows.html``.)

- The dashboard's queues table and size chart: ``QueueRow`` (a row's figures), ``size_chart``.
- A workflow's live part (``taskq/_workflow_live.html``): ``workflow_context``, ``render_workflow_live``.
- A server's row of the servers page (``taskq/_server_row.html``): ``server_row``, ``server_usage``,
  ``render_server_row``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, NamedTuple

from django.template.defaultfilters import filesizeformat, floatformat
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString

from taskq.queues.engine.clock import from_ms, to_ms
from taskq.queues.engine.server_records import LATE_ROUNDS
from taskq.queues.redaction_access import mask_workflow, masked
from taskq.queues.rendering import preview

from .charts import SIZE_SERIES, Bar, stacked_bars
from .templatetags.console_tags import duration


class Cell(NamedTuple):
    """One figure of the queues table. A named tuple: the template reads ``.sort`` and ``.text`` by name (an
    index lookup, ``.0``, costs Django a ``dir()`` per cell, a tenth of the page with 200 queues), and the live
    hub sends it as the ``[sort value, shown text]`` pair live.js expects."""

    sort: str
    text: str


@dataclass
class QueueRow:
    info: Any  # QueueInfo

    @property
    def error_rate(self) -> float | None:
        """Failed over processed today, in percent (processed counts failures too, as in asynq)."""
        processed = self.info.processed_today
        return None if not processed else 100.0 * self.info.failed_today / processed

    @cached_property
    def cells(self) -> dict[str, Cell]:
        """The table's figures as (sort value, shown text), for the page and its live updates alike."""
        q, rate = self.info, self.error_rate
        return {
            "size": Cell(str(q.size), str(q.size)),
            "memory": Cell(str(q.memory_bytes), str(filesizeformat(q.memory_bytes))),
            "latency": Cell(str(q.latency), duration(q.latency)),
            "processed_today": Cell(str(q.processed_today), str(q.processed_today)),
            "failed_today": Cell(str(q.failed_today), str(q.failed_today)),
            "error_rate": Cell("-1", "—") if rate is None else Cell(str(rate), f"{floatformat(rate, 2)} %"),
        }

    @cached_property
    def href(self) -> str:
        """The queue page. Its actions' URLs (page_urls.py: pause/, resume/, delete/ under it) are this plus
        the action: one ``reverse`` per row instead of three, which cost the page 10 ms with 200 queues."""
        return str(reverse("taskq:queue", args=[self.info.queue]))


def size_chart(infos: Sequence[Any]) -> SafeString:
    return stacked_bars(
        [Bar(i.queue, {s: getattr(i, s) for s in SIZE_SERIES}, reverse("taskq:queue", args=[i.queue])) for i in infos],
        SIZE_SERIES,
        title="Queue size by state",
    )


def workflow_context(insp: Any, queue: str, info: Any) -> dict[str, Any]:
    """What ``taskq/_workflow_live.html`` shows: the same for the page and for its live updates, so a live page
    reads as a fresh load."""
    info = mask_workflow(info)  # error text, for every viewer alike (the live page renders this too)
    types = {m.id: m.type for m in info.members}
    rows = [(m, [(dep, types.get(dep, "")) for dep in m.after], _result(m.type, m.result)) for m in info.members]
    counts: dict[str, int] = {}
    for m in info.members:
        counts[m.state] = counts.get(m.state, 0) + 1
    linked = [m.id for m in info.members] + ([info.failed_member] if info.failed_member else [])
    return {
        "queue": queue,
        "workflow": info,
        "rows": rows,
        "current": info.current,
        "counts": sorted(counts.items()),
        "existing": insp.existing_tasks((queue, task_id) for task_id in linked),
    }


def _result(task_type: str, result: Any) -> str | None:
    """One line of a member's result (decoded JSON, or bytes), masked as TASKS_REDACT says."""
    if result is None:
        return None
    if not isinstance(result, bytes):
        result = json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode()
    return preview(masked(task_type, result))


def server_row(server: Any) -> dict[str, Any]:
    """What the page's row of ``server`` (a ServerInfo) shows (``taskq/_server_row.html``)."""
    running = [
        dict(task, started_at=from_ms(task.get("started")), deadline_at=from_ms(task.get("deadline")))
        for task in server.active
    ]
    queues = sorted(server.queues.items(), key=lambda item: (-item[1], item[0]))
    return {"server": server, "running": running, "queues": queues, "usage": server_usage(server)}


def server_usage(server: Any) -> dict[str, Any]:
    """A server's resources and heartbeat as the row shows them and the live page updates them: RSS and
    CPU share as text, tasks done since start, and the heartbeat's time and the time it becomes late (epoch ms,
    which the page's clock turns into an age that ticks, and a "late" mark)."""
    heartbeat = to_ms(server.heartbeat_at.timestamp()) if server.heartbeat_at else None
    late_after = (
        heartbeat + to_ms(LATE_ROUNDS * server.heartbeat_every) if heartbeat and server.heartbeat_every else None
    )
    now = datetime.now(UTC)
    age = server.heartbeat_age(now)
    return {
        "rss": filesizeformat(server.rss) if server.rss is not None else "—",
        "cpu": f"{server.cpu * 100:.1f}%" if server.cpu is not None else "—",
        "processed": server.processed,
        "heartbeat": heartbeat,
        "late_after": late_after,
        "age": f"{max(0, int(age))} s ago" if age is not None else "—",
        "now": to_ms(now.timestamp()),  # the console's clock at rendering: the page corrects its own by it
        "late": server.late(now),
    }


def render_workflow_live(insp: Any, queue: str, info: Any) -> str:
    """The workflow page's live part, as the page renders it."""
    return str(render_to_string("taskq/_workflow_live.html", workflow_context(insp, queue, info)))


def render_server_row(server: Any) -> str:
    """The servers page's table row of ``server`` (no actions, nothing per user)."""
    return str(render_to_string("taskq/_server_row.html", {"row": server_row(server)}))
