"""The taskq Django project: settings, URLs, ASGI entry point and the operations console."""
