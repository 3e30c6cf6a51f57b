"""The templates' own syntax never reaches a page: Django's ``{# #}`` comment holds one line only, so one spread
over two lines is printed as text (the Schedulers page showed "{# Live: live.js reads ..."). Every template is read
for such a comment, and the console's pages, rendered with something on each, are read for a leftover ``{#``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from taskq.console.rq import bridge_enabled
from tests.scheduler.scheduler_support import fire_some

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]

#: A ``{#`` whose ``#}`` is not on the same line: Django prints it as text.
UNCLOSED_ON_ITS_LINE = re.compile(r"\{#(?![^\n]*#\})")


def template_files() -> list[Path]:
    folders = [ROOT / "templates", ROOT / "queues" / "templates"]
    found = sorted(path for folder in folders for path in folder.rglob("*.html"))
    assert len(found) > 40, folders  # the console's and the admin's templates were found
    return found


def test_no_template_spreads_a_short_comment_over_lines():
    spread = [
        f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}"
        for path in template_files()
        for text in [path.read_text()]
        for m in UNCLOSED_ON_ITS_LINE.finditer(text)
    ]
    assert spread == [], "use {% comment %} for a comment of more than one line"


def test_no_rendered_page_holds_template_syntax(admin_client, seed, engine, redis_url):
    from taskq.queues.engine import chain, sig

    fire_some(redis_url)
    seed.server("host-1:42")
    seed.ended_server("host-2:7", [("default", "t1", "requeued")])
    task = seed.retry(queue="emails", task_type="email:deliver")
    seed.completed(queue="emails", task_type="email:deliver")
    flow = seed.client.submit(chain(sig("fetch", {"n": 1}), sig("store", {"n": 2})), workflow_id="wf-1")
    pages = [
        "/", "/servers/", "/servers/host-1:42/", "/servers/host-2:7/", "/schedulers/", "/history/", "/redis/",
        "/settings/", "/search/", "/search/?q=type:email:*", "/workflows/", f"/queues/{flow.queue}/workflows/wf-1/",
        "/queues/emails/?state=retry", "/queues/emails/?state=completed", f"/queues/emails/tasks/{task}/",
        f"/queues/emails/tasks/{task}/edit/", f"/queues/emails/tasks/{task}/again/", "/tasks/new/",
        "/queues/emails/types/email:deliver/", "/admin/", "/admin/taskq/auditlog/",
        *(["/rq/"] if bridge_enabled() else []),  # the RQ pages, where the rq extra is installed
    ]  # fmt: skip
    for url in pages:
        response = admin_client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        assert "{#" not in body and "#}" not in body, (url, body[body.find("{#") - 100 :][:300])
