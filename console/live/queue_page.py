"""The queue page's live snapshot: what its banner and its task-types table show beyond the counts.

Counts (sizes, tabs, processed and failed today and in total) come with every coalesced update (250 ms). Memory
and latency need ``Inspector.queue_infos`` (memory is sampled, latency reads the oldest pending task) and the
task-types table the per-type counts: the hub reads them for every watched queue together, in the dashboard's
rhythm (``console/live/dashboard.py``: at most every ``DASHBOARD_INTERVAL`` seconds while events arrive, every
``DASHBOARD_IDLE`` seconds otherwise), and sends a queue's snapshot only when it differs from the last one sent.
Figures are formatted and the table rendered by the page's own filters and template, so once activity stops a
live page reads exactly as a fresh load.
"""

from __future__ import annotations

import json
from typing import Any

from django.template.defaultfilters import filesizeformat
from django.template.loader import render_to_string

from ..forms import STATES
from ..templatetags.console_tags import duration

#: Stands for the page's current tab in the rendered table (its filter links name it); live.js puts the tab in.
TAB_PLACEHOLDER = "@tab@"


def queue_page_snapshots(inspector: Any, queues: list[str]) -> dict[str, dict[str, Any]]:
    """Per queue: ``{"kind": "queue", "queue", "paused", "figures": {"memory", "latency"}, "types": "<table…>",
    "groups": "<chips…>", "placeholder"}``, in two batched reads for all ``queues``, and a read of the groups of
    each queue that holds aggregating tasks (so a group's chip goes once the group is cut)."""
    infos = inspector.queue_infos(queues)
    types = inspector.type_counts_of(queues)
    return {
        info.queue: {
            "kind": "queue",
            "queue": info.queue,
            # A pause or a resume writes no event: without it here, an idle page would keep the old state.
            "paused": info.paused,
            "figures": {"memory": str(filesizeformat(info.memory_bytes)), "latency": duration(info.latency)},
            "types": render_to_string(
                "taskq/_task_types.html",
                {
                    "queue": info.queue,
                    "state": TAB_PLACEHOLDER,
                    "types": sorted(types[info.queue].items()),
                    "states": STATES,
                },
            ),
            "groups": render_to_string(
                "taskq/_groups.html", {"groups": inspector.groups(info.queue) if info.aggregating else []}
            ),
            "placeholder": TAB_PLACEHOLDER,
        }
        for info in infos
    }


class QueuePageDelta:
    """The snapshots that changed since the last round, per queue. ``reset(queue)`` makes the next round send
    that queue's snapshot (a page joined: its watchers' last state may be older than its fresh load)."""

    def __init__(self) -> None:
        self.sent: dict[str, str] = {}

    def reset(self, queue: str) -> None:
        self.sent.pop(queue, None)

    def __call__(self, snapshots: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        changed = []
        for queue, snapshot in snapshots.items():
            encoded = json.dumps(snapshot, sort_keys=True)
            if self.sent.get(queue) != encoded:
                self.sent[queue] = encoded
                changed.append(snapshot)
        for gone in set(self.sent) - set(snapshots):
            del self.sent[gone]
        return changed
