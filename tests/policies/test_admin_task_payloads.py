"""The admin's task view shows a payload as pretty-printed JSON, as text, or as a hex dump when it is binary, never
as Python's ``b'...'``; masked values stay masked."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client as WebClient

pytestmark = pytest.mark.django_db
TASKS = "/admin/taskq/tasks/"


def cells(page: str) -> dict[str, str]:
    """Payload kind -> the cell's text, unescaped."""
    found = re.findall(r'<td data-payload="(\w+)">(.*?)</td>', page, re.S)
    return {kind: html.unescape(cell) for kind, cell in found}


@pytest.fixture
def root_browser() -> WebClient:
    browser = WebClient()
    browser.force_login(User.objects.create_superuser("root", password="pw"))
    return browser


def test_json_is_pretty_printed_and_binary_is_a_hex_dump(r, client, root_browser):
    client.enqueue("email", {"to": "ada@example.com", "n": [1, 2]}, queue="mail")
    client.enqueue("blob", b"\x00\xffPNG\x01", queue="mail")
    client.enqueue("note", b"plain words", queue="mail")
    page = root_browser.get(TASKS + "?queue=mail&state=pending").content.decode()
    assert "b&#x27;" not in page and "b'" not in page
    shown = cells(page)
    assert '{\n  "to": "ada@example.com",\n  "n": [\n    1,\n    2\n  ]\n}' in shown["json"]
    assert "00 ff 50 4e 47 01" in shown["hex"] and "|..PNG.|" in shown["hex"]
    assert "plain words" in shown["text"]


def test_redacted_values_stay_masked(r, client, root_browser, settings):
    settings.TASKS_REDACT_KEYS = ["password"]
    settings.TASKS_REDACT = {"types": [], "keys": ["password"]}
    client.enqueue("login", {"user": "ada", "password": "hunter2"}, queue="auth")
    page = root_browser.get(TASKS + "?queue=auth&state=pending").content.decode()
    assert "hunter2" not in page and '"user": "ada"' in html.unescape(page)
