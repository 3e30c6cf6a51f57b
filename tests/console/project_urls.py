"""A project's own page beside the console's (``pytest.mark.urls``): what a team's ``urls.py`` looks like once it
mounts the console, for the tests of what the console adds to every page the project renders."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import path

from taskq.console.urls import urlpatterns as console_urlpatterns

#: Rendered as a project renders its pages: with the request, so every installed context processor runs.
SHOP_PAGE = "<h1>Shop</h1><p>Signed in as {{ user.get_username }}.</p>"


def shop(request: HttpRequest) -> HttpResponse:
    return HttpResponse(engines["django"].from_string(SHOP_PAGE).render({}, request))


urlpatterns = [path("shop/", shop, name="shop"), *console_urlpatterns]
