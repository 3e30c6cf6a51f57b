"""A live hub whose Redis is away warns and reads again on its next round, for every read of a round: the servers
pages' read too. It raised instead, so each round while Redis was away logged an ERROR with a traceback ("sending an
update failed"), which the soak (bench/soak.py) counts as an error nobody provoked."""

from __future__ import annotations

import asyncio
import logging

import pytest

from taskq.console.live.hub import SERVERS, LiveHub, LiveMessage
from taskq.queues.engine import Inspector
from taskq.queues.engine.events import AsyncEventStreams
from tests.ports import free_port

pytestmark = pytest.mark.timeout(60)


class Page:
    """A servers page's end of the hub: what it was sent, and whether it was told to retry."""

    def __init__(self) -> None:
        self.messages: list[LiveMessage] = []
        self.refused: list[str] = []

    def deliver(self, message: LiveMessage) -> None:
        self.messages.append(message)

    def refuse(self, reason: str) -> None:
        self.refused.append(reason)


def test_the_servers_read_warns_while_redis_is_away(caplog: pytest.LogCaptureFixture) -> None:
    away = f"redis://127.0.0.1:{free_port()}/1"  # nothing listens there: every read is refused

    async def body() -> None:
        hub = LiveHub(AsyncEventStreams(away), inspector=lambda: Inspector(away))
        page = Page()
        hub.watch(page, SERVERS)
        with caplog.at_level(logging.WARNING, logger="taskq.console.live"):
            await hub._servers(None)
        assert page.messages == [] and page.refused == []
        await hub.streams.close()

    asyncio.run(body())
    warned = [r for r in caplog.records if r.name == "taskq.console.live"]
    assert [r.levelno for r in warned] == [logging.WARNING]
    assert "cannot read the servers" in warned[0].getMessage()
