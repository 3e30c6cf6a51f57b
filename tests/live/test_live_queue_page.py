"""The queue page's live snapshot over the real ASGI app and a real Redis: memory, latency and the task-types
table as the page renders them (issue 16: they never moved on a live page), beside the 250 ms count updates."""

from __future__ import annotations

import pytest
from live_support import open_socket, receive_until, run, subscribe

pytestmark = pytest.mark.timeout(60)


def test_queue_page_gets_its_figures_and_types_table_as_a_fresh_load_renders_them(live_engine, viewer_cookie, moves):
    from django.template.defaultfilters import filesizeformat

    from taskq.console.live.queue_page import TAB_PLACEHOLDER
    from taskq.queues import conf

    moves.enqueue("web", n=2)

    async def body():
        socket, connected = await open_socket(viewer_cookie)
        assert connected
        first = await subscribe(socket, "queue", queue="web")
        assert first["queues"]["web"]["processed_total"] == 0
        messages: list[dict] = []
        await receive_until(socket, lambda ms: any(m["kind"] == "queue" for m in ms), messages)
        snapshot = [m for m in messages if m["kind"] == "queue"][-1]
        info = conf.get_inspector().queue_info("web")
        assert snapshot["figures"]["memory"] == filesizeformat(info.memory_bytes)
        assert snapshot["placeholder"] == TAB_PLACEHOLDER
        assert f"?state={TAB_PLACEHOLDER}&amp;type=live%3Atest" in snapshot["types"]  # the page puts its tab in

        moves.client.enqueue("thumbnail:resize", {}, queue="web")  # a new type: the table grows a row
        moves.complete("web", moves.start("web", k=1))
        messages.clear()
        await receive_until(
            socket,
            lambda ms: (
                any(m["kind"] == "queue" and "thumbnail:resize" in m["types"] for m in ms)
                and any(m["kind"] == "update" and m["queues"]["web"]["processed_total"] == 1 for m in ms)
            ),
            messages,
        )

    run(body)


def test_a_queue_page_gets_the_rows_of_its_tab_as_a_fresh_load_renders_them(live_engine, viewer_cookie, moves):
    """The hub renders the page of the tab the subscription names with the page's own row template: the rows a
    fresh load lists, in its order, with their cells (the checkbox for operators, dropped by a viewer's page)."""
    import re

    from django.test import Client as HttpClient

    ids = moves.enqueue("web", n=3)
    page = HttpClient()
    page.cookies["sessionid"] = viewer_cookie
    loaded = page.get("/queues/web/?state=pending&size=10").content.decode()

    async def body():
        socket, connected = await open_socket(viewer_cookie)
        assert connected
        await subscribe(socket, "queue", queue="web", tab={"state": "pending", "page": 1, "size": 10})
        messages: list[dict] = []
        await receive_until(socket, lambda ms: any(m["kind"] == "tab" for m in ms), messages)
        return [m for m in messages if m["kind"] == "tab"][-1]

    tab = run(body)
    assert (tab["queue"], tab["state"], tab["page"], tab["size"]) == ("web", "pending", 1, 10)
    listed = re.findall(r'<tr data-live-task="([^"]+)">', loaded)
    assert tab["ids"] == listed  # the fresh load's rows, in its order
    for task_id in ids:
        assert f'value="{task_id}"' in tab["rows"]  # with the operator's checkbox, which a viewer's page drops
        assert f'href="/queues/web/tasks/{task_id}/"' in tab["rows"]


@pytest.mark.parametrize(
    ("tab", "named"),
    [
        ({"state": "nope", "page": 1, "size": 10}, "tab state"),
        ({"state": "pending", "page": 0, "size": 10}, "tab page"),
        ({"state": "pending", "page": "1", "size": 10}, "tab page"),
        ({"state": "pending", "page": 1, "size": 5000}, "tab size"),
        ("pending", "tab must be"),
    ],
)
def test_a_bad_tab_in_a_subscription_is_refused_naming_it(live_engine, viewer_cookie, tab, named):
    async def body():
        socket, connected = await open_socket(viewer_cookie)
        assert connected
        return await subscribe(socket, "queue", queue="web", tab=tab)

    answer = run(body)
    assert answer["kind"] == "error" and named in answer["message"]
