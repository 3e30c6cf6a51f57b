"""What the dashboard needs for its RQ section (``templates/taskq/rq/_dashboard_section.html``).

Deliberately shares its name with ``console/views/dashboard.py`` and ``console/live/dashboard.py``: the three are
the dashboard page's parts (its RQ section here, its view, its live snapshot), each in its package.
"""

from __future__ import annotations

import logging

from taskq.queues.engine.errors import RedisUnavailableError

from .bridge import rq_queue_summaries

logger = logging.getLogger(__name__)


def rq_dashboard_context() -> dict[str, object]:
    """``rq_queues`` (the summaries) for the section, or ``rq_error`` when RQ's Redis cannot be read.

    Never raises RedisUnavailableError: RQ may live on another Redis than taskq, and taskq's dashboard must still
    render when only RQ's is down.
    """
    try:
        return {"rq_queues": rq_queue_summaries()}
    except RedisUnavailableError as exc:
        logger.warning("dashboard: RQ section unavailable: %s", exc)
        return {"rq_queues": [], "rq_error": str(exc)}
