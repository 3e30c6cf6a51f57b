"""Handlers of the process-pool tests. They run in child processes, which find them by importing this module, so
they live here at module level (a handler defined inside a test cannot cross into a child). Each registers in
this module's own ``registry``, never the global one.

A handler that must be seen running announces it with ``task.progress(0, 1)``: the write goes through the
worker to Redis, so the test sees it with the inspector and needs no channel of its own into the child."""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from taskq.queues.engine import LeaseLostError, Registry, SkipRetry, Task, handler

registry = Registry()


def never(*_args: object) -> float:
    """A retry delay far beyond any test, so a failed task stays in retry."""
    return 10_000.0


class NeedsTwoArguments(Exception):
    """Does not survive pickling (its constructor wants two arguments back): crosses as a stand-in."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"{code} {reason}")


@handler("proc:add", registry=registry)
def add(task: Task) -> None:
    task.progress(1, 1)
    task.write_result({"sum": sum(task.json()), "pid": os.getpid()})


@handler("proc:pid", registry=registry)
async def pid(task: Task) -> None:
    await asyncio.sleep(0)
    task.write_result({"pid": os.getpid()})


@handler("proc:fail", registry=registry, retry_delay=lambda n, exc, task: 10.0 * (n + 1))
def fail(task: Task) -> None:
    raise ValueError("bad input")


@handler("proc:skip", registry=registry)
def skip(task: Task) -> None:
    raise SkipRetry("negative amount")


@handler("proc:odd", registry=registry, retry_delay=never)
def odd(task: Task) -> None:
    raise NeedsTwoArguments(503, "upstream down")


@handler("proc:spin", registry=registry, retry_delay=never)
def spin(task: Task) -> None:
    """CPU-bound and deaf to ``task.cancelled``: only stopping the process ends it. ``{"deaf": true}`` also
    ignores the stop signal, so only SIGKILL does; ``{"mark": path}`` registers an on_cancel callback that
    writes that file."""
    options = task.json()
    if options.get("deaf"):
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    if options.get("mark"):
        task.on_cancel(lambda: Path(options["mark"]).write_text(f"cancelled {task.id}"))
    task.progress(0, 1)
    while True:
        pass


@handler("proc:sleep", registry=registry)
def sleep(task: Task) -> None:
    task.progress(0, 1)
    time.sleep(task.json()["seconds"])
    task.write_result({"pid": os.getpid()})


@handler("proc:die", registry=registry, retry_delay=never)
def die(task: Task) -> None:
    how = task.json()["how"]
    if how == "exit":
        os._exit(3)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    ctypes.string_at(0)  # segfault


@handler("proc:stale", registry=registry, retry_delay=never)
def stale(task: Task) -> None:
    """Runs until the test creates the file ``go``, then writes its result and records how the write went."""
    paths = task.json()
    task.progress(0, 1)
    deadline = time.monotonic() + 30
    while not Path(paths["go"]).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        task.write_result(b"from the zombie")
        Path(paths["seen"]).write_text("written")
    except LeaseLostError as exc:
        Path(paths["seen"]).write_text(type(exc).__name__)


@handler("proc:lookup", registry=registry)
def lookup(task: Task) -> None:
    raise KeyError("no such account")


@registry.use
def lookups_are_final(task: Task) -> Iterator[None]:
    """Middleware runs in the child around the handler: it turns a KeyError into SkipRetry."""
    try:
        yield
    except KeyError as exc:
        raise SkipRetry(f"middleware saw {exc!r}") from exc


def payload(**values: object) -> bytes:
    return json.dumps(values).encode()
