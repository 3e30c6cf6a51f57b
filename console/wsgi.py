"""WSGI entry point. Plain HTTP only; use taskq.console.asgi (daphne) for the live WebSocket console."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "taskq.console.settings")

application = get_wsgi_application()
