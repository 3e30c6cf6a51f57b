"""The polling hub (``console/live/polling.py``: the live console over a Redis that writes no event stream) over the
real ASGI app and Redis: pages get the stream mode's updates from polling, and however many pages are open, Redis
sees one round of reads a second from the process.

The hub reads through the inspector, so its rounds are the same on taskq's keys and asynq's; these tests drive it on
taskq's (the engine's own transitions move the tasks), and tests/asynq/test_console_live.py on a Go asynq server's.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter

import pytest
import redis
from live_support import open_socket, receive_until, run, subscribe

from taskq.console.live import process_hub
from taskq.console.live.hub import default_inspector
from taskq.console.live.polling import PolledStreams, PollingHub

pytestmark = pytest.mark.timeout(90)

PAGES = 25  # sockets of each kind in the many-pages round
WINDOW = 6.0  # seconds the poller runs while Redis's commands are counted


def polling_hub(interval: float = 1.0) -> PollingHub:
    """A polling hub as this process's, started (what ``live_hub()`` builds over asynq's keys)."""
    hub = PollingHub(PolledStreams(default_inspector), poll_interval=interval)
    process_hub._hubs[asyncio.get_running_loop()] = hub
    hub.start()
    return hub


#: A key no test writes: reading it marks the end of a count in MONITOR's stream (``Monitor.stop``).
MARK = "taskq-test-monitor-mark"


#: How much more one round may cost with many pages than with one: nothing per page, with room for a stray read.
SAME_ROUND = 1.2
#: What a new connection of the pool sends before its first command: not a round's reads.
CONNECTION_SETUP = frozenset({"SELECT", "CLIENT", "HELLO", "AUTH"})


class Monitor:
    """Every command Redis runs on one database, as MONITOR reports it, counted by name, from ``start`` to ``stop``."""

    def __init__(self, redis_url: str) -> None:
        self.client = redis.Redis.from_url(redis_url)
        self.database = self.client.connection_pool.connection_kwargs.get("db", 0)
        self.counts: Counter[str] = Counter()
        self.counting = False
        self._marked = threading.Event()
        self._monitor = self.client.monitor()
        self._monitor.__enter__()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while True:
            try:
                seen = self._monitor.next_command()
            except Exception:  # the monitor connection closed: done
                return
            if MARK in seen["command"]:
                self._marked.set()
            elif self.counting and int(seen.get("db", -1)) == self.database:
                name = seen["command"].split(" ", 1)[0].upper()
                if name not in CONNECTION_SETUP:
                    self.counts[name] += 1

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def window(self, seconds: float) -> Counter[str]:
        """The commands of the next ``seconds``."""
        self.counts = Counter()
        self.counting = True
        time.sleep(seconds)
        self.counting = False
        return Counter(self.counts)

    def start(self) -> None:
        self.counts = Counter()
        self._marked.clear()
        self.counting = True

    def stop(self) -> Counter[str]:
        """The commands run since ``start``, up to a marker command sent now: Redis reports commands to MONITOR in
        the order it runs them, so everything run before the marker is counted however late the report comes."""
        self.client.exists(MARK)
        if not self._marked.wait(30):
            raise AssertionError("MONITOR never reported the marker command")
        self.counting = False
        return Counter(self.counts)

    def close(self) -> None:
        self._monitor.__exit__()
        self.client.close()


def test_pages_follow_redis_by_polling(live_engine, viewer_cookie, moves):
    """A dashboard, a queue page and a task page get what changed without any event: counts, the dashboard's rows,
    the queue's banner, the task's state."""
    [task_id] = moves.enqueue("a")

    async def body():
        polling_hub()
        dashboard, _ = await open_socket(viewer_cookie)
        queue, _ = await open_socket(viewer_cookie)
        task, _ = await open_socket(viewer_cookie)
        first = await subscribe(dashboard, "dashboard")
        assert first["replay"] is True and first["queues"]["a"]["pending"] == 1
        assert (await subscribe(queue, "queue", queue="a"))["queues"]["a"]["pending"] == 1
        assert (await subscribe(task, "task", queue="a", task=task_id))["detail"]["state"] == "pending"
        leases = moves.start("a")
        seen: list[dict] = []
        await receive_until(
            dashboard, lambda ms: any(m.get("queues", {}).get("a", {}).get("active") == 1 for m in ms), seen
        )
        await receive_until(
            queue, lambda ms: any(m.get("queues", {}).get("a", {}).get("active") == 1 for m in ms), seen
        )
        await receive_until(task, lambda ms: any(m.get("detail", {}).get("state") == "active" for m in ms), seen)
        moves.complete("a", leases)
        await receive_until(task, lambda ms: any(m.get("detail", {}).get("state") == "completed" for m in ms), seen)
        dashboards: list[dict] = []
        await receive_until(
            dashboard,
            lambda ms: any(
                r["queue"] == "a" and r["cells"]["processed_today"][0] == "1" for m in ms for r in m["rows"]
            ),
            dashboards,
            ("dashboard",),
        )

    run(body)


async def open_pages(cookie: str, n: int, queue: str, task_id: str) -> None:
    """``n`` pages of each kind a poll round reads for: a dashboard with its summary bar, a queue page with its tab,
    a task page, the servers page."""
    for _ in range(n):
        for scope, fields in (
            ("dashboard", {"summary": True}),
            ("queue", {"queue": queue, "tab": {"state": "pending", "page": 1, "size": 20}}),
            ("task", {"queue": queue, "task": task_id}),
            ("servers", {}),
        ):
            socket, _ = await open_socket(cookie)
            await subscribe(socket, scope, **fields)


async def one_round(hub: PollingHub, monitor: Monitor) -> int:
    """The commands of one round of ``hub`` (driven by hand: its own loop must be waiting) that sends nothing new."""
    await hub.poll_once()  # settles what new pages were sent, so the next round sends only changes
    await asyncio.sleep(0.2)  # and lets the new pages' own first reads end
    monitor.start()
    await hub.poll_once()
    return sum((await asyncio.to_thread(monitor.stop)).values())


async def polled(hub: PollingHub, monitor: Monitor, seconds: float) -> tuple[int, int]:
    """Restart ``hub``'s own loop at a round a second; the rounds it made in ``seconds``, and Redis's commands."""
    hub.poll_interval = 1.0
    for task in hub._tasks:
        task.cancel()
    hub._tasks = []
    hub.start()
    rounds_before = hub.rounds
    counts = await asyncio.to_thread(monitor.window, seconds)
    return hub.rounds - rounds_before, sum(counts.values())


def test_redis_sees_one_round_a_second_however_many_pages(live_engine, viewer_cookie, moves, redis_url):
    """One round's commands are no more for ``PAGES`` pages of each kind than for one (``SAME_ROUND``); and over
    ``WINDOW`` seconds of polling, Redis runs at most ``WINDOW + 2`` rounds' worth of commands from the process."""
    for queue in ("a", "b"):
        moves.enqueue(queue, n=3)
    [task_id] = moves.enqueue("a")
    monitor = Monitor(redis_url)

    async def body():
        hub = polling_hub(interval=3600.0)  # its loop polls once now, then waits: the rounds here are ours
        await open_pages(viewer_cookie, 1, "a", task_id)
        one_page_each = await one_round(hub, monitor)
        await open_pages(viewer_cookie, PAGES - 1, "a", task_id)
        many_pages_each = await one_round(hub, monitor)
        # The pages share the round: none reads on its own, so 25 pages of each kind cost what one does (give or take
        # a read that a page still had in flight), not 25 times as much.
        assert 0 < many_pages_each <= one_page_each * SAME_ROUND
        rounds, commands = await polled(hub, monitor, WINDOW)
        assert rounds <= WINDOW + 2
        assert commands <= many_pages_each * (WINDOW + 2)

    try:
        run(body)
    finally:
        monitor.close()
