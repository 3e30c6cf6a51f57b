"""The History page fills as it does in the demo: a real worker exports the event streams and runs the analytics
job on Spark (local) when an operator clicks "Run analytics now"; the page then charts and lists today's rollups.
No assertion is about time: each step is waited for."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskq.queues.sparkconf import SparkSettings, build_session
from tests.worker.worker_support import wait_for
from taskq.worker.spark import SparkRunner

pytestmark = [pytest.mark.browser, pytest.mark.spark, pytest.mark.timeout(300)]


def test_run_analytics_now_fills_the_history_page(console, engine, seed, start_worker, registry, settings, tmp_path):
    from taskq.queues.history.models import TaskDailyRollup
    from taskq.queues.history.tasks import daily_rollups

    events, rollups = tmp_path / "events", tmp_path / "rollups"
    settings.TASKS_EVENT_EXPORT_DIR, settings.TASKS_ROLLUP_DIR = str(events), str(rollups)
    registry.add(daily_rollups)

    server = start_worker(queues={"default": 1, "emails": 1}, export_dir=str(events))
    # The process's Spark session stays up after the test (the Spark tests reuse it and stop it at the end): the
    # worker is handed one instead of starting and stopping its own.
    session = build_session(SparkSettings(master="local[1]", app_name="taskq-tests"))
    server.spark = server.processor.spark = SparkRunner(server.spark.settings, session=session)
    for n in range(5):
        seed.pending("echo:welcome", {"n": n}, queue="emails")
    wait_for(lambda: engine.queue_info("emails").processed_today == 5, timeout=60, what="the five tasks run")
    wait_for(lambda: list(Path(events).glob("date=*/*.parquet")), timeout=60, what="the exporter's first files")

    console.login("/history/")
    console.wait_text("No rollups yet")
    console.click("form[action$='/history/run/'] button")
    assert "Run the analytics job now" in console.confirm()
    console.wait_text("rollups were enqueued", ".messages")
    # Waited for in Redis, not by polling the table: the worker thread writes the rollups inside a transaction, and
    # a read of the shared in-memory SQLite database during it fails with "table is locked".
    wait_for(lambda: engine.queue_info("default").processed_today == 1, timeout=240,
             what="the analytics job to run on Spark")  # fmt: skip
    console.get("/history/")
    console.wait_text("echo:welcome", "table")
    assert len(console.find_all('svg.chart.time[data-fit="wide"]')) == 3
    row = TaskDailyRollup.objects.get(task_type="echo:welcome")
    assert (row.queue, row.enqueued, row.succeeded) == ("emails", 5, 5)
