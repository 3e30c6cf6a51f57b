"""The queue page's live snapshot over the real ASGI app and a real Redis: memory, latency and the task-types
table as the page renders them (issue 16: they never moved on a live page), beside the 250 ms count updates."""

from __future__ import annotations

import pytest
from live_support import open_socket, receive_until, run, subscribe

pytestmark = pytest.mark.timeout(60)


def test_queue_page_gets_its_figures_and_types_table_as_a_fresh_load_renders_them(live_engine, viewer_cookie, moves):
    from django.template.defaultfilters import filesizeformat

    from console.live.queue_page import TAB_PLACEHOLDER
    from queues import conf

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
