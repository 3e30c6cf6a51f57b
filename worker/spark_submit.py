"""The built-in ``spark:submit`` task type (see ``taskq.worker.spark_submitter`` for what it runs): importing this
module registers its handler, as ``taskq.worker.tasks`` does for every worker."""

from __future__ import annotations

from taskq.queues.engine import handler

from .spark_submitter import (
    ApplicationNotAllowedError,
    SparkSubmitError,
    SparkSubmitter,
    command,
    spark_submit_path,
    submit_with_environment,
)

__all__ = [
    "ApplicationNotAllowedError",
    "SparkSubmitError",
    "SparkSubmitter",
    "command",
    "spark_submit_path",
    "submit",
]

submit = handler("spark:submit", max_retry=3)(submit_with_environment)
