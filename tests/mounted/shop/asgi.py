"""The project's ASGI application, as startproject writes it, with the console's WebSocket added."""

import os

from django.core.asgi import get_asgi_application

from taskq.asgi import with_taskq

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop.settings")

application = with_taskq(get_asgi_application())
