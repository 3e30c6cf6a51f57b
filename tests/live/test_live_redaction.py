"""The live feed under TASKS_REDACT (issue 22): every frame a viewer's socket receives, the queue page's rows and
the task page's detail, holds no value of a redacted key, however deep."""

from __future__ import annotations

import json

import pytest
from live_support import latest_rows, open_socket, receive_until, run, subscribe

from taskq.queues.engine.events import EventStreams
from taskq.queues.engine.redaction import MASK

pytestmark = pytest.mark.timeout(60)

PASSWORD = "LIVE-SECRET-pw"
TOKEN = "LIVE-SECRET-token"


def test_live_frames_of_queue_and_task_pages_are_masked(live_engine, viewer_cookie, moves, redis_url, settings):
    settings.TASKS_REDACT = {"types": [], "keys": ["password", "card", "token"]}
    cursor = EventStreams(redis_url).cursor(["a"])
    payload = {"user": "ada", "login": [{"Password": PASSWORD}]}
    task = moves.client.enqueue("user:signup", payload, queue="a", retention=600).id

    async def body():
        rows, _ = await open_socket(viewer_cookie)
        frames = [await subscribe(rows, "queue", queue="a", cursor=cursor)]
        detail, _ = await open_socket(viewer_cookie)
        frames.append(await subscribe(detail, "task", queue="a", task=task, cursor=cursor))
        moves.complete("a", moves.start("a"), result=json.dumps({"session": {"token": TOKEN}}).encode())

        def completed(ms):
            return any(row["to"] == "completed" for m in ms for row in m.get("history", ()))

        task_frames: list[dict] = []
        await receive_until(detail, completed, task_frames)
        assert MASK in task_frames[-1]["detail"]["result"]["text"] and task_frames[-1]["detail"]["result"]["redacted"]
        queue_frames: list[dict] = []
        await receive_until(
            rows, lambda ms: latest_rows(ms).get(task, {}).get("to") == "completed", queue_frames, kinds=("update",)
        )
        # A row carries the event (type, states, worker, error), never the payload; the detail carries the result.
        assert "payload" not in latest_rows(queue_frames)[task]
        for frame in [*frames, *task_frames, *queue_frames]:
            text = json.dumps(frame, ensure_ascii=False)
            assert PASSWORD not in text and TOKEN not in text, frame

    run(body)


ERROR_SECRET = "LIVE-hunter2"


def test_live_frames_mask_what_the_patterns_match_in_error_text(live_engine, viewer_cookie, moves, redis_url, settings):
    """TASKS_REDACT_PATTERNS (issue 35): error text an API consumer wrote (the worker masks its own before storing
    it) reaches no socket unmasked: not the queue page's row, not the task page's detail, history or sections."""
    import time

    settings.TASKS_REDACT_PATTERNS = [r"(?i)password is \S+"]
    cursor = EventStreams(redis_url).cursor(["a"])
    task = moves.client.enqueue("user:login", {"user": "ada"}, queue="a").id

    async def body():
        rows, _ = await open_socket(viewer_cookie)
        frames = [await subscribe(rows, "queue", queue="a", cursor=cursor)]
        detail, _ = await open_socket(viewer_cookie)
        frames.append(await subscribe(detail, "task", queue="a", task=task, cursor=cursor))
        [(task_id, token)] = moves.start("a")
        error = f"login refused: password is {ERROR_SECRET}"
        moves.broker.run(moves.ops.retry("a", task_id, token, time.time() + 600, error, worker="test-worker"))

        def retried(ms):
            return any(row["to"] == "retry" for m in ms for row in m.get("history", ()))

        task_frames: list[dict] = []
        await receive_until(detail, retried, task_frames)
        assert task_frames[-1]["detail"]["last_error"] == f"login refused: {MASK}"
        queue_frames: list[dict] = []
        await receive_until(
            rows, lambda ms: latest_rows(ms).get(task, {}).get("to") == "retry", queue_frames, kinds=("update",)
        )
        assert latest_rows(queue_frames)[task]["error"] == f"login refused: {MASK}"
        for frame in [*frames, *task_frames, *queue_frames]:
            assert ERROR_SECRET not in json.dumps(frame, ensure_ascii=False), frame

    run(body)


def test_the_rows_of_a_watched_tab_are_masked_as_the_lists_are(live_engine, viewer_cookie, moves, settings):
    """The hub renders an open tab's rows with their payload previews: masked for every watcher, as lists are."""
    settings.TASKS_REDACT = {"types": [], "keys": ["password"]}
    moves.client.enqueue("user:signup", {"user": "ada", "login": [{"Password": PASSWORD}]}, queue="a")

    async def body():
        socket, _ = await open_socket(viewer_cookie)
        frames = [await subscribe(socket, "queue", queue="a", tab={"state": "pending", "page": 1, "size": 20})]
        await receive_until(socket, lambda ms: any(m["kind"] == "tab" for m in ms), frames)
        return frames

    frames = run(body)
    (tab,) = [frame for frame in frames if frame["kind"] == "tab"]
    assert "ada" in tab["rows"] and MASK in tab["rows"]
    for frame in frames:
        assert PASSWORD not in json.dumps(frame, ensure_ascii=False), frame
