"""taskq.queues: the task engine (taskq.queues.engine) and the Django app of queue definitions and policies."""

# One module, one name: this folder is the package taskq.queues (taskq/queues links here). Imported by its
# folder's name, from a checkout's root on sys.path, every module would load a second time, with registries of its
# own.
if __name__ != "taskq.queues":
    raise ImportError(f"import taskq.queues, not {__name__}: the package's only name is taskq.queues")
