"""The worker process: fetch/execute/ack loop and its background components."""

# One module, one name: this folder is the package taskq.worker (taskq/worker links here). Imported by its
# folder's name, from a checkout's root on sys.path, every module would load a second time, with registries of its
# own.
if __name__ != "taskq.worker":
    raise ImportError(f"import taskq.worker, not {__name__}: the package's only name is taskq.worker")
