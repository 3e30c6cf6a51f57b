"""The taskq Django project: settings, URLs, ASGI entry point and the operations console."""

# One module, one name: this folder is the package taskq.console (taskq/console links here). Imported by its
# folder's name, from a checkout's root on sys.path, every module would load a second time, with registries of its
# own.
if __name__ != "taskq.console":
    raise ImportError(f"import taskq.console, not {__name__}: the package's only name is taskq.console")
