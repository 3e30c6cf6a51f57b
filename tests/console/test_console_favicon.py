"""The favicon: /favicon.ico answers (public) instead of a 404, and every page links it."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_favicon_ico_answers_without_a_login():
    response = Client().get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/x-icon"
    icon = response.content
    assert icon[:4] == b"\x00\x00\x01\x00" and icon[22:30] == b"\x89PNG\r\n\x1a\n"  # an ICO holding a PNG
    assert Client().post("/favicon.ico").status_code == 405


def test_pages_link_the_icons_and_the_icons_are_served(viewer_client):
    for url in ("/", "/accounts/login/"):
        page = viewer_client.get(url).content.decode()
        assert '<link rel="icon" href="/static/taskq/favicon.svg" type="image/svg+xml">' in page, url
    svg = viewer_client.get("/static/taskq/favicon.svg")
    assert svg.status_code == 200 and b"<svg" in b"".join(svg.streaming_content)
