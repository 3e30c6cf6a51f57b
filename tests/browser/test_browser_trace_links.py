"""The task page's trace ids in a real headless Chromium: with TASKS_CONSOLE_TRACE_URL set each is a link into the
trace viewer that opens in a new tab (rel="noopener"), leaving the console where it was; without it, plain text."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

PRODUCER = "0af7651916cd43dd8448eb211c80319c"
JAEGER = "http://127.0.0.1:9/trace/{trace_id}"  # the discard port: the new tab's page need not load


def test_trace_ids_link_into_the_viewer_in_a_new_tab(console, seed, settings):
    settings.TASKS_CONSOLE_TRACE_URL = JAEGER
    task_id = seed.retry(queue="emails", headers={"traceparent": f"00-{PRODUCER}-b7ad6b7169203331-01"})
    console.login(f"/queues/emails/tasks/{task_id}/")
    console.wait_text(task_id, "h1")
    links = console.find_all("a[data-trace-id]")
    assert [a.get_attribute("data-trace-id") for a in links] == [PRODUCER, PRODUCER]  # the fields, attempt 1
    for a in links:
        assert a.get_attribute("href") == f"http://127.0.0.1:9/trace/{PRODUCER}"
        assert (a.get_attribute("target"), a.get_attribute("rel")) == ("_blank", "noopener")
    page = console.driver.current_window_handle
    links[0].click()
    console.wait_for(lambda driver: len(driver.window_handles) == 2, "the trace's tab")
    assert console.driver.current_window_handle == page


def test_without_the_setting_trace_ids_are_text(console, seed):
    task_id = seed.retry(queue="emails", headers={"traceparent": f"00-{PRODUCER}-b7ad6b7169203331-01"})
    console.login(f"/queues/emails/tasks/{task_id}/")
    console.wait_text(task_id, "h1")
    assert console.find_all("a[data-trace-id]") == []
    assert [c.text for c in console.find_all("code[data-trace-id]")] == [PRODUCER, PRODUCER]
