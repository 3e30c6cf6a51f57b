"""The places of waiting consumes (``queues/api/waiting.py``): a bad TASKS_API_MAX_WAITERS is named, and the
refusal says which setting and value hold the consume back. The refusal under real load: test_api_long_poll_load."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from django.core.exceptions import ImproperlyConfigured

from taskq.queues.api.waiting import Waiters


@pytest.mark.parametrize("limit", [0, -1, 10_001, True, "64"])
def test_a_limit_that_is_not_a_count_of_threads_is_named(limit):
    with pytest.raises(ImproperlyConfigured, match=r"TASKS_API_MAX_WAITERS must be an integer from 1 to 10000"):
        Waiters(limit)


def test_a_consume_beyond_the_places_is_refused_and_a_freed_place_admits_the_next():
    waiters = Waiters(1)
    release = threading.Event()

    async def scenario() -> tuple[object, object, object]:
        holding = asyncio.ensure_future(waiters.run(lambda: release.wait(30) and "first"))
        while waiters._places._value:  # the first has its place (a readiness wait, not a timed assertion)
            await asyncio.sleep(0.01)
        refused = await waiters.run(lambda: "second")
        release.set()
        return await holding, refused, await waiters.run(lambda: "third")

    first, refused, third = asyncio.run(scenario())
    assert (first, third) == ("first", "third")
    assert refused.status_code == 429 and refused["Retry-After"] == "1"
    doc = json.loads(refused.content)
    assert doc["error"] == "too_many_waiters"
    assert "TASKS_API_MAX_WAITERS (1)" in doc["message"] and "Redis" not in doc["message"]
