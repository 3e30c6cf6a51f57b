"""A wake-up for a task of an event loop that any thread may give: the subscriber (a queue got its first task),
the definitions watcher (the served queues changed) and an operator's quiet or stop set it from their threads.

It has the face of the ``threading.Event`` that the thread pool's fetch thread waits on (``set``, ``clear``,
``is_set``), so those callers need not know which pool runs; only the loop awaits it (``wait``)."""

from __future__ import annotations

import asyncio
import threading


class LoopSignal:
    """Set from any thread, awaited on one loop (``bind`` names it, from that loop, before the first ``wait``)."""

    def __init__(self) -> None:
        self._flag = False
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._owner = 0  # the loop's thread: a set from there needs no cross-thread call

    def bind(self) -> None:
        """Attach to the running loop; a set that came before is kept."""
        self._loop = asyncio.get_running_loop()
        self._owner = threading.get_ident()
        self._event = asyncio.Event()
        if self._flag:
            self._event.set()

    def set(self) -> None:
        self._flag = True
        loop, event = self._loop, self._event
        if loop is None or event is None:
            return
        if threading.get_ident() == self._owner:
            event.set()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(event.set)

    def clear(self) -> None:
        self._flag = False
        if self._event is not None:
            self._event.clear()

    def is_set(self) -> bool:
        return self._flag

    async def wait(self, timeout: float) -> None:
        """Until set, or ``timeout`` seconds (from the loop only). It stays set: the caller clears it when it has
        seen what the signal was for, before looking, so that a set while it looks is not lost."""
        assert self._event is not None, "bind() first"
        if not self._event.is_set() and timeout > 0:
            try:
                async with asyncio.timeout(timeout):
                    await self._event.wait()
            except TimeoutError:
                pass
