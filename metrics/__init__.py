"""Prometheus collector and the /metrics view."""
