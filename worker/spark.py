"""Spark tasks: handlers registered with ``@handler(..., spark=True)`` get the worker's SparkSession as
``task.spark``.

One session per worker process, built on the first Spark task (a worker that never runs one never starts a
JVM), shared by every Spark task of the process, stopped when the worker stops. Around each Spark task:

* its jobs carry the task's tag: the job group in classic mode (local or a standalone cluster), a session tag on
  Spark Connect; both are per thread, and each handler has its own thread;
* a monitor thread writes progress (completed / total Spark tasks of the task's jobs) with ``task.progress`` at
  most every ``progress_interval``, from the status tracker (classic) or Connect's progress handler;
* timeout, deadline and operator cancel (``Task.cancel`` from the watchdog or subscriber thread) cancel the
  job group / interrupt the tag. A job started after the cancel is cancelled too: the monitor repeats the cancel
  while the handler is still inside Spark;
* Spark errors become a short readable error (error class and message, not a JVM stack trace).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from taskq.queues.engine import Task
from taskq.queues.sparkconf import SparkSettings, build_session, is_connect_session

log = logging.getLogger("taskq.worker.spark")

MAX_SPARK_ERROR = 1000


class SparkJobError(Exception):
    """A Spark task's job failed; the message is the Spark error class and its first lines."""


def job_tag(task: Task) -> str:
    """The tag of a task's Spark jobs. Tags may not hold commas and task ids may hold anything, so ids other
    than plain ones are replaced by a digest (queue included: ids are unique per queue only)."""
    ident = f"{task.queue}/{task.id}"
    if re.fullmatch(r"[A-Za-z0-9_.:/-]{1,100}", ident):
        return f"taskq/{ident}"
    return "taskq/" + hashlib.sha1(ident.encode()).hexdigest()


def readable_spark_error(exc: BaseException) -> str | None:
    """``"<ERROR_CLASS>: message"`` for a Spark error (None for anything else), without the JVM stack trace:
    the first line of the message, and the last line of a Python worker's traceback when there is one (the
    actual exception of a failing UDF)."""
    try:
        from pyspark.errors import PySparkException  # optional: pyspark
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return None
    if isinstance(exc, PySparkException):
        condition = exc.getCondition() or type(exc).__name__
        message = exc.getMessage() if hasattr(exc, "getMessage") else str(exc)
    elif type(exc).__name__ == "Py4JJavaError":
        condition, message = "Py4JJavaError", str(getattr(exc, "java_exception", exc))
    else:
        return None
    message = re.sub(r"^\[[A-Z0-9_.]+\]\s*", "", (message or str(exc)).strip())
    lines = [line for line in message.splitlines() if line.strip() and not line.startswith(("\tat ", "    at "))]
    head = lines[0] if lines else ""
    if "Traceback (most recent call last)" in message:
        last = [
            line
            for line in message.split("JVM stacktrace:")[0].splitlines()
            if line.strip() and not line.startswith((" ", "\t"))
        ]
        if last and last[-1] != head:
            head = f"{head} ... {last[-1].strip()}"
    return f"{condition}: {head}"[:MAX_SPARK_ERROR]


class _Progress:
    """Writes a task's progress when it changed, at most once per interval."""

    def __init__(self, task: Task, interval: float, clock: Any) -> None:
        self.task, self.interval, self.clock = task, interval, clock
        self.last: tuple[int, int] | None = None
        self.written_at = -1e18

    def report(self, done: int, total: int, force: bool = False) -> None:
        if total <= 0 or (done, total) == self.last:
            return
        now = self.clock()
        if not force and now - self.written_at < self.interval:
            return
        try:
            self.task.progress(done, total)
        except Exception as exc:  # the lease may be gone; progress is best effort
            log.debug("task %s: progress not written: %s", self.task.id, exc)
        self.last, self.written_at = (done, total), now


class SparkRunner:
    """The worker's Spark session and what runs around each Spark task."""

    def __init__(
        self, settings: SparkSettings | None = None, *, session: Any = None, progress_interval: float = 0.5
    ) -> None:
        self.settings = settings or SparkSettings()
        self.progress_interval = progress_interval
        self._session = session
        self._owns_session = session is None  # a session handed in (tests) is the caller's to stop
        self._lock = threading.Lock()
        self._local = threading.local()  # the running task's progress, for Connect's progress handler

    # -- the session ---------------------------------------------------------------------------------------------

    def session(self) -> Any:
        with self._lock:
            if self._session is None:
                log.info("starting Spark session on %s", self.settings.where)
                self._session = build_session(self.settings)
                if is_connect_session(self._session):
                    self._session.registerProgressHandler(self._connect_progress)
            return self._session

    @property
    def started(self) -> bool:
        return self._session is not None

    def stop(self) -> None:
        with self._lock:
            session, self._session = self._session, None
        if session is not None and self._owns_session:
            log.info("stopping Spark session")
            try:
                session.stop()
            except Exception as exc:  # the cluster may be gone already
                log.warning("stopping the Spark session failed: %s", exc)

    # -- around one task -----------------------------------------------------------------------------------------

    @contextmanager
    def attach(self, task: Task) -> Iterator[Any]:
        """Run a Spark task's handler inside this: tag, progress, cancellation and readable errors."""
        spark = self.session()
        task.spark = spark
        tag = job_tag(task)
        connect = is_connect_session(spark)
        progress = _Progress(task, self.progress_interval, _monotonic)
        if connect:
            spark.addTag(tag)
            self._local.progress = progress

            def cancel() -> None:
                spark.interruptTag(tag)
        else:
            sc = spark.sparkContext
            sc.setJobGroup(tag, f"taskq {task.type} {task.id}", interruptOnCancel=True)

            def cancel() -> None:
                sc.cancelJobGroup(tag)

        unregister = task.on_cancel(cancel)
        done = threading.Event()
        monitor = threading.Thread(
            target=self._monitor,
            args=(spark, tag, task, progress, cancel, done, connect),
            name=f"spark-monitor-{task.id[:16]}",
            daemon=True,
        )
        monitor.start()
        try:
            yield spark
        except Exception as exc:
            text = readable_spark_error(exc)
            if text is None:
                raise
            if task.cancelled:
                raise SparkJobError(f"Spark jobs cancelled: {text}") from None
            raise SparkJobError(text) from None
        finally:
            unregister()
            done.set()
            monitor.join(5)
            if connect:
                self._local.progress = None
                _quietly(spark.removeTag, tag)
            else:
                _quietly(spark.sparkContext.setLocalProperty, "spark.jobGroup.id", None)
                _quietly(spark.sparkContext.setLocalProperty, "spark.job.description", None)
                _quietly(spark.sparkContext.setLocalProperty, "spark.job.interruptOnCancel", None)

    def _monitor(
        self, spark: Any, tag: str, task: Task, progress: _Progress, cancel: Any, done: threading.Event, connect: bool
    ) -> None:
        while not done.wait(min(self.progress_interval, 0.25)):
            if task.cancelled:
                _quietly(cancel)  # again: a job the handler started after the first cancel
                continue
            if not connect:
                counts = _classic_progress(spark.sparkContext, tag)
                if counts is not None:
                    progress.report(*counts)
        if not task.cancelled and not connect:
            counts = _classic_progress(spark.sparkContext, tag)
            if counts is not None:
                progress.report(*counts, force=True)

    def _connect_progress(self, stages: Any, inflight_tasks: int, operation_id: str | None, done: bool) -> None:
        """Connect calls this in the thread running the query, so the thread-local names the task."""
        progress = getattr(self._local, "progress", None)
        if progress is None or not stages:
            return
        total = sum(stage.num_tasks for stage in stages)
        finished = sum(stage.num_completed_tasks for stage in stages)
        progress.report(finished, total, force=done)


def _classic_progress(sc: Any, tag: str) -> tuple[int, int] | None:
    """Completed and total Spark tasks over every job of the group so far."""
    try:
        tracker = sc.statusTracker()
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(tag):
            job = tracker.getJobInfo(job_id)
            if job is None:
                continue
            finished = job.status == "SUCCEEDED"  # its skipped stages (reused shuffle output) count as done
            for stage_id in job.stageIds:
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numTasks if finished else stage.numCompletedTasks
                    total += stage.numTasks
        return (done, total) if total else None
    except Exception as exc:  # the context may be stopping
        log.debug("no Spark progress for %s: %s", tag, exc)
        return None


def _quietly(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception as exc:
        log.debug("%s failed: %s", getattr(fn, "__name__", fn), exc)


def _monotonic() -> float:
    return time.monotonic()
