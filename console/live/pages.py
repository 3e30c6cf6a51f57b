"""What a page needs to go live: the stream position it was rendered at."""

from __future__ import annotations

import json
from typing import Any

from queues.engine.events import EventStreams


def page_cursor(inspector: Any, queues: list[str]) -> str:
    """The last event id of each queue's stream, as JSON for ``data-live-cursor``. Read *before* the page reads
    its figures: the socket replays from here, so a transition between the two reads shows up (twice at worst:
    updates are idempotent) instead of being lost."""
    streams = EventStreams(conn=inspector.conn, prefix=inspector.keys.prefix)
    return json.dumps(streams.cursor(queues))
