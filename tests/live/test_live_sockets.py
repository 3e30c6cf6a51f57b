"""Many open pages on one console process: real daphne, real sockets (issue 16: channels-redis's pool stopped a
process at 99 live pages; the sockets past them got nothing and still looked live)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from live_support import WAIT

from bench.ws_client import WebSocket
from taskq.console.live import consumers

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SOCKETS = 300
OPENING = SOCKETS  # all at once, as when a restarted console is reconnected by every open page
CONNECT_ATTEMPTS = 5


async def open_page(daphne, cookie: str, subscription: dict[str, Any], gate: asyncio.Semaphore) -> WebSocket:
    """A socket subscribed like a page, after its catch-up message (which says it is live)."""
    async with gate:
        for attempt in range(CONNECT_ATTEMPTS):
            try:
                socket = await WebSocket.connect(
                    "127.0.0.1", daphne.port, "/ws/live/", {"Origin": daphne.url, "Cookie": f"sessionid={cookie}"}
                )
                break
            except (ConnectionResetError, asyncio.IncompleteReadError):
                # Hundreds of connects at once overflow the listen backlog (TCP, before daphne sees them); a
                # browser retries such a connect, and so do we.
                if attempt == CONNECT_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.2)
        await socket.send_json({"op": "subscribe", **subscription})
        first = await asyncio.wait_for(socket.receive_json(), WAIT)
        assert first.get("replay") is True, first
        return socket


async def next_update_shows(socket: WebSocket, shows) -> bool:
    while True:
        message = await socket.receive_json()
        if shows(message):
            return True


def test_300_sockets_on_one_process_each_get_the_next_update(daphne, moves):
    moves.enqueue("many")
    cookie = daphne.session_cookie()
    queue_page = {"scope": "queue", "queue": "many"}
    dashboard = {"scope": "dashboard"}

    async def body():
        gate = asyncio.Semaphore(OPENING)
        pages = [queue_page if i % 3 else dashboard for i in range(SOCKETS)]  # two queue pages per dashboard
        sockets = await asyncio.gather(*(open_page(daphne, cookie, page, gate) for page in pages))
        try:
            probe = (await asyncio.to_thread(moves.enqueue, "many"))[0]

            def shows(page: dict[str, Any]):
                if page is queue_page:
                    return lambda m: any(row["id"] == probe for row in m.get("tasks", ()))
                return lambda m: m.get("kind") == "update" and m["queues"].get("many", {}).get("pending") == 2

            got = await asyncio.gather(
                *(asyncio.wait_for(next_update_shows(s, shows(p)), WAIT) for s, p in zip(sockets, pages, strict=True)),
                return_exceptions=True,
            )
        finally:
            await asyncio.gather(*(s.close() for s in sockets))
        missed = [i for i, ok in enumerate(got) if ok is not True]
        assert not missed, f"{len(missed)} of {SOCKETS} sockets missed the update: {got[missed[0]]!r}"

    asyncio.run(body())


def test_a_page_the_process_cannot_serve_is_told_to_retry_and_closed(live_engine, viewer_cookie, monkeypatch):
    """Past MAX_SOCKETS a page gets an error saying why, with ``retry``, and a 4013 close: it shows it is not
    live and reconnects (live.js), instead of sitting frozen while marked live."""
    from live_support import open_socket, run, subscribe

    monkeypatch.setattr(consumers, "MAX_SOCKETS", 2)

    async def body():
        served = []
        for _ in range(2):
            socket, _ = await open_socket(viewer_cookie)
            served.append(await subscribe(socket, "dashboard"))
        assert all(first["replay"] for first in served)
        third, _ = await open_socket(viewer_cookie)
        refused = await subscribe(third, "dashboard")
        assert refused["kind"] == "error" and refused["retry"] is True and "most pages (2)" in refused["message"]
        closed = await third.receive_output(timeout=WAIT)
        assert closed == {"type": "websocket.close", "code": consumers.RETRY_LATER}

    run(body)


def test_pages_are_told_to_retry_when_the_event_streams_cannot_be_read(live_engine, viewer_cookie, tmp_path):
    """A Redis that goes away while pages are live: each is told, with ``retry``, and closed; new pages are
    refused the same way until the streams read again."""
    import subprocess

    from live_support import open_socket, receive_until, run, subscribe

    from taskq.console.live import hub as hub_module
    from taskq.console.live import process_hub
    from taskq.queues.engine.events import AsyncEventStreams
    from tests.ports import free_port
    from tests.topology.topology_support import _require, _start

    port = free_port()
    servers: list[subprocess.Popen] = []
    _start(servers, [_require("redis-server"), "--save", ""], tmp_path / "redis", port)

    async def body():
        hub = hub_module.LiveHub(AsyncEventStreams(f"redis://127.0.0.1:{port}/0"))
        process_hub._hubs[asyncio.get_running_loop()] = hub  # this console process reads that server
        hub.start()
        socket, _ = await open_socket(viewer_cookie)
        assert (await subscribe(socket, "queue", queue="a"))["replay"] is True
        servers[0].kill()
        servers[0].wait()
        errors: list[dict] = []
        await receive_until(socket, bool, errors, kinds=("error",))  # after the page's first snapshot, maybe
        assert errors[0]["retry"] is True and "cannot be read" in errors[0]["message"]
        assert await socket.receive_output(timeout=WAIT) == {"type": "websocket.close", "code": consumers.RETRY_LATER}
        again, _ = await open_socket(viewer_cookie)
        assert (await subscribe(again, "queue", queue="a"))["retry"] is True

    try:
        run(body)
    finally:
        for server in servers:
            server.kill()
            server.wait()
