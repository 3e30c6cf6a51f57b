from django.apps import AppConfig


class MetricsConfig(AppConfig):
    """Prometheus metrics for queues and workers."""

    name = "taskq.metrics"
    label = "taskq_metrics"
    verbose_name = "Metrics"

    def ready(self) -> None:
        from . import checks  # noqa: F401  registers checks: /metrics access
