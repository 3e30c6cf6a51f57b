"""asynq's queues over time: the processed and failed counts of each UTC day (``processed:<date>``,
``failed:<date>``, which asynq keeps 90 days), read as asynq's ``History`` reads them. asynq writes no time series
and has no event exporter: those are refused.
"""

from __future__ import annotations

from ...export_store import ExportStatus
from ...inspection.queue_history import QueueHistory
from ...series import Point
from ..keys import ALL_QUEUES, AsynqQueueKeys
from .reads_core import unsupported


class AsynqQueueHistory(QueueHistory):
    """What asynq's queues did: ``QueueHistory`` over asynq's queue set and daily counters."""

    def series(
        self, queue: str | None, range_name: str, most: int = 120, fields: list[str] | None = None
    ) -> list[Point]:
        """asynq writes no per-minute or per-hour series.

        Raises:
            FormatUnsupportedError: always.
        """
        unsupported("time series (asynq counts per day only)", "series")

    def export_status(self) -> ExportStatus:
        """asynq writes no event stream, so there is no exporter to report on.

        Raises:
            FormatUnsupportedError: always.
        """
        unsupported("event stream to export", "export_status")

    @property
    def queue_set(self) -> str:
        return ALL_QUEUES

    def day_keys(self, queue: str, day: str) -> tuple[str, str]:
        q = AsynqQueueKeys(queue)
        return q.processed_on(day), q.failed_on(day)
