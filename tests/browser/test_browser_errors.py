"""Errors in a real headless Chromium: a task that a real worker failed shows its traceback folded on the task
page (opened by a click), and the queue page's error group leads to the matching tasks."""

from __future__ import annotations

import pytest

from taskq.queues.engine import handler

pytestmark = pytest.mark.browser


def _explode(order: int) -> None:
    raise RuntimeError(f"order {order} exploded")


def test_the_task_page_folds_the_traceback_and_the_group_finds_the_task(
    console, engine, registry, start_worker, redis_url
):
    from taskq.queues.engine import Client

    @handler("shop:explode", registry=registry)
    def explode(task):
        _explode(task.json()["order"])

    start_worker(queues={"default": 1})
    with Client(redis_url) as client:
        task_id = client.enqueue("shop:explode", {"order": 7}, max_retry=0).id
    console.login(f"/queues/default/tasks/{task_id}/")
    console.wait_for(lambda d: engine.get_task("default", task_id).state == "archived", "the task archived")
    console.get(f"/queues/default/tasks/{task_id}/")

    details = console.find("details.traceback")
    trace = console.find("details.traceback pre")
    assert details.get_attribute("open") is None and not trace.is_displayed()  # folded
    console.click("details.traceback summary")
    console.wait_for(lambda d: trace.is_displayed(), "the traceback unfolded")
    assert "in _explode" in trace.text and trace.text.endswith("RuntimeError: order 7 exploded")

    console.get("/queues/default/")
    row = console.find("table.error-groups tbody tr")
    assert "RuntimeError: order <n> exploded" in row.text and "_explode" in row.text
    console.click("table.error-groups a[href^='/search/']")
    console.wait_for(lambda d: "/search/" in d.current_url, "the search page")
    console.find(f"a[href='/queues/default/tasks/{task_id}/']")  # the matching task, listed
