"""Built-in task types the worker serves: ``spark:submit`` (see ``taskq.worker.spark_submit``)."""

from . import spark_submit  # noqa: F401  (registers the handler)
