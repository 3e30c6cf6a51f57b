"""Run Spark's own daemons from the pyspark wheel, in the foreground (for docker-compose and the integration
tests): no separate Spark download, the same Spark version as the workers' client.

    python -m taskq.worker.spark_daemons master  [--host H] [--port 7077] [--webui-port 8080]
    python -m taskq.worker.spark_daemons worker  MASTER_URL [--cores N] [--memory 1g] [--port P] [--webui-port 8081]
    python -m taskq.worker.spark_daemons connect [--port 15002] [--master local[*]]   # Spark Connect server

``master`` and ``worker`` exec ``bin/spark-class`` with the standalone Master / Worker; ``connect`` execs
``sbin/start-connect-server.sh`` with SPARK_NO_DAEMONIZE set, so it stays in the foreground and a container
or a test stops it with a signal.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from taskq.queues.engine import extras
from taskq.queues.engine.settings import DEFAULTS


def spark_home() -> Path:
    extras.require("spark", "Spark's daemons (pyspark's scripts)", op="spark_daemons")
    import pyspark  # optional: pyspark

    return Path(pyspark.__file__).parent


def spark_class() -> str:
    return str(spark_home() / "bin" / "spark-class")


def connect_script() -> str:
    return str(spark_home() / "sbin" / "start-connect-server.sh")


def argv_for(args: argparse.Namespace) -> list[str]:
    if args.daemon == "master":
        return [
            spark_class(),
            "org.apache.spark.deploy.master.Master",
            "--host",
            args.host,
            "--port",
            str(args.port),
            "--webui-port",
            str(args.webui_port),
        ]
    if args.daemon == "worker":
        argv = [
            spark_class(),
            "org.apache.spark.deploy.worker.Worker",
            "--cores",
            str(args.cores),
            "--memory",
            args.memory,
            "--webui-port",
            str(args.webui_port),
        ]
        if args.host:
            argv += ["--host", args.host]
        if args.port:
            argv += ["--port", str(args.port)]
        return argv + [args.master_url]
    return [
        connect_script(),
        "--master",
        args.master,
        "--conf",
        f"spark.connect.grpc.binding.port={args.port}",
        "--conf",
        "spark.ui.enabled=false",
    ]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m taskq.worker.spark_daemons", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="daemon", required=True)
    master = sub.add_parser("master", help="a standalone Master")
    master.add_argument("--host", default="0.0.0.0")
    master.add_argument("--port", type=int, default=7077)
    master.add_argument("--webui-port", type=int, default=8080)
    worker = sub.add_parser("worker", help="a standalone Worker")
    worker.add_argument("master_url")
    worker.add_argument("--cores", type=int, default=1)
    worker.add_argument("--memory", default="1g")
    worker.add_argument("--host", default="")
    worker.add_argument("--port", type=int, default=0)
    worker.add_argument("--webui-port", type=int, default=8081)
    connect = sub.add_parser("connect", help="a Spark Connect server")
    connect.add_argument("--port", type=int, default=15002)
    connect.add_argument("--master", default=DEFAULTS.spark_master)
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    command = argv_for(args)
    env = dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_NO_DAEMONIZE="1")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    os.execve(command[0], command, env)


if __name__ == "__main__":
    main()
