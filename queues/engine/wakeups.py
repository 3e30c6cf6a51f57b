"""The wake-ups of every long poll in a process, heard on one pub/sub connection.

A script that makes a pending list non-empty publishes on the list's own name (``notify_if_first`` in
``lua/_lib.lua``). A long poll waits for that. Were each wait to subscribe on a connection of its own, N waiting
consumes would hold N connections beside the N their fetches use, and a pool sized for the fetches would run out
("Too many connections") while Redis is healthy. Instead one thread holds one subscription, to the pending-list
channels of every queue at once (a pattern, so no wait ever subscribes or unsubscribes), and sets the events of the
waits on the queue it hears about.

A wait registers before its fetch, so a push between that fetch and the wait still wakes it. While the subscription
is not in place (not made yet, or lost with the connection) pushes go unheard: each time it is made, every
registered wait is woken to fetch again. The thread runs only while waits are registered, and for
``IDLE_EXIT`` seconds after the last one, so a steady stream of polls does not subscribe anew each time and a
process that stops polling keeps no connection for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from .broker import Broker
from .errors import EngineError

log = logging.getLogger("taskq.queues.engine")

LISTEN_SLICE = 0.5  # seconds one read of the subscription blocks: how soon the thread notices it may leave
IDLE_EXIT = 10.0  # seconds without a registered wait before the thread unsubscribes and ends
RETRY_EVERY = 1.0  # seconds between two attempts to subscribe while Redis does not answer
_GLOB_SPECIAL = "\\*?[]"


def glob_escape(text: str) -> str:
    """``text`` matched literally by a Redis glob pattern (PSUBSCRIBE, SCAN MATCH)."""
    return "".join("\\" + c if c in _GLOB_SPECIAL else c for c in text)


class WakeUps:
    """``WakeUps(broker, pattern)``: ``pattern`` matches the channel of every pending list waits may name."""

    def __init__(self, broker: Broker, pattern: str, op: str = "consumer.wakeups") -> None:
        self._broker, self._pattern, self._op = broker, pattern, op
        self._lock = threading.Lock()
        self._waits: dict[bytes, set[threading.Event]] = {}  # channel -> the events of the waits on it
        self._thread: threading.Thread | None = None
        self._idle_since = time.monotonic()
        self._closed = threading.Event()

    @contextmanager
    def watching(self, channels: Sequence[str]) -> Iterator[threading.Event]:
        """An event set whenever one of ``channels`` hears a push (or the subscription is made again), for as long
        as the block runs. Clear it before each fetch, then wait on it."""
        event = threading.Event()
        names = [c.encode() for c in channels]
        with self._lock:
            for name in names:
                self._waits.setdefault(name, set()).add(event)
            # A thread that died of something unforeseen is replaced, not waited on.
            if (self._thread is None or not self._thread.is_alive()) and not self._closed.is_set():
                self._thread = threading.Thread(target=self._listen, name="taskq-wakeups", daemon=True)
                self._thread.start()
        try:
            yield event
        finally:
            with self._lock:
                for name in names:
                    waiting = self._waits.get(name)
                    if waiting is not None:
                        waiting.discard(event)
                        if not waiting:
                            del self._waits[name]
                if not self._waits:
                    self._idle_since = time.monotonic()

    def close(self) -> None:
        """End the thread (within LISTEN_SLICE seconds) and wake every wait; no thread starts again."""
        self._closed.set()
        self._wake_all()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=LISTEN_SLICE * 4)

    # -- the thread ------------------------------------------------------------------------------------------------

    def _listen(self) -> None:
        while True:
            try:
                self._follow()
                return
            except EngineError as exc:
                # The waits still end at their own time bound; their fetches report the outage to the caller.
                log.warning("long-poll wake-ups lost their subscription (%s); subscribing again", exc)
                self._closed.wait(RETRY_EVERY)
                if self._leaving():
                    return

    def _follow(self) -> None:
        # Subscription confirmations are read, not ignored: the one for the pattern says pushes now reach us.
        pubsub = self._broker.subscription(self._op)
        try:
            pubsub.psubscribe(self._pattern)
            while not self._leaving():
                message = pubsub.get_message(timeout=LISTEN_SLICE)
                if message is None:
                    continue
                if message["type"] == "pmessage":
                    self._wake(message["channel"])
                elif message["type"] == "psubscribe":
                    self._wake_all()  # what was pushed before we heard is fetched again
        finally:
            pubsub.close()  # never raises: the connection is dropped either way

    def _leaving(self) -> bool:
        """Whether the thread should end now (closed, or idle for IDLE_EXIT); if so it is forgotten, under the lock,
        so the next wait starts another."""
        with self._lock:
            idle = not self._waits and time.monotonic() - self._idle_since >= IDLE_EXIT
            if self._closed.is_set() or idle:
                if self._thread is threading.current_thread():
                    self._thread = None
                return True
            return False

    def _wake(self, channel: bytes) -> None:
        with self._lock:
            events = list(self._waits.get(channel, ()))
        for event in events:
            event.set()

    def _wake_all(self) -> None:
        with self._lock:
            events = [event for waiting in self._waits.values() for event in waiting]
        for event in events:
            event.set()


__all__ = ["WakeUps", "glob_escape"]
