"""Running a long-lived process (the worker, the scheduler) until SIGTERM or SIGINT, then stopping it cleanly."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("worker")


def run_until_signalled(
    start: Callable[[], None], stop: Callable[[], None], stopping: threading.Event | None = None
) -> None:
    """Call ``start``, block until SIGTERM or SIGINT (or until ``stopping`` is set from inside), then call ``stop``
    (also when ``start`` fails). The previous signal handlers are restored afterwards, so tests can run this in
    the main thread."""
    stopping = stopping or threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("received %s", signal.Signals(signum).name)
        stopping.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        start()
        while not stopping.wait(0.5):
            pass
    finally:
        stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
