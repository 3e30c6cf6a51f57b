"""The live console's socket in a project's own ASGI application (``taskq.asgi.with_taskq``), with the console
mounted under ops/ in the project's URLconf (tests/mounted/shop, written as docs/getting-started.md says): the
socket follows the mount, the project's own WebSockets and HTTP pass through untouched, and the console needs no
channel layer of the project's."""

from __future__ import annotations

import pytest
from channels.generic.websocket import AsyncWebsocketConsumer
from live_support import open_socket, run, subscribe

pytestmark = [pytest.mark.timeout(60), pytest.mark.urls("tests.mounted.shop.urls")]

FOREIGN = b"https://elsewhere.example"


class Echo(AsyncWebsocketConsumer):
    """A socket of the project's own: anyone, from anywhere (its rules are the project's, not the console's)."""

    async def connect(self) -> None:
        await self.accept()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        await self.send(text_data=f"echo {text_data}")


def django_app():
    from django.core.asgi import get_asgi_application

    from taskq.asgi import with_taskq

    return with_taskq(get_asgi_application())


def project_router():
    """A project that already routes WebSockets of its own with Channels, wrapped as the docs say."""
    from channels.routing import ProtocolTypeRouter, URLRouter
    from django.core.asgi import get_asgi_application
    from django.urls import path

    from taskq.asgi import with_taskq

    own = ProtocolTypeRouter({"http": get_asgi_application(), "websocket": URLRouter([path("chat/", Echo.as_asgi())])})
    return with_taskq(own)


def test_the_socket_is_where_the_project_mounted_the_console(live_engine, viewer_cookie):
    async def body():
        app = django_app()
        socket, connected = await open_socket(viewer_cookie, application=app, path="/ops/ws/live/")
        assert connected
        assert (await subscribe(socket, "dashboard"))["kind"] == "update"
        for elsewhere in ("/ws/live/", "/chat/", "/ops/"):
            _, connected = await open_socket(viewer_cookie, application=app, path=elsewhere)
            assert not connected, elsewhere

    run(body)


def test_a_projects_own_websockets_pass_through_with_their_own_rules(live_engine, viewer_cookie):
    async def body():
        app = project_router()
        chat, connected = await open_socket(None, origin=FOREIGN, application=app, path="/chat/")
        assert connected
        await chat.send_to(text_data="hi")
        assert await chat.receive_from(timeout=10) == "echo hi"
        # The console's socket keeps the console's: the Origin check and a permitted user.
        _, connected = await open_socket(viewer_cookie, origin=FOREIGN, application=app, path="/ops/ws/live/")
        assert not connected
        _, connected = await open_socket(None, application=app, path="/ops/ws/live/")
        assert not connected
        socket, connected = await open_socket(viewer_cookie, application=app, path="/ops/ws/live/")
        assert connected
        assert (await subscribe(socket, "dashboard"))["kind"] == "update"

    run(body)


@pytest.mark.parametrize(
    "layers",
    [
        None,  # a project with no CHANNEL_LAYERS at all
        # a project's own layer, on a Redis nobody answers at: the console must not need it
        {
            "default": {
                "BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {"hosts": ["redis://127.0.0.1:9/0"]},
            }
        },
    ],
)
def test_the_console_needs_no_channel_layer(live_engine, viewer_cookie, moves, settings, layers):
    if layers is None:
        del settings.CHANNEL_LAYERS
    else:
        settings.CHANNEL_LAYERS = layers

    async def body():
        socket, connected = await open_socket(viewer_cookie, application=django_app(), path="/ops/ws/live/")
        assert connected
        first = await subscribe(socket, "queue", queue="mail")
        assert first["kind"] == "update"
        moves.enqueue("mail")
        message = await socket.receive_json_from(timeout=10)
        while message.get("kind") != "update" or "mail" not in message.get("queues", {}):
            message = await socket.receive_json_from(timeout=10)
        assert message["queues"]["mail"]["pending"] == 1

    run(body)
