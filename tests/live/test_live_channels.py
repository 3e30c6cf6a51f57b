"""The console's WebSocket over the real ASGI app (Origin check, auth stack, consumer) and a real Redis.

Each test body runs in its own event loop (asyncio.run); a new loop gets a new hub, which is what a console
restart looks like to a browser.
"""

from __future__ import annotations

import asyncio

import pytest
from live_support import latest_rows, open_socket, receive_until, run, subscribe

from taskq.queues.engine import Keys
from taskq.queues.engine.events import EventStreams

pytestmark = pytest.mark.timeout(60)


def test_anonymous_socket_is_refused(live_engine, transactional_db):
    async def body():
        socket, connected = await open_socket(None)
        assert not connected

    run(body)


def test_socket_without_permission_is_refused(live_engine, nobody_cookie):
    async def body():
        socket, connected = await open_socket(nobody_cookie)
        assert not connected

    run(body)


def test_socket_from_a_foreign_origin_is_refused(live_engine, viewer_cookie):
    async def body():
        socket, connected = await open_socket(viewer_cookie, origin=b"https://evil.example")
        assert not connected

    run(body)


def test_viewer_and_superuser_are_accepted(live_engine, viewer_cookie, admin_cookie):
    async def body():
        for cookie in (viewer_cookie, admin_cookie):
            socket, connected = await open_socket(cookie)
            assert connected
            first = await subscribe(socket, "dashboard")
            assert first["kind"] == "update"
            await socket.disconnect()

    run(body)


@pytest.mark.parametrize(
    "message, says",
    [
        ({"op": "listen"}, "subscribe"),
        ({"op": "subscribe", "scope": "everything"}, "scope"),
        ({"op": "subscribe", "scope": "queue", "queue": "a{b}"}, "queue"),
        ({"op": "subscribe", "scope": "task", "queue": "a", "task": "x" * 200}, "id"),
        ({"op": "subscribe", "scope": "queue", "queue": "a", "cursor": {"a": "drop table"}}, "stream id"),
        ({"op": "subscribe", "scope": "queue", "queue": "a", "cursor": ["0-0"]}, "cursor"),
    ],
)
def test_bad_subscription_gets_an_error_and_the_socket_stays(live_engine, viewer_cookie, message, says):
    async def body():
        socket, connected = await open_socket(viewer_cookie)
        assert connected
        await socket.send_json_to(message)
        reply = await socket.receive_json_from(timeout=10)
        assert reply["kind"] == "error" and says in reply["message"]
        assert (await subscribe(socket, "dashboard"))["kind"] == "update"  # still usable

    run(body)


def test_events_arrive_for_the_subscribed_queue_only(live_engine, viewer_cookie, moves, redis_url):
    moves.enqueue("a")
    moves.enqueue("b")
    cursor = EventStreams(redis_url).cursor(["a", "b"])

    async def body():
        socket, _ = await open_socket(viewer_cookie)
        first = await subscribe(socket, "queue", queue="a", cursor=cursor)
        assert first["tasks"] == [] and first["queues"]["a"]["pending"] == 1
        mine = moves.enqueue("a")[0]
        moves.enqueue("b", n=5)
        last = moves.enqueue("a")[0]
        messages: list[dict] = []
        await receive_until(socket, lambda ms: last in latest_rows(ms), messages, kinds=("update",))
        rows = latest_rows(messages)
        assert set(rows) == {mine, last}
        assert all(row["queue"] == "a" and row["to"] == "pending" for row in rows.values())
        assert all(set(m["queues"]) <= {"a"} for m in messages)
        assert messages[-1]["queues"]["a"]["pending"] == 3
        assert await socket.receive_nothing(timeout=0.5)  # nothing of queue b is coming

    run(body)


def test_dashboard_gets_counts_of_every_queue(live_engine, viewer_cookie, moves):
    moves.enqueue("a")

    async def body():
        socket, _ = await open_socket(viewer_cookie)
        first = await subscribe(socket, "dashboard")
        assert first["queues"]["a"]["pending"] == 1
        moves.enqueue("b", n=3)  # a new queue: the reader picks it up
        messages: list[dict] = []

        def updates(ms):
            return [m for m in ms if m["kind"] == "update"]  # the dashboard's snapshots are test_live_dashboard's

        await receive_until(
            socket, lambda ms: updates(ms) and updates(ms)[-1]["queues"].get("b", {}).get("pending") == 3, messages
        )
        assert "tasks" not in updates(messages)[-1]  # the dashboard gets counts, not rows

    run(body)


def test_task_page_sees_pending_active_completed_with_result(live_engine, viewer_cookie, moves, redis_url):
    task = moves.enqueue("a", retention=600)[0]
    cursor = EventStreams(redis_url).cursor(["a"])

    async def body():
        socket, _ = await open_socket(viewer_cookie)
        first = await subscribe(socket, "task", queue="a", task=task, cursor=cursor)
        assert first["detail"]["state"] == "pending"
        leases = moves.start("a")
        moves.complete("a", leases, result=b'{"ok": true}')
        messages: list[dict] = []

        def history(ms):
            return [row["to"] for m in ms for row in m["history"]]

        await receive_until(socket, lambda ms: "completed" in history(ms), messages)
        assert history(messages) == ["active", "completed"]
        assert messages[-1]["detail"]["result"]["kind"] == "json"
        assert '"ok": true' in messages[-1]["detail"]["result"]["text"]

    run(body)


def test_resume_after_reconnect_and_restart_misses_nothing(live_engine, viewer_cookie, moves, redis_url):
    cursor = EventStreams(redis_url).cursor(["a"])
    seen: dict[str, dict] = {}

    async def first_session():
        socket, _ = await open_socket(viewer_cookie)
        await subscribe(socket, "queue", queue="a", cursor=cursor)
        ids = moves.enqueue("a", n=3)
        messages: list[dict] = []
        await receive_until(socket, lambda ms: set(ids) <= set(latest_rows(ms)), messages, kinds=("update",))
        seen.update(latest_rows(messages))
        cursor.update(messages[-1]["cursor"])
        return ids

    first = run(first_session)
    # While no page is connected and the console is "restarted" (a new loop, a new hub), work goes on.
    leases = moves.start("a", k=3)
    moves.complete("a", leases[:2])
    later_ids = moves.enqueue("a", n=2)

    async def second_session():
        socket, _ = await open_socket(viewer_cookie)
        replay = await subscribe(socket, "queue", queue="a", cursor=cursor)
        return replay

    replay = run(second_session)
    assert replay["replay"] is True and replay["resync"] is False
    rows = latest_rows([replay])
    done = {task_id for task_id, _ in leases[:2]}
    assert {i for i, r in rows.items() if r["to"] == "completed"} == done
    assert {i for i, r in rows.items() if r["to"] == "active"} == {leases[2][0]}
    assert {i for i, r in rows.items() if r["to"] == "pending"} == set(later_ids)
    assert all(rows[i]["from"] == "pending" for i in first)  # where they were when the page last saw them
    assert replay["queues"]["a"] == {**replay["queues"]["a"], "pending": 2, "active": 1, "completed": 2}
    assert replay["events"] == 3 + 2 + 2  # three dequeues, two completions, two enqueues


def trimmed_past_the_first_task(moves, redis_client) -> tuple[str, str]:
    """The first task of queue ``a`` and the stream id of its creation, once three more tasks have followed it and
    the stream was trimmed past that id (as an exporter's commit trims it)."""
    (task,) = moves.enqueue("a")
    events = Keys().queue("a").events
    first_id = redis_client.xrange(events)[0][0].decode()
    moves.enqueue("a", n=3)
    redis_client.xtrim(events, maxlen=1, approximate=False)
    return task, first_id


def test_resume_from_a_trimmed_position_asks_for_a_resync(live_engine, viewer_cookie, moves, redis_client):
    _task, first_id = trimmed_past_the_first_task(moves, redis_client)

    async def body():
        socket, _ = await open_socket(viewer_cookie)
        replay = await subscribe(socket, "queue", queue="a", cursor={"a": first_id})
        assert replay["resync"] is True
        assert replay["queues"]["a"]["pending"] == 4

    run(body)


def test_a_task_page_resumed_from_a_trimmed_position_needs_no_resync(live_engine, viewer_cookie, moves, redis_client):
    """Its sections come rendered from the task and its whole history, so nothing is missing from the page."""
    task, first_id = trimmed_past_the_first_task(moves, redis_client)

    async def body():
        socket, _ = await open_socket(viewer_cookie)
        replay = await subscribe(socket, "task", queue="a", task=task, cursor={"a": first_id})
        assert replay["resync"] is False and replay["detail"]["state"] == "pending"
        assert replay["detail"]["sections"]

    run(body)


def test_a_burst_is_coalesced_and_ends_in_the_right_state(live_engine, viewer_cookie, moves, redis_url):
    cursor = EventStreams(redis_url).cursor(["burst"])
    n = 1000

    async def body():
        socket, _ = await open_socket(viewer_cookie)
        await subscribe(socket, "queue", queue="burst", cursor=cursor)

        def burst():
            ids = [moves.enqueue("burst", retention=600)[0] for _ in range(n)]  # 1,000 single enqueues
            for _ in range(n // 100):
                moves.complete("burst", moves.start("burst", k=100))  # 1,000 dequeues, 1,000 completes
            return ids

        ids = await asyncio.to_thread(burst)
        messages: list[dict] = []
        await receive_until(socket, lambda ms: sum(m["events"] for m in ms) >= 3 * n, messages, kinds=("update",))
        await socket.disconnect()
        events = sum(m["events"] for m in messages)
        assert events == 3 * n  # every transition is accounted for...
        assert len(messages) < 3 * n / 20  # ...in far fewer messages (4 a second at most)
        final = messages[-1]["queues"]["burst"]
        assert (final["pending"], final["active"], final["completed"]) == (0, 0, n)
        rows = latest_rows(messages)
        assert set(rows) <= set(ids)
        assert all(row["to"] == "completed" for row in messages[-1]["tasks"])
        return events, len(messages)

    run(body)
