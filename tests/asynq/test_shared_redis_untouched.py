"""A Redis that Go asynq shares gets asynq's keys from taskq and nothing of taskq's own: running asynq's
transitions never makes a broker load taskq's function library there (the choice between FCALL and EVALSHA,
which loads it, is made only for a script of that library)."""

from __future__ import annotations

import asyncio

import redis

from taskq.queues.engine.asynq.producer import AsyncAsynqClient
from taskq.queues.engine.asynq.worker_store import AsynqWorkerStore
from taskq.queues.engine.broker import AsyncBroker, Broker


def test_asynq_transitions_load_no_taskq_library(r: redis.Redis, redis_url: str) -> None:
    broker = Broker(redis_url)
    try:
        store = AsynqWorkerStore(broker)
        assert store.dequeue(["default"]) is None  # one script run, over asynq's keys
        assert store.forward(["default"]) == 0  # and another
        assert broker.as_functions is None  # undecided: the library was never loaded
    finally:
        broker.close()


def test_the_asyncio_face_neither(r: redis.Redis, redis_url: str) -> None:
    async def enqueue() -> bool | None:
        broker = AsyncBroker(redis_url)
        try:
            await AsyncAsynqClient(broker=broker).enqueue("email:send", b"{}")
            return broker.as_functions
        finally:
            await broker.close()

    assert asyncio.run(enqueue()) is None
