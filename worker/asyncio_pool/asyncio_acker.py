"""Writes, on the asyncio pool's event loop, the outcomes of the handlers that returned there: the same flow as the
acker's thread (``Acker.write_flow``: successes of a queue in one fenced call that also leases the next tasks of
the slots handed over, fetch-on-ack), driven on the asyncio broker instead of the blocking one.

Batching needs no linger here: one write is in flight at a time, and every outcome that comes while it is goes
out in the next one, so the batch grows with the load by itself. What Redis does not take goes to the acker's
backlog, which the syncer retries from its thread as for the thread pool. Outcomes ended from other threads (a
timeout, a cancel, a lost lease, shutdown) still go to the acker's thread through the outbox: they are rare, and
that thread is where the thread pool writes them too."""

from __future__ import annotations

import asyncio
import functools
import logging

from taskq.queues.engine.broker import AsyncBroker
from taskq.queues.engine.sans_io import drive_async

from ..acker import MAX_BATCH, Acker
from ..attempt import Attempt, Outcome
from ..outbox import Item

log = logging.getLogger("taskq.worker.asyncio_acker")


class LoopAcker:
    """Outcomes of the loop's handlers, written by one task of that loop. Every method runs on the loop."""

    def __init__(self, acker: Acker, broker: AsyncBroker) -> None:
        self.acker = acker  # the flow, the counters, the series tally and the backlog are the acker's
        self.broker = broker
        self._run = functools.partial(broker.run, kept=broker.keep_connection())  # one call at a time: a kept one
        self._items: list[Item] = []
        self._ready = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed = False

    def submit(self, attempt: Attempt, outcome: Outcome) -> None:
        attempt.ended_as = outcome.kind
        self._items.append((attempt, outcome))
        self._idle.clear()
        self._ready.set()

    async def run(self) -> None:
        """Write what comes until closed and drained."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            if not self._items:
                self._idle.set()
                if self._closed:
                    return
                continue
            batch, self._items = self._items[:MAX_BATCH], self._items[MAX_BATCH:]
            try:
                unwritten = await drive_async(self.acker.write_flow(batch), self._run)
                if unwritten:
                    self.acker.backlog.add(unwritten)
            except Exception:
                log.exception("acker round failed")
            self._ready.set()  # look again: what came meanwhile goes in the next call, or the writer is idle

    async def close(self) -> None:
        """Write what is here, then end ``run``."""
        self._closed = True
        self._ready.set()
        await self._idle.wait()
