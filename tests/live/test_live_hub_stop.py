"""A live hub always stops: ``LiveHub.stop`` cancels its reader, flusher and dashboard tasks and waits for them, so
a task that outlives its cancellation, or an await on a Redis that stopped answering, would hold a console
process's shutdown (and a test's event loop) forever. Each stop here is bounded by ``WAIT`` only so that such a hang
fails the test instead of reaching pytest's timeout."""

from __future__ import annotations

import asyncio
import signal
import subprocess

import pytest
from live_support import WAIT

from taskq.console.live.hub import LiveHub, woken
from taskq.queues.engine import Client
from taskq.queues.engine.events import AsyncEventStreams
from tests.ports import free_port
from tests.topology.topology_support import _require, _start

pytestmark = pytest.mark.timeout(60)
HUB_TASKS = {"live-reader", "live-flusher", "live-dashboard"}


async def stopped_within_wait(hub: LiveHub) -> None:
    """Stop ``hub`` and close its connections, failing with TimeoutError after WAIT seconds."""
    async with asyncio.timeout(WAIT):
        await hub.stop()
        await hub.streams.close()


def test_a_hub_stops_when_its_loops_are_woken_as_it_stops(live_engine, redis_url):
    """Events arrive (``accept``) in the very turn of the event loop in which the hub is stopped: the waits of the
    flusher and the dashboard loop have ended but their tasks have not run yet. The cancellation must still end
    them (``asyncio.wait_for`` of Python 3.11 returned the event's result instead, and the loops went on)."""

    async def body():
        hub = LiveHub(AsyncEventStreams(redis_url))
        hub.start()
        async with asyncio.timeout(WAIT):
            await hub.ready.wait()
        tasks = hub_tasks()
        hub.accept([])  # what the reader does with each XREAD reply: wakes the flusher and the dashboard loop
        await asyncio.sleep(0)  # one turn: the event's waiters finish, the loops are woken but not yet resumed
        await stopped_within_wait(hub)
        assert all(task.done() for task in tasks)

    asyncio.run(body())


def test_a_hub_stops_as_its_reader_sends_an_xread_to_a_redis_that_stopped_answering(tmp_path):
    """The hub is stopped in the turn its reader sends its XREAD BLOCK to a server that froze (SIGSTOP: the socket
    stays open, no reply ever comes). redis-py sends each command through ``asyncio.wait_for`` (its socket timeout),
    which on Python 3.11 loses a cancellation that comes as the send completes: the reader carries on, waiting for
    a reply. Stopping the hub and closing its connections still end."""
    port = free_port()
    servers: list[subprocess.Popen] = []
    server = _start(servers, [_require("redis-server"), "--save", ""], tmp_path / "redis", port)
    url = f"redis://127.0.0.1:{port}/0"
    with Client(url) as client:
        client.enqueue("live:test", {"n": 0}, queue="a")  # a queue, so the reader blocks in XREAD, not in a sleep

    async def body():
        hub = LiveHub(AsyncEventStreams(url))
        hub.start()
        async with asyncio.timeout(WAIT):
            await hub.ready.wait()  # set by the reader just before it sends the XREAD BLOCK of its next read
        tasks = hub_tasks()
        server.send_signal(signal.SIGSTOP)
        try:
            await stopped_within_wait(hub)
        finally:
            server.send_signal(signal.SIGCONT)
        assert all(task.done() for task in tasks)

    try:
        asyncio.run(body())
    finally:
        for server in servers:
            server.kill()
            server.wait()


@pytest.mark.parametrize("turns", [0, 1, 2])
def test_a_wait_for_an_event_ends_when_cancelled_as_the_event_is_set(turns):
    """What the hub's loops wait with: a cancellation that comes ``turns`` turns of the event loop after its event
    is set, while the wait has not returned yet, ends the task cancelled (``asyncio.wait_for`` of Python 3.11
    returned that the event was set one turn later, and the loop went on)."""

    async def body():
        event = asyncio.Event()
        waiting = asyncio.create_task(woken(event, WAIT))
        for _ in range(2):
            await asyncio.sleep(0)  # the task starts and waits on the event (through a task of its own, or not)
        event.set()
        for _ in range(turns):
            await asyncio.sleep(0)
        taken = waiting.cancel()  # False only when the wait had already returned: then there is nothing to end
        await asyncio.gather(waiting, return_exceptions=True)
        assert waiting.cancelled() or not taken

    asyncio.run(body())


def hub_tasks() -> list[asyncio.Task]:
    """The running hub's three tasks, found by the names ``LiveHub.start`` gives them."""
    tasks = [task for task in asyncio.all_tasks() if task.get_name() in HUB_TASKS]
    assert len(tasks) == len(HUB_TASKS)
    return tasks
