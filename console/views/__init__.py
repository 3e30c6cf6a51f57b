"""Console views, one module per page or concern: dashboard, queues, tasks, servers, redis, settings, actions,
and the public health probe."""

from .health import healthz

__all__ = ["healthz"]
