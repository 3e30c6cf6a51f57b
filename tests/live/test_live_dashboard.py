"""The dashboard's live snapshot over the real ASGI app and a real Redis: the chart, the table's cells (latency,
memory, error rate) and which queues exist, beside the 250 ms count updates."""

from __future__ import annotations

import asyncio

import pytest
from live_support import WAIT, open_socket, receive_until, stop_hub, subscribe

from queues import conf

pytestmark = pytest.mark.timeout(60)


def run(body):
    async def wrapped():
        try:
            return await body()
        finally:
            await stop_hub()

    return asyncio.run(wrapped())


def snapshots(messages: list[dict]) -> list[dict]:
    return [m for m in messages if m["kind"] == "dashboard"]


def rows(snapshot: dict) -> dict[str, dict]:
    return {row["queue"]: row for row in snapshot["rows"]}


async def open_dashboard(cookie: str) -> tuple[object, dict]:
    """A dashboard socket and its catch-up snapshot (it follows the counts message)."""
    socket, connected = await open_socket(cookie)
    assert connected
    counts = await subscribe(socket, "dashboard")
    assert counts["kind"] == "update" and counts["scope"] == "dashboard"
    snapshot = await socket.receive_json_from(timeout=WAIT)
    assert snapshot["kind"] == "dashboard"
    return socket, snapshot


def test_subscribing_sends_the_table_and_chart_as_the_page_shows_them(live_engine, viewer_cookie, moves):
    moves.enqueue("a", n=3)
    moves.complete("a", moves.start("a", k=2))

    async def body():
        socket, snapshot = await open_dashboard(viewer_cookie)
        row = rows(snapshot)["a"]
        assert row["href"] == "/queues/a/" and row["paused"] is False
        assert row["cells"]["size"] == ["1", "1"]
        assert row["cells"]["processed_today"] == ["2", "2"] and row["cells"]["error_rate"] == ["0.0", "0.00 %"]
        assert int(row["cells"]["memory"][0]) > 0 and row["cells"]["memory"][1].endswith("KB")
        assert '<svg class="chart"' in snapshot["chart"] and "a · pending: 1" in snapshot["chart"]
        await socket.disconnect()
    run(body)


def test_snapshot_follows_sizes_memory_new_and_removed_queues(live_engine, viewer_cookie, moves):
    moves.enqueue("a")

    async def body():
        socket, first = await open_dashboard(viewer_cookie)
        memory = int(rows(first)["a"]["cells"]["memory"][0])
        assert set(rows(first)) == {"a"}
        moves.enqueue("a", n=20)
        moves.enqueue("fresh", n=2)  # a queue the page has never seen
        messages: list[dict] = []
        await receive_until(socket, lambda ms: any("fresh" in rows(s) for s in snapshots(ms))
                            and rows(snapshots(ms)[-1])["a"]["cells"]["size"][0] == "21", messages)
        last = snapshots(messages)[-1]
        assert int(rows(last)["a"]["cells"]["memory"][0]) > memory
        assert rows(last)["fresh"]["cells"]["size"] == ["2", "2"] and rows(last)["fresh"]["href"] == "/queues/fresh/"
        assert "fresh · pending: 2" in last["chart"] and "a · pending: 21" in last["chart"]

        # A queue that goes leaves the table (deleting emits no event: the idle round notices, after a quiet
        # spell longer than a Redis read timeout, which the socket must survive).
        conf.get_inspector().delete_queue("fresh", force=True)
        await receive_until(socket, lambda ms: snapshots(ms) and "fresh" not in rows(snapshots(ms)[-1]), messages)
        assert "fresh ·" not in snapshots(messages)[-1]["chart"]
        await socket.disconnect()
    run(body)


def test_pausing_elsewhere_shows_in_the_snapshot(live_engine, viewer_cookie, moves):
    moves.enqueue("a")

    async def body():
        socket, first = await open_dashboard(viewer_cookie)
        assert rows(first)["a"]["paused"] is False
        conf.get_inspector().pause_queue("a")
        messages: list[dict] = []
        await receive_until(socket, lambda ms: snapshots(ms) and rows(snapshots(ms)[-1])["a"]["paused"], messages)
        await socket.disconnect()
    run(body)


def test_an_unchanged_snapshot_is_not_sent_again(live_engine, viewer_cookie, moves):
    moves.enqueue("a")
    moves.complete("a", moves.start("a"))  # nothing pending: no latency growing while nothing happens

    async def body():
        from console.live.hub import live_hub

        socket, _ = await open_dashboard(viewer_cookie)
        hub = live_hub()
        await hub._dashboard(None)  # this hub's first round (the catch-up went to one socket only)
        sent = hub.messages_sent
        await hub._dashboard(None)
        assert hub.messages_sent == sent  # nothing changed: nothing sent
        moves.enqueue("a")  # a change is
        messages: list[dict] = []
        await receive_until(socket, lambda ms: snapshots(ms) and rows(snapshots(ms)[-1])["a"]["cells"]["size"][0]
                            == "1", messages)
        await socket.disconnect()
    run(body)


def test_other_pages_get_no_snapshot(live_engine, viewer_cookie, moves):
    async def body():
        socket, connected = await open_socket(viewer_cookie)
        assert connected
        await subscribe(socket, "queue", queue="a")
        last = moves.enqueue("a")[0]
        messages: list[dict] = []
        await receive_until(socket, lambda ms: any(row["id"] == last for m in ms for row in m.get("tasks", ())),
                            messages)
        assert all(m["kind"] == "update" for m in messages)
        await socket.disconnect()
    run(body)
