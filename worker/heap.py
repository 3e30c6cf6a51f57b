"""How the worker process sets CPython's cyclic garbage collector once it has started, before the first task.

Why: a worker allocates container objects at a steady rate per task (the attempt, its task and message, and for
async handlers the coroutine, its asyncio task, futures and handles), and most of them die young. With CPython's
defaults (a young collection every 700 allocations), a drain of async handlers at concurrency 64 spent about a
seventh of the process's CPU in the collector: about 1,400 young collections and 11 full ones per 40,000 tasks, and
each full one walked the 110,000 objects that Django, the handler modules and the registry leave behind at start
(measured with ``gc.callbacks``, docs/benchmarks.md). Two settings take most of that away:

- ``gc.freeze()`` once everything is built: what start-up created lives as long as the process, so it moves to the
  permanent generation that no collection walks again (and a fork shares its pages rather than copying them as a
  collection touches them);
- a young generation of ``YOUNG_THRESHOLD`` allocations instead of 700: a young collection walks what is alive
  among the young objects, which at a given concurrency is about the same however rarely it runs, so running it
  about fourteen times less often costs about fourteen times less. Garbage cycles wait a little longer to be freed;
  objects that refcounting frees (nearly all of a task's) are freed at once as before.

Handlers' own objects are collected as before, only in larger steps.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000


def settle() -> None:
    """Freeze what start-up built and make young collections rarer (see the module's docstring). Called once by
    ``manage.py taskworker`` (each process of ``--processes``), when it has imported the handlers and built its
    server, before the server fetches a task; never by code that embeds a ``Server`` in a process of its own."""
    gc.freeze()
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
