"""WebSocket routes of the console, mounted by ``console/asgi.py`` under the Origin check and the auth stack."""

from django.urls import path

from .consumers import LiveConsumer

websocket_urlpatterns = [
    path("ws/live/", LiveConsumer.as_asgi()),
]
