"""The Go side itself: what Go's client writes is what its Inspector reads back, and the wire codec reads it."""

from __future__ import annotations

import base64

import redis

from taskq.queues.engine.asynq.keys import AsynqQueueKeys
from taskq.queues.engine.asynq.wire import WireTask


def test_go_enqueue_is_read_back_by_go_and_decoded_here(go, r: redis.Redis) -> None:
    sent = go.enqueue(
        {
            "type": "email:send",
            "payload": base64.b64encode(b'{"to":1}').decode(),
            "queue": "mail",
            "max_retry": 3,
            "timeout_seconds": 60,
            "task_id": "t1",
        }
    )
    assert sent["state"] == "pending"
    back = go("task", "mail", "t1")
    # A pending task's next_process_at is the reading moment's second (Go's GetTaskInfo sets it to now).
    assert back.pop("next_process_at") >= sent.pop("next_process_at")
    assert back == sent
    stored = r.hgetall(AsynqQueueKeys("mail").task("t1"))
    message = WireTask.decode(stored[b"msg"])
    assert (message.type, message.payload, message.retry, message.timeout) == ("email:send", b'{"to":1}', 3, 60)
    assert message.encode() == stored[b"msg"]  # byte for byte, as Go wrote it
