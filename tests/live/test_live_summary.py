"""The summary bar's live feed (issue 27) over the real ASGI app and Redis: a page live for its bar only gets the
figures at once, then each change; a page of another scope gets them beside its own messages when it asks, and
never when it does not (so the other scopes' messages are what they were)."""

from __future__ import annotations

import pytest
from live_support import open_socket, receive_until, run, subscribe

from taskq.queues.engine import Inspector

pytestmark = pytest.mark.timeout(60)


def fresh(redis_url: str) -> dict[str, int]:
    with Inspector(redis_url) as inspector:
        summary = inspector.fleet_summary(inspector.queues())
    return {name: getattr(summary, name) for name in vars(summary)}


def test_a_page_live_for_its_bar_gets_the_figures_then_each_change(live_engine, viewer_cookie, moves, redis_url):
    moves.enqueue("a", n=2)

    async def body():
        socket, _ = await open_socket(viewer_cookie)
        first = await subscribe(socket, "summary")
        assert first == {"kind": "summary", "summary": fresh(redis_url), "replay": True}
        assert first["summary"]["pending"] == 2
        moves.enqueue("b", n=3)
        moves.complete("a", moves.start("a", 1))
        messages: list = []
        await receive_until(socket, lambda m: m and m[-1]["summary"] == fresh(redis_url), messages, ("summary",))
        assert messages[-1]["summary"]["pending"] == 4 and messages[-1]["summary"]["processed_today"] == 1

    run(body)


def test_another_scope_gets_the_bar_only_when_it_asks(live_engine, viewer_cookie, moves, redis_url):
    async def body():
        asking, _ = await open_socket(viewer_cookie)
        silent, _ = await open_socket(viewer_cookie)
        await subscribe(asking, "queue", queue="a", summary=True)
        await subscribe(silent, "queue", queue="a")
        moves.enqueue("a")
        seen: list = []
        await receive_until(asking, lambda m: any(x["kind"] == "summary" and x["summary"]["pending"] == 1 for x in m),
                            seen)  # fmt: skip
        kinds: list = []
        await receive_until(silent, lambda m: any(x["kind"] == "queue" for x in m), kinds)  # its own snapshot
        while not await silent.receive_nothing(timeout=1.5):  # whatever else it is sent, for another round
            kinds.append(await silent.receive_json_from())
        assert "summary" not in {m["kind"] for m in kinds}

    run(body)
