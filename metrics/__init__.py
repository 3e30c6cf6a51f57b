"""Prometheus collector and the /metrics view."""

# One module, one name: this folder is the package taskq.metrics (taskq/metrics links here). Imported by its
# folder's name, from a checkout's root on sys.path, every module would load a second time, with registries of its
# own.
if __name__ != "taskq.metrics":
    raise ImportError(f"import taskq.metrics, not {__name__}: the package's only name is taskq.metrics")
