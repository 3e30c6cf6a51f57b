"""ASGI entry point: ``daphne taskq.console.asgi:application``.

HTTP goes to Django (WhiteNoise serves /static/ inside it); WebSockets go through Channels, wrapped so a socket
is only opened from an allowed Origin and with the session's user in ``scope["user"]``. Consumers must still
check that user themselves before ``accept()``: the middleware only fills it in.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "taskq.console.settings")

# Build the Django app first: it runs django.setup(), which must happen before anything below imports models
# (AuthMiddlewareStack pulls in django.contrib.auth).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from taskq.console.live.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
