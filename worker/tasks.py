"""Built-in task types the worker serves: ``spark:submit`` (see ``worker.spark_submit``)."""

from . import spark_submit  # noqa: F401  (registers the handler)
