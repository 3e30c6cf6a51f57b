"""Where Spark runs and how the session is built, for Spark tasks in the worker and for the analytics job.

Three places Spark can run, with no code change between them: ``local[*]`` inside the process (the default),
a standalone cluster (``SPARK_MASTER=spark://host:7077``), or a Spark Connect server
(``SPARK_REMOTE=sc://host:15002``; Connect serves the DataFrame/SQL API only: no RDDs, no SparkContext).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taskq.queues.engine import extras
from taskq.queues.engine.quoting import shown
from taskq.queues.engine.settings import DEFAULTS, TaskqSettings

DEFAULT_MASTER = DEFAULTS.spark_master
DEFAULT_APP_NAME = DEFAULTS.spark_app_name

# Defaults the deployment can override through SPARK_CONF: UTC everywhere (the pipeline partitions by UTC date),
# FAIR scheduling so the Spark tasks of one worker share its session's executors instead of queueing, and no
# console progress bars (a worker's log and a command's output are no place for them).
BASE_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.scheduler.mode": "FAIR",
    "spark.ui.showConsoleProgress": "false",
}
#: Spark's log4j configuration for a driver started here: warnings to SPARK_LOG_FILE, only errors to the terminal.
LOG4J_CONFIG = Path(__file__).with_name("spark-log4j2.properties")
SPARK_LOG_FILE = "var/log/spark.log"


def quiet_driver_options(log_file: str) -> str:
    """``spark.driver.extraJavaOptions`` that send the driver's warnings to ``log_file`` (read when the JVM starts,
    so it applies from Spark's first line on)."""
    return f"-Dlog4j2.configurationFile={LOG4J_CONFIG} -Dtaskq.spark.log={log_file}"


def parse_conf(text: str) -> dict[str, str]:
    """``SPARK_CONF`` as a JSON object (``{"spark.executor.memory": "2g"}``) or ``k=v;k=v`` pairs."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"SPARK_CONF is not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ValueError("SPARK_CONF JSON must be an object of key: value")
        return {str(k): str(v) for k, v in value.items()}
    conf = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"SPARK_CONF entry {shown(part)} is not key=value")
        conf[key.strip()] = value.strip()
    return conf


@dataclass(frozen=True)
class SparkSettings:
    master: str = DEFAULT_MASTER
    remote: str = ""  # sc://host:port: Spark Connect instead of a master
    app_name: str = DEFAULT_APP_NAME
    conf: Mapping[str, str] = field(default_factory=dict)

    @property
    def connect(self) -> bool:
        return bool(self.remote)

    @property
    def where(self) -> str:
        return self.remote or self.master

    @classmethod
    def from_settings(cls, settings: TaskqSettings) -> SparkSettings:
        """From taskq's settings: SPARK_MASTER, SPARK_REMOTE, SPARK_APP_NAME, SPARK_CONF (a string as above, or
        already a dict in Django's settings). An empty master or name is the default."""
        conf: str | Mapping[str, Any] = settings.spark_conf or {}
        return cls(
            master=settings.spark_master or DEFAULT_MASTER,
            remote=settings.spark_remote or "",
            app_name=settings.spark_app_name or DEFAULT_APP_NAME,
            conf=parse_conf(conf) if isinstance(conf, str) else {str(k): str(v) for k, v in conf.items()},
        )


def build_session(settings: SparkSettings) -> Any:
    """A SparkSession for these settings (the one already active in this process, when there is one).

    Raises MissingExtraError (naming the ``spark`` extra) where pyspark is not installed."""
    extras.require("spark", "Spark (Spark tasks, the analytics job)", op="sparkconf.build_session")
    from pyspark.sql import SparkSession  # optional: pyspark (taskq[spark])

    # Python UDFs run in executor processes; unless told otherwise, they use this interpreter (the worker's
    # virtualenv, with pyarrow and the handlers' dependencies), not whatever "python3" is first on the PATH.
    if not settings.connect:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(settings.app_name)
    builder = builder.remote(settings.remote) if settings.connect else builder.master(settings.master)
    conf = dict(BASE_CONF) if not settings.connect else {"spark.sql.session.timeZone": "UTC"}
    logging.getLogger("py4j").setLevel(logging.WARNING)  # its INFO lines (connections opened, closed) are noise
    if not settings.connect:
        log_file = Path(SPARK_LOG_FILE).resolve()
        log_file.parent.mkdir(parents=True, exist_ok=True)
        conf["spark.driver.extraJavaOptions"] = quiet_driver_options(str(log_file))
    conf.update(settings.conf)
    for key, value in conf.items():
        builder = builder.config(key, value)
    if settings.connect:
        return builder.getOrCreate()
    with _stderr_to(Path(SPARK_LOG_FILE).resolve()):
        return builder.getOrCreate()


@contextmanager
def _stderr_to(log_file: Path) -> Iterator[None]:
    """Point this process's stderr (file descriptor 2) at ``log_file`` while the block runs, then back. A Spark
    driver started meanwhile inherits it, so what the JVM itself prints (its warnings before log4j is set up)
    goes to the log too, not to the terminal of ``task_analytics`` or the worker."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(log_file, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def is_connect_session(session: Any) -> bool:
    """Whether ``session`` talks to a Spark Connect server (no SparkContext there)."""
    return type(session).__module__.startswith("pyspark.sql.connect")
