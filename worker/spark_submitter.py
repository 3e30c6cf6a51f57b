"""What runs a ``spark:submit`` task (registered in ``taskq.worker.spark_submit``): submit a Spark application (a
.py file or a jar) with pyspark's bundled ``spark-submit``, as a supervised subprocess of the handler.

Payload (JSON): ``app`` (path, required), ``args`` (list), ``conf`` (dict), ``master`` (default: the worker's
SPARK_MASTER setting), ``deploy_mode`` ("client" or "cluster"), ``main_class`` (jars), ``name``, ``py_files``,
``jars``, ``files`` (lists), ``env`` (dict of extra environment variables).

* Output (stdout and stderr, merged) is read as it comes; the last lines are kept: as the result on success,
  in the error on failure.
* The application id (``app-…``/``application_…``/``local-…``) or driver id (``driver-…``, cluster mode) is
  written to the task's result as soon as it appears.
* Cancel, timeout and deadline kill the process group (SIGTERM, SIGKILL after a grace period); a driver started
  in cluster mode is killed with ``spark-submit --kill``.
* Exit code 0 is success; anything else is a failure that retries as usual.

Anyone who can enqueue ``spark:submit`` runs code on the worker: restrict the applications to directories with
the ``SPARK_SUBMIT_ALLOWED_DIRS`` setting (colon-separated; unset allows any path).

The settings are read once, with the worker's (``SubmitSettings`` in ``WorkerConfig``): the worker's composition root
builds a ``SparkSubmitter`` on them and binds the registered ``spark:submit`` handler to it, to run in the worker
process (a handler process has no composition root). Called outside a worker (eager mode, a test calling the
handler), the handler reads the environment's (``submit_with_environment``).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from taskq.queues.engine import Handler, SkipRetry, Task, extras
from taskq.queues.engine.quoting import shown

from .config import SubmitSettings, environment_submit_settings

TAIL_LINES = 60
KILL_GRACE = 5.0
APP_ID = re.compile(r"\b(application_\d+_\d+|app-\d{14}-\d{4,}|driver-\d{14}-\d{4,}|local-\d{13})\b")
LISTS = ("py_files", "jars", "files")


class SparkSubmitError(Exception):
    """spark-submit ended badly; the message holds the exit code and the last lines of its output."""


class ApplicationNotAllowedError(SkipRetry):
    """The payload's application is outside SPARK_SUBMIT_ALLOWED_DIRS: refused, and archived without a retry."""


def spark_submit_path() -> str:
    extras.require("spark", "spark:submit (pyspark's spark-submit)", op="spark_submit")
    import pyspark  # optional: pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-submit")


def _strings(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise SkipRetry(f"spark:submit: {name} must be a list of strings")
    return [str(v) for v in value]


def _mapping(value: Any, name: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SkipRetry(f"spark:submit: {name} must be an object")
    return {str(k): str(v) for k, v in value.items()}


def _check_app(app: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(app, str) or not app:
        raise SkipRetry("spark:submit: payload needs 'app', the path of a .py file or a jar")
    if allowed and not any(Path(app).resolve().is_relative_to(Path(d).resolve()) for d in allowed):
        raise ApplicationNotAllowedError(f"spark:submit: {shown(app)} is outside SPARK_SUBMIT_ALLOWED_DIRS")
    return app


def command(spec: dict[str, Any], settings: SubmitSettings) -> tuple[list[str], str, str]:
    """The spark-submit command line of a payload, its master and deploy mode; SkipRetry for a bad payload,
    ApplicationNotAllowedError for an application outside the allowed directories."""
    app = _check_app(spec.get("app"), settings.allowed_dirs)
    master = str(spec.get("master") or settings.master)
    mode = str(spec.get("deploy_mode") or "client")
    if mode not in ("client", "cluster"):
        raise SkipRetry("spark:submit: deploy_mode must be 'client' or 'cluster'")
    cmd = [spark_submit_path(), "--master", master, "--deploy-mode", mode]
    if spec.get("name"):
        cmd += ["--name", str(spec["name"])]
    if spec.get("main_class"):
        cmd += ["--class", str(spec["main_class"])]
    for name in LISTS:
        items = _strings(spec.get(name), name)
        if items:
            cmd += [f"--{name.replace('_', '-')}", ",".join(items)]
    for key, value in _mapping(spec.get("conf"), "conf").items():
        cmd += ["--conf", f"{key}={value}"]
    return cmd + [app] + _strings(spec.get("args"), "args"), master, mode


class Submission:
    """One running spark-submit: reads its output, remembers the tail and the application id, kills it."""

    def __init__(self, cmd: list[str], env: dict[str, str], task: Task) -> None:
        self.task = task
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.app_id = ""
        self.killed = False
        self.proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            text=True,
            errors="replace",
        )
        self._reader = threading.Thread(target=self._read, name=f"spark-submit-{task.id[:16]}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.tail.append(line.rstrip("\n"))
            if not self.app_id:
                found = APP_ID.search(line)
                if found:
                    self.app_id = found.group(1)
                    try:
                        self.task.write_result({"application_id": self.app_id, "state": "running"})
                    except Exception:  # the lease may be gone; the final result says it again
                        pass

    def kill(self) -> None:
        """SIGTERM the whole process group (spark-submit, its JVM and Python), SIGKILL after a grace period."""
        self.killed = True
        for sig, wait in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def wait(self) -> int:
        code = self.proc.wait()
        self._reader.join(5)
        return code

    def output(self, lines: int = TAIL_LINES) -> str:
        return "\n".join(list(self.tail)[-lines:])


def _kill_driver(master: str, driver_id: str, env: dict[str, str]) -> None:
    """A cluster-mode driver runs on the cluster, not under our process: ask the master to kill it."""
    subprocess.run(
        [spark_submit_path(), "--master", master, "--kill", driver_id],
        env=env,
        timeout=60,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )


class SparkSubmitter:
    """Runs ``spark:submit`` tasks with the worker's submit settings."""

    def __init__(self, settings: SubmitSettings) -> None:
        self.settings = settings

    def bind(self, registered: Handler) -> Handler:
        """The handler a worker runs for ``registered``: the built-in ``spark:submit`` (also as a test registers it
        again, with a retry delay of its own) runs with these settings, in the worker process; any other is
        ``registered`` itself."""
        if registered.func is not submit_with_environment:
            return registered
        return dataclasses.replace(registered, func=self.run, in_worker=True)

    def run(self, task: Task) -> None:
        spec = task.json() if task.payload else {}
        if not isinstance(spec, dict):
            raise SkipRetry("spark:submit: payload must be a JSON object")
        cmd, master, mode = command(spec, self.settings)
        env = {**os.environ, **_mapping(spec.get("env"), "env")}
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        run = Submission(cmd, env, task)

        def cancel() -> None:
            run.kill()
            if mode == "cluster" and run.app_id.startswith("driver-"):
                _kill_driver(master, run.app_id, env)

        unregister = task.on_cancel(cancel)
        try:
            code = run.wait()
        finally:
            unregister()
        if run.killed or task.cancelled:
            raise SparkSubmitError(f"spark-submit killed (exit {code}); last output:\n{run.output(15)}"[:4000])
        if code != 0:
            raise SparkSubmitError(f"spark-submit exited with {code}; last output:\n{run.output(15)}"[:4000])
        task.write_result({"application_id": run.app_id, "exit_code": code, "output": run.output()})


def submit_with_environment(task: Task) -> None:
    """The registered ``spark:submit`` handler's function: outside a worker, which binds the handler to its own
    settings (``SparkSubmitter.bind``), it runs with the environment's."""
    SparkSubmitter(environment_submit_settings()).run(task)
