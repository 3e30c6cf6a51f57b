"""A queue definition's concurrency cap and rate limit: validated in the model and the admin form, mirrored into
Redis on save, and shown in the admin list, the console's queue page and ``tasks queue inspect``."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from taskq.queues.engine import Keys
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.policies import PolicyStore
from taskq.queues.engine.transitions import RateLimit
from taskq.queues.models import QueueDefinition
from tests.cli.helpers import invoke

from .test_admin_pages import staff, web

pytestmark = pytest.mark.django_db
ADD = "/admin/taskq/queuedefinition/add/"


def form(**values: str) -> dict[str, str]:
    return {
        "name": "emails",
        "weight": "1",
        "rank": "0",
        "description": "",
        "concurrency_cap": "5",
        "rate_limit": "100",
        "rate_period": "1",
        **values,
    }


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("rate_period", 0, "greater than or equal to 1"),
        ("rate_period", 86_401, "less than or equal to 86400"),
        ("rate_limit", 1_000_001, "less than or equal to 1000000"),
        ("concurrency_cap", 1_000_001, "less than or equal to 1000000"),
    ],
)
def test_the_model_refuses_bad_limits(field, value, message):
    definition = QueueDefinition(name="emails", **{field: value})
    with pytest.raises(ValidationError) as refused:
        definition.full_clean()
    assert message in " ".join(refused.value.message_dict[field])


def test_the_admin_saves_and_mirrors_the_limits_and_refuses_bad_ones(r, django_capture_on_commit_callbacks):
    browser = web(staff("root", superuser=True))
    for bad in (form(rate_period="0"), form(rate_limit="-1"), form(rate_limit="many")):
        with django_capture_on_commit_callbacks(execute=True):
            refused = browser.post(ADD, bad)
        assert refused.status_code == 200 and "errornote" in refused.content.decode()
    assert not QueueDefinition.objects.exists() and not r.exists(Keys().config_queues)  # nothing changed

    with django_capture_on_commit_callbacks(execute=True):
        saved = browser.post(ADD, form(rate_limit="100", rate_period="2"))
    assert saved.status_code == 302
    spec = PolicyStore(Broker(conn=r)).read().queues["emails"]
    assert spec.concurrency_cap == 5 and spec.rate == RateLimit(100, 2.0)
    listing = browser.get("/admin/taskq/queuedefinition/").content.decode()
    assert "100 per 2 s" in listing


def test_the_console_and_the_cli_show_the_limits(r, settings, redis_url, client, mirror):
    settings.REDIS_URL = redis_url
    mirror(lambda: QueueDefinition.objects.create(name="emails", concurrency_cap=5, rate_limit=100, rate_period=1))
    client.enqueue("send", {}, queue="emails")
    client.enqueue("send", {}, queue="undefined")
    browser = web(staff("root", superuser=True))
    page = browser.get(reverse("taskq:queue", args=["emails"])).content.decode()
    assert "Rate limit" in page and "100 per 1 s" in page and "Concurrency cap" in page
    assert "Rate limit" not in browser.get(reverse("taskq:queue", args=["undefined"])).content.decode()

    doc = invoke("queue", "inspect", "emails", "--json").json()
    assert (doc["concurrency_cap"], doc["rate_limit"], doc["rate_period"]) == (5, 100, 1.0)
    text = invoke("queue", "inspect", "emails").out
    assert "Rate limit:" in text and "100 per 1 s" in text
    assert "rate_limit" not in invoke("queue", "inspect", "undefined", "--json").json()
