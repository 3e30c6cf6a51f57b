from django.apps import AppConfig


class MetricsConfig(AppConfig):
    """Prometheus metrics for queues and workers."""

    name = "metrics"
    verbose_name = "Metrics"
