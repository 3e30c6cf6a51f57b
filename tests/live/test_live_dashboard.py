"""The dashboard's live snapshot over the real ASGI app and a real Redis: the chart, the table's cells (latency,
memory, error rate) and which queues exist, beside the 250 ms count updates."""

from __future__ import annotations

import pytest
from live_support import WAIT, open_socket, receive_until, run, subscribe

from taskq.queues import conf

pytestmark = pytest.mark.timeout(60)


def snapshots(messages: list[dict]) -> list[dict]:
    return [m for m in messages if m["kind"] == "dashboard"]


def rows(snapshot: dict) -> dict[str, dict]:
    return {row["queue"]: row for row in snapshot["rows"]}


class Page:
    """What a dashboard shows after applying snapshots and deltas the way live.js does."""

    def __init__(self, first: dict) -> None:
        self.rows: dict[str, dict] = {}
        self.chart = ""
        self.apply([first])

    def apply(self, messages: list[dict]) -> Page:
        for message in snapshots(messages):
            self.rows.update(rows(message))
            self.rows = {name: row for name, row in self.rows.items() if name in message["listed"]}
            self.chart = message.get("chart", self.chart)
        return self

    def cell(self, queue: str, name: str) -> str:
        return self.rows[queue]["cells"][name][0]


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

    run(body)


def test_snapshot_follows_sizes_memory_new_and_removed_queues(live_engine, viewer_cookie, moves):
    moves.enqueue("a")

    async def body():
        socket, first = await open_dashboard(viewer_cookie)
        memory = int(rows(first)["a"]["cells"]["memory"][0])
        assert first["listed"] == ["a"] and set(rows(first)) == {"a"}
        moves.enqueue("a", n=20)
        moves.enqueue("fresh", n=2)  # a queue the page has never seen
        messages: list[dict] = []

        def shown() -> Page:
            return Page(first).apply(messages)

        await receive_until(socket, lambda ms: "fresh" in shown().rows and shown().cell("a", "size") == "21", messages)
        page = shown()
        assert int(page.cell("a", "memory")) > memory
        assert page.rows["fresh"]["cells"]["size"] == ["2", "2"] and page.rows["fresh"]["href"] == "/queues/fresh/"
        assert "fresh · pending: 2" in page.chart and "a · pending: 21" in page.chart

        # A queue that goes leaves the table (deleting emits no event: the idle round notices, after a quiet
        # spell longer than a Redis read timeout, which the socket must survive).
        conf.get_inspector().delete_queue("fresh", force=True)
        await receive_until(socket, lambda ms: "fresh" not in shown().rows, messages)
        assert "fresh ·" not in shown().chart and set(shown().rows) == {"a"}

    run(body)


def test_pausing_elsewhere_shows_in_the_snapshot(live_engine, viewer_cookie, moves):
    moves.enqueue("a")

    async def body():
        socket, first = await open_dashboard(viewer_cookie)
        assert rows(first)["a"]["paused"] is False
        conf.get_inspector().pause_queue("a")
        messages: list[dict] = []
        await receive_until(socket, lambda ms: Page(first).apply(ms).rows["a"]["paused"], messages)

    run(body)


def test_only_changes_are_sent_and_nothing_when_nothing_changed(live_engine, viewer_cookie, moves):
    for queue in ("a", "b"):
        moves.enqueue(queue)
        moves.complete(queue, moves.start(queue))  # nothing pending: no latency growing while nothing happens

    async def body():
        from taskq.console.live.process_hub import live_hub

        socket, first = await open_dashboard(viewer_cookie)
        hub = live_hub()
        await hub._dashboard(None)  # the first round after a page joined sends everything
        sent = hub.messages_sent
        await hub._dashboard(None)
        assert hub.messages_sent == sent  # nothing changed: nothing sent
        moves.enqueue("a")
        messages: list[dict] = []
        await receive_until(
            socket,
            lambda ms: any(rows(s).get("a", {}).get("cells", {}).get("size") == ["1", "1"] for s in snapshots(ms)),
            messages,
        )
        delta = next(s for s in snapshots(messages) if "a" in rows(s) and rows(s)["a"]["cells"]["size"][0] == "1")
        assert set(rows(delta)) == {"a"} and delta["listed"] == ["a", "b"]  # b did not change: not sent
        assert "a · pending: 1" in delta["chart"]

    run(body)


def test_other_pages_get_no_snapshot(live_engine, viewer_cookie, moves):
    async def body():
        socket, connected = await open_socket(viewer_cookie)
        assert connected
        await subscribe(socket, "queue", queue="a")
        last = moves.enqueue("a")[0]
        messages: list[dict] = []
        await receive_until(
            socket, lambda ms: any(row["id"] == last for m in ms for row in m.get("tasks", ())), messages
        )
        assert all(m["kind"] != "dashboard" for m in messages)

    run(body)


def test_a_new_server_comes_with_its_row(live_engine, viewer_cookie, redis_url):
    from tests.cli.helpers import Seed

    seed = Seed(redis_url)

    async def body():
        socket, connected = await open_socket(viewer_cookie)
        assert connected
        first = await subscribe(socket, "servers")
        assert first == {"kind": "servers", "servers": [], "replay": True}  # the catch-up: the page is live
        seed.server("host-1:42")  # the registry emits no event: the hub re-reads it while someone watches
        messages: list[dict] = []
        await receive_until(socket, lambda ms: any(m["servers"] for m in ms), messages)
        row = messages[-1]["servers"][0]["row"]
        assert '<tr data-live-server="host-1:42">' in row and '<a href="/servers/host-1:42/">host-1:42</a></td>' in row
        assert 'href="/queues/critical/">critical</a> <span class="muted">(6)</span>' in row

    try:
        run(body)
    finally:
        seed.close()
