"""The console's pages in a project that mounts them under ops/ (tests/mounted/shop's URLconf), through Django's
test client: where the pages say the socket and the console are, whose route a name reverses to, and whose 404
page a URL of the project's gets."""

from __future__ import annotations

import pytest

from tests.console.console_support import make_user

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.mounted.shop.urls")]


def test_the_pages_say_where_the_socket_and_the_console_are(client, engine):
    client.force_login(make_user("vera", "view_console"))
    page = client.get("/ops/").content.decode()
    assert 'data-live-socket="/ops/ws/live/"' in page and 'data-console-root="/ops/"' in page
    assert '<a class="brand" href="/ops/">' in page
    assert 'href="/ops/servers/"' in page  # the navigation too
    assert client.get("/ops/ws/live/").status_code == 426  # the socket's URL over plain HTTP


def test_the_projects_own_dashboard_keeps_its_name():
    from django.urls import reverse

    assert (reverse("dashboard"), reverse("taskq:dashboard")) == ("/", "/ops/")
    assert (reverse("taskq:queue", args=["mail"]), reverse("taskq:api:openapi")) == (
        "/ops/queues/mail/",
        "/ops/api/v1/openapi.json",
    )


def test_the_projects_own_dashboard_page_is_its_own(client):
    assert "The shop's own dashboard" in client.get("/").content.decode()


def test_a_404_of_the_projects_is_not_the_consoles(client):
    """The console's 404 page is the standalone console's (its handler404), not a ``404.html`` that would take over
    the 404s of every project it is mounted in."""
    page = client.get("/no/such/page/")
    assert page.status_code == 404
    assert b"There is no such page, queue or task" not in page.content
