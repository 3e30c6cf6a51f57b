"""The soak's live pages: many WebSockets held open on the console, each keeping the view its page would show,
built only from what the console pushed; at the end, each view is compared with a fresh load of the same page.

A page's view is what ``live.js`` keeps from the messages (``console/live/consumers.py`` lists them): the counts
of every queue it was sent (updates replace a queue's counts), the dashboard's rows (merged by queue, the queues
no longer listed dropped) and chart, the queue page's banner snapshot, the rows of its tab, the servers (their
identity, state, queues and running tasks; their usage figures tick on the page by design) and the summary bar.
A fresh load is a new socket with the same subscription, read for ``settle`` seconds: its catch-up and the hub's
next round of snapshots (every ``DASHBOARD_IDLE`` seconds at most when idle) give everything a page renders.

A socket the console closes (a page that fell behind is told to reconnect) is opened again, as ``live.js``
does, and counted; its view carries on from its catch-up. Messages are parsed once per distinct text: pages
of the same subscription get the same text, so hundreds of sockets cost the parse of one.

Used by ``bench/soak.py``; the loop runs in a thread of its own, the soak's driver and sampler in others.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from bench.ws_client import Closed, WebSocket

OPENING = 50  # handshakes in flight at once
RECONNECT_DELAY = 1.0
SERVER_FIELDS = ("id", "host", "pid", "status", "concurrency", "queues")
T = TypeVar("T")


def subscriptions(count: int, queues: list[str]) -> list[dict[str, Any]]:
    """The mix of pages, per ten sockets: five queue pages (each queue on each tab, in turn),
    three dashboards, one servers page, one page live for its summary bar only. Every other page follows the
    summary bar too, as the console's pages do."""
    tabs = ("pending", "completed", "scheduled", "retry", "archived")
    pages: list[dict[str, Any]] = []
    for i in range(count):
        slot = i % 10
        if slot < 5:
            n = i // 10 * 5 + slot  # the n-th queue page: every (queue, tab) pair in turn
            tab = {"state": tabs[n // len(queues) % len(tabs)], "page": 1, "size": 20}
            page: dict[str, Any] = {"scope": "queue", "queue": queues[n % len(queues)], "tab": tab}
        elif slot < 8:
            page = {"scope": "dashboard"}
        elif slot == 8:
            page = {"scope": "servers"}
        else:
            pages.append({"op": "subscribe", "scope": "summary"})
            continue
        pages.append({"op": "subscribe", "summary": True, **page})
    return pages


@functools.lru_cache(maxsize=2048)
def parsed(text: str) -> dict[str, Any]:
    """One message as data. Shared between the pages that got the same text: never modified."""
    return dict(json.loads(text))


class View:
    """What one page shows, from the messages it got."""

    def __init__(self) -> None:
        self.parts: dict[str, Any] = {}
        self.errors: list[str] = []

    def apply(self, data: dict[str, Any]) -> None:
        kind = data.get("kind")
        if kind == "update":
            self.parts.setdefault("counts", {}).update(data.get("queues", {}))
        elif kind == "dashboard":
            rows = self.parts.setdefault("rows", {})
            rows.update({row["queue"]: row for row in data.get("rows", ())})
            for gone in set(rows) - set(data.get("listed", rows)):
                del rows[gone]
            if "chart" in data:
                self.parts["chart"] = data["chart"]
        elif kind == "queue":
            self.parts["queue"] = {k: data.get(k) for k in ("paused", "figures", "types", "groups")}
        elif kind == "tab":
            self.parts["tab"] = {"ids": data.get("ids"), "rows": data.get("rows")}
        elif kind == "servers":
            self.parts["servers"] = sorted(
                ({**{f: s.get(f) for f in SERVER_FIELDS}, "running": s.get("running")} for s in data["servers"]),
                key=lambda s: str(s["id"]),
            )
        elif kind == "summary":
            self.parts["summary"] = data.get("summary")
        elif kind == "error":
            self.errors.append(str(data.get("message")))


class Page:
    """One socket and its view; reopened when the console closes it."""

    def __init__(self, subscription: dict[str, Any]) -> None:
        self.subscription = subscription
        self.view = View()
        self.messages = 0
        self.reconnects = 0
        self.opened = asyncio.Event()
        self.failure = ""

    async def run(self, port: int, cookie: str, gate: asyncio.Semaphore) -> None:
        while True:
            try:
                async with gate:
                    socket = await WebSocket.connect(
                        "127.0.0.1",
                        port,
                        "/ws/live/",
                        {"Origin": f"http://127.0.0.1:{port}", "Cookie": f"sessionid={cookie}"},
                    )
                    await socket.send_json(self.subscription)
                await self._read(socket)
            except (Closed, ConnectionError, asyncio.IncompleteReadError, OSError) as exc:
                self.failure = repr(exc)
                self.reconnects += 1
                await asyncio.sleep(RECONNECT_DELAY)

    async def _read(self, socket: WebSocket) -> None:
        try:
            while True:
                data = parsed(await socket.receive())
                self.messages += 1
                self.view.apply(data)
                if data.get("replay"):
                    self.opened.set()
        finally:
            await socket.close()


class PageFleet:
    """The pages, on an event loop in a thread of its own; every method is called from other threads."""

    def __init__(self, port: int, cookie: str) -> None:
        self.port, self.cookie = port, cookie
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="soak-pages", daemon=True)
        self.thread.start()
        self.pages: list[Page] = []
        self.tasks: list[asyncio.Task[None]] = []

    def _call(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def open(self, subscriptions: list[dict[str, Any]], timeout: float = 120.0) -> int:
        """Open a page per subscription and wait for each one's catch-up; returns how many got it in time."""
        return self._call(self._open(subscriptions, timeout))

    async def _open(self, subscriptions: list[dict[str, Any]], timeout: float) -> int:
        gate = asyncio.Semaphore(OPENING)
        pages = [Page(s) for s in subscriptions]
        self.pages += pages
        self.tasks += [asyncio.create_task(p.run(self.port, self.cookie, gate)) for p in pages]
        waits = [asyncio.create_task(p.opened.wait()) for p in pages]
        await asyncio.wait(waits, timeout=timeout)
        for wait in waits:
            wait.cancel()
        return sum(p.opened.is_set() for p in pages)

    def freeze(self) -> list[dict[str, Any]]:
        """Every page's view now (copies: the pages go on receiving)."""
        return self._call(self._freeze())

    async def _freeze(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(page.view.parts) for page in self.pages]

    def stats(self) -> dict[str, Any]:
        return self._call(self._stats())

    async def _stats(self) -> dict[str, Any]:
        return {
            "pages": len(self.pages),
            "messages": sum(p.messages for p in self.pages),
            "reconnects": sum(p.reconnects for p in self.pages),
            "errors_pushed": sum(len(p.view.errors) for p in self.pages),
            "last_failure": next((p.failure for p in self.pages if p.failure), ""),
        }

    def fresh_views(self, subscriptions: list[dict[str, Any]], settle: float) -> dict[str, dict[str, Any]]:
        """A fresh load of each distinct subscription: a new socket read for ``settle`` seconds, then closed."""
        return self._call(self._fresh(subscriptions, settle))

    async def _fresh(self, subscriptions: list[dict[str, Any]], settle: float) -> dict[str, dict[str, Any]]:
        distinct = {key(s): s for s in subscriptions}
        pages = {k: Page(s) for k, s in distinct.items()}
        gate = asyncio.Semaphore(OPENING)
        tasks = [asyncio.create_task(p.run(self.port, self.cookie, gate)) for p in pages.values()]
        await asyncio.sleep(settle)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return {k: copy.deepcopy(p.view.parts) for k, p in pages.items()}

    def close(self) -> None:
        self._call(self._close(), timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    async def _close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def key(subscription: dict[str, Any]) -> str:
    return json.dumps(subscription, sort_keys=True)


def compare(frozen: list[dict[str, Any]], pages: list[Page], fresh: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each page's view against the fresh load of its subscription: the pages that differ, and in which parts."""
    differing: list[dict[str, Any]] = []
    for index, (view, page) in enumerate(zip(frozen, pages, strict=True)):
        reference = fresh[key(page.subscription)]
        parts = sorted(part for part in set(view) | set(reference) if view.get(part) != reference.get(part))
        if parts:
            example = {part: [view.get(part), reference.get(part)] for part in parts[:1]}
            differing.append(
                {"page": index, "subscription": page.subscription, "parts": parts, "live_vs_fresh": str(example)[:800]}
            )
    return {"pages": len(frozen), "equal": len(frozen) - len(differing), "differing": differing[:10]}
