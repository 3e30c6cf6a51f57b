"""Waiting tasks in a real headless Chromium (issue 16): the queue page's waiting tab, a dependency link followed
to the dependency's page, and a waiting task run now from the tab by an operator while a real worker serves the
queue; the task waiting for it then runs after it, as it should.

No assertion is about time: the tests wait (generously) for a state, never for a duration.
"""

from __future__ import annotations

import pytest

from tests.worker.worker_support import state_of, wait_for

pytestmark = pytest.mark.browser


def test_waiting_tab_dependency_link_and_run_now(console, engine, seed, start_worker):
    # A is scheduled an hour out, so B (after A) would wait that long; C waits for B.
    seed.scheduled(queue="etl", task_type="echo:fetch", task_id="A", delay=3600)
    seed.client.enqueue("echo:store", {"n": 1}, queue="etl", task_id="B", after=["A"], retention=600)
    seed.client.enqueue("echo:mail", {"n": 2}, queue="etl", task_id="C", after=["B"], retention=600)
    start_worker(queues={"etl": 1})

    console.login("/queues/etl/")
    assert console.text("nav.tabs a[href$='state=waiting'] .count") == "2"
    console.click("nav.tabs a[href$='state=waiting']")
    console.wait_text("Waiting on", "table.tasks")

    console.click("table.tasks tr[data-live-task='B'] a[data-waits-on='A']")
    console.wait_text("scheduled", "[data-live-field=state]")
    assert "A" in console.text("dl.fields code")

    console.get("/queues/etl/?state=waiting")
    console.click("input[name=task_ids][value='B']")
    console.wait_text("1 selected", ".batch-bar")
    console.click("button[name=action][value=run]")
    assert console.confirm() == "Run 1 selected task?"
    console.wait_text("1 task moved to pending", ".messages")

    wait_for(lambda: state_of(engine, "etl", "B") == "completed", what="B to run without waiting for A")
    wait_for(lambda: state_of(engine, "etl", "C") == "completed", what="C to run once B succeeded")
    assert state_of(engine, "etl", "A") == "scheduled"
    console.get("/queues/etl/?state=waiting")
    console.wait_text("No waiting tasks.", "main")
