"""The summary bar's figures (``Inspector.fleet_summary``) read only what the bar shows, and add up to exactly what
each queue's full figures (``queue_infos``) say."""

from __future__ import annotations

from dataclasses import asdict

from taskq.queues.engine import Inspector
from taskq.queues.engine.inspection.queue_stats import FLEET_COUNTS


def test_the_bar_adds_up_every_queues_figures_in_every_state(seed, redis_url):
    for queue in ("default", "critical"):
        # Those a worker leased first: leasing takes the queue's only pending task.
        for state in ("active", "retry", "archived", "completed", "pending", "scheduled", "aggregating", "waiting"):
            seed.in_state(state, queue=queue)
    seed.pending(queue="critical")
    inspector = Inspector(redis_url)
    queues = [*inspector.queues(), "unknown"]  # an unknown queue reads as empty
    infos = inspector.queue_infos(queues)
    summary = asdict(inspector.fleet_summary(queues))
    assert summary == {
        **{name: sum(getattr(info, name) for info in infos) for name in FLEET_COUNTS}, "servers_up": 0
    }  # fmt: skip
    # Every figure is there to add up: two queues' pending (the waiting task's dependency too), retried and failed.
    # Each figure has something to add up: per queue, a pending task and the one the waiting task waits on (and
    # one more in critical); three attempts ended today (processed, as asynq counts), two of them failed.
    assert (summary["pending"], summary["active"], summary["scheduled"], summary["retry"]) == (5, 2, 2, 2)
    assert (summary["archived"], summary["processed_today"], summary["failed_today"]) == (2, 6, 4)
