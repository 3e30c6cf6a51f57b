"""A Go asynq Scheduler's entries and enqueue history, read by the console's cron store and ``tasks cron`` in
asynq mode as Go's Inspector reads them (``SchedulerEntries``, ``ListSchedulerEnqueueEvents``).

The scheduler runs while the test reads (on shutdown it deletes what it published), so each comparison reads
ours, then Go's, then ours again, and compares when the two reads of ours agree.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from taskq.queues import handles
from taskq.queues.engine.asynq.scheduler_reads import AsynqSchedulerStore, entry_options, go_duration
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.errors import FormatUnsupportedError
from taskq.queues.periodic_sync import scheduler_store
from tests.cli.helpers import invoke

from . import go_asynq
from .conftest import Go


@pytest.fixture
def store(r: redis.Redis, redis_url: str) -> Iterator[AsynqSchedulerStore]:
    broker = Broker(redis_url)
    yield AsynqSchedulerStore(broker)
    broker.close()


def settled(read: Callable[[], Any], go_read: Callable[[], Any]) -> tuple[Any, Any]:
    """Ours and Go's, from a moment when ours read the same before and after Go's."""

    def agree() -> tuple[Any, Any] | None:
        before, theirs, after = read(), go_read(), read()
        return (before, theirs) if before == after else None

    found: tuple[Any, Any] = go_asynq.wait_until(agree, timeout=30)
    return found


def unix(when: Any) -> int:
    return int(when.timestamp()) if when is not None else 0


def test_go_scheduler_entries_and_history(go: Go, store: AsynqSchedulerStore, settings: Any, redis_url: str) -> None:
    with go.scheduling("-spec", "@every 1s", "-type", "tick", "-payload", "p\u00e9", "-queue", "cron-q"):
        go_asynq.wait_until(lambda: go("schedulers") and len(go("cron-history", go("schedulers")[0]["id"])) >= 2)

        def ours() -> list[tuple[Any, ...]]:
            return [
                (
                    i.id,
                    i.entry.spec,
                    i.entry.type,
                    i.entry.payload,
                    i.entry.queue,
                    i.entry.options,
                    i.next_run,
                    i.last_tick,
                )
                for i in store.entries()
            ]

        (entry,), (theirs,) = settled(ours, lambda: go("schedulers"))
        assert entry[:6] == (
            theirs["id"],
            theirs["spec"],
            theirs["type"],
            base64.b64decode(theirs["payload"]),
            "cron-q",
            {"max_retry": 2},
        )
        assert theirs["opts"] == ['Queue("cron-q")', "MaxRetry(2)"]
        assert (unix(entry[6]), unix(entry[7])) == (theirs["next"], theirs["prev"])

        (scheduler,) = store.schedulers()
        assert scheduler.entry_ids == [theirs["id"]] and scheduler.pid > 0 and scheduler.host

        # History grows each second: ours before is what Go read, or older; ours after, what Go read or newer.
        before = [(r.task_id, unix(r.enqueued_at)) for r in store.history(theirs["id"], 1000)]
        go_history = [(e["task_id"], e["enqueued_at"]) for e in go("cron-history", theirs["id"])]
        after = [(r.task_id, unix(r.enqueued_at)) for r in store.history(theirs["id"], 1000)]
        assert go_history[len(go_history) - len(before) :] == before
        assert after[len(after) - len(go_history) :] == go_history
        assert all(r.outcome == "enqueued" for r in store.history(theirs["id"]))

        settings.REDIS_URL = redis_url
        settings.TASKS_KEY_FORMAT = "asynq"
        handles.reset()
        try:
            assert isinstance(scheduler_store(), AsynqSchedulerStore)
            listed = invoke("cron", "ls", "--json").json()["entries"]
            assert [(e["id"], e["spec"], e["queue"]) for e in listed] == [(theirs["id"], "@every 1s", "cron-q")]
            runs = invoke("cron", "history", theirs["id"], "--json").json()["history"]
            assert runs and all(run["outcome"] == "enqueued" for run in runs)
            refused = invoke("cron", "pause", theirs["id"], "--json")
            assert refused.code != 0 and "asynq" in refused.err
        finally:
            handles.reset()


def test_writes_are_refused(store: AsynqSchedulerStore) -> None:
    with pytest.raises(FormatUnsupportedError):
        store.write_config([])
    with pytest.raises(FormatUnsupportedError):
        store.clear_scheduler("s")
    assert store.entries() == [] and store.schedulers() == [] and store.read_config() == ([], 0)


def test_asynq_option_strings() -> None:
    assert go_duration("1h0m0s") == 3600 and go_duration("1m30s") == 90 and go_duration("500ms") == 0.5
    assert go_duration("soon") is None and go_duration("") is None
    queue, options = entry_options(['Queue("reports")', "MaxRetry(3)", "Timeout(30s)", "Unique(1h0m0s)", "TaskID(x)"])
    assert (queue, options) == ("reports", {"max_retry": 3, "timeout": 30.0, "unique": 3600.0})
