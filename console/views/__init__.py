"""Console views, one module per page or concern."""

from .health import dashboard, healthz

__all__ = ["dashboard", "healthz"]
