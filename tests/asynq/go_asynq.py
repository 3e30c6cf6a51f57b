"""Real Go asynq for the interoperability tests: ``goasynq/`` (a Go program of this repository, pinned by its
go.mod to asynq v0.26.0) built once per source version from the Go module proxy, then run as asynq's client,
Inspector (what asynq's CLI prints), Server and Scheduler.

The binary is kept in ``~/.cache/taskq/go`` (``TASKQ_GO_CACHE``) under a name that carries a digest of its
sources, so a CI run from a fresh clone builds it only when they changed; Go's own module and build caches keep
the downloads between runs.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).with_name("goasynq")
CACHE = Path(os.environ.get("TASKQ_GO_CACHE") or Path.home() / ".cache" / "taskq" / "go")
#: Prints a Go new enough for asynq: the one on PATH, or Go's toolchain module fetched from the module proxy.
ENSURE_GO = Path(__file__).resolve().parents[2] / "scripts" / "ensure-go.sh"
#: The asynq version go.mod pins: what these tests prove taskq against.
ASYNQ_VERSION = "v0.26.0"


class GoAsynqError(RuntimeError):
    """goasynq exited with an error (its stderr is the message)."""


def binary() -> Path:
    """The built goasynq for the current sources, building it first if needed (one build at a time, across
    pytest-xdist workers)."""
    digest = hashlib.sha256(
        b"".join((SOURCE / name).read_bytes() for name in ("main.go", "go.mod", "go.sum"))
    ).hexdigest()[:12]
    target = CACHE / f"goasynq-{digest}"
    if target.exists():
        return target
    found = subprocess.run(["bash", str(ENSURE_GO)], capture_output=True, text=True, timeout=600)
    if found.returncode:
        raise GoAsynqError(f"no Go toolchain to build asynq with ({ENSURE_GO.name}):\n{found.stderr}")
    go = found.stdout.strip()
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            partial = target.with_suffix(".partial")
            built = subprocess.run(
                [go, "build", "-mod=mod", "-o", str(partial), "."],
                cwd=SOURCE,
                capture_output=True,
                text=True,
                timeout=600,
            )
            if built.returncode:
                raise GoAsynqError(f"building goasynq failed:\n{built.stderr}")
            partial.rename(target)
    return target


def run(redis_url: str, *args: str, stdin: Any = None) -> Any:
    """One goasynq command (``enqueue`` reads ``stdin`` as JSON); its JSON output."""
    done = subprocess.run(
        [str(binary()), *args],
        input=None if stdin is None else json.dumps(stdin),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "REDIS_URL": redis_url},
    )
    if done.returncode:
        raise GoAsynqError(done.stderr.strip())
    return json.loads(done.stdout)


@contextmanager
def running(redis_url: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """A long-running goasynq (``serve`` or ``schedule``), started and confirmed up; stopped with SIGTERM (then
    SIGKILL) when the block ends, unless the test killed it already."""
    proc = subprocess.Popen(
        [str(binary()), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "REDIS_URL": redis_url},
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line:
            raise GoAsynqError(f"goasynq {args[0]} did not start: {proc.stderr.read() if proc.stderr else ''}")
        yield proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[str], timeout: float = 15.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_until(predicate: Any, timeout: float = 30.0, interval: float = 0.05) -> Any:
    """The first truthy value of ``predicate()``; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s: {predicate}")
        time.sleep(interval)
