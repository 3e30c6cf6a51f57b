"""One rule for strings at every way in: the HTTP API (body fields, headers, path segments), ``Client`` and
``AsyncClient``, the console's forms and the CLI. A string must be Unicode that UTF-8 encodes (no lone
surrogate); a new task's queue, type and id must also be visible names (no control or invisible character, not
blank, no leading or trailing blank). Each refusal is the documented error naming the field, and Redis is left
exactly as it was. A fail's ``error`` text is the exception: stored with what UTF-8 cannot encode replaced."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote

import pytest
from console_support import logged_in, make_user
from console_support import redis_snapshot as snapshot
from django.test import Client as DjangoClient
from django.urls import reverse

from taskq.queues import conf
from taskq.queues.api.tokens import create_token
from taskq.queues.engine import AsyncClient, Client, ValidationError
from tests.asgi_http import call_django, http_scope
from tests.cli.helpers import invoke

pytestmark = pytest.mark.django_db

SURROGATE = "\ud800"
#: Values every string is refused, and those only a new task's names are refused (with what the message says).
NOT_UNICODE = [pytest.param(SURROGATE, "lone surrogate", id="surrogate")]
NOT_VISIBLE = [
    pytest.param("\u200b", "invisible characters (U+200B)", id="zero-width-space"),
    pytest.param("\u202e", "invisible characters (U+202E)", id="bidi-override"),
    pytest.param("a\x07b", "control characters (U+0007)", id="control"),
    pytest.param(" ", "is blank", id="blank"),
    pytest.param("\u3000", "is blank", id="ideographic-space"),
    pytest.param(" mail", "starts or ends with a blank", id="leading-blank"),
    pytest.param("mail\u00a0", "starts or ends with a blank", id="trailing-nbsp"),
]
NAMES = NOT_UNICODE + NOT_VISIBLE


@pytest.fixture
def token(db) -> str:
    return create_token("all", ["*"])[1]


@pytest.fixture
def api(engine, token) -> Callable[..., Any]:
    """POST a JSON text (``json.dumps`` writes a lone surrogate as ``\\ud800``, as a Node client would)."""
    client = DjangoClient(raise_request_exception=False)

    def post(path: str, body: dict[str, Any]) -> Any:
        return client.post(
            path, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )

    return post


def refused_by_api(response: Any, field: str, says: str) -> None:
    assert response.status_code == 400, response.content
    body = response.json()
    assert (body["error"], body["field"]) == ("invalid_argument", field), body
    assert says in body["message"] and "codec" not in body["message"], body


# -- the HTTP API: every body field that holds a string -----------------------------------------------------------

PUBLISH = "/api/v1/queues/jobs/tasks"


def publish_body(field: str, value: str) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "email"}
    if field == "header name":
        body["headers"] = {value: "v"}
    elif field == "header value":
        body["headers"] = {"h": value}
    elif field == "payload":
        body["payload"] = {"note": value}
    else:
        body[field] = value
    return body


@pytest.mark.parametrize(("value", "says"), NAMES)
@pytest.mark.parametrize("field", ["type", "id"])
def test_api_publish_names(api, redis_client, field, value, says):
    before = snapshot(redis_client)
    refused_by_api(api(PUBLISH, publish_body(field, value)), field, says)
    assert snapshot(redis_client) == before


@pytest.mark.parametrize(("value", "says"), NOT_UNICODE)
@pytest.mark.parametrize(("field", "reported"), [("header name", "headers"), ("header value", "headers"),
                                                 ("payload", "payload")])  # fmt: skip
def test_api_publish_text(api, redis_client, field, reported, value, says):
    before = snapshot(redis_client)
    refused_by_api(api(PUBLISH, publish_body(field, value)), reported, says)
    assert snapshot(redis_client) == before


@pytest.mark.parametrize(("value", "says"), NOT_UNICODE)
def test_api_consume_queues(api, redis_client, value, says):
    before = snapshot(redis_client)
    refused_by_api(api("/api/v1/consume", {"queues": ["jobs", value]}), "queues", says)
    assert snapshot(redis_client) == before


@pytest.fixture
def leased(api) -> dict[str, Any]:
    """A task of queue ``jobs`` consumed over the API: its id and lease."""
    assert api(PUBLISH, {"type": "email"}).status_code == 201
    [task] = api("/api/v1/consume", {"queues": ["jobs"], "ttr": 60}).json()["tasks"]
    return task


@pytest.mark.parametrize(("value", "says"), NOT_UNICODE)
@pytest.mark.parametrize("action", ["ack", "fail", "extend"])
def test_api_lease(api, redis_client, leased, action, value, says):
    before = snapshot(redis_client)
    refused_by_api(api(f"{PUBLISH}/{leased['id']}/{action}", {"lease": value}), "lease", says)
    assert snapshot(redis_client) == before


def test_api_fail_stores_an_error_that_utf8_cannot_encode_replaced(api, engine, leased):
    """The exception to the rule: a consumer that cut its message inside an emoji (half a surrogate pair) can
    still fail its task, and the error is kept with U+FFFD in place of what UTF-8 cannot encode."""
    cut = "timeout talking to \U0001f680"[:-1] + "\ud83d"
    response = api(f"{PUBLISH}/{leased['id']}/fail", {"lease": leased["lease"], "error": cut, "skip_retry": True})
    assert response.status_code == 200 and response.json()["state"] == "archived", response.content
    assert engine.get_task("jobs", leased["id"]).last_error == "timeout talking to \ufffd"


# -- the HTTP API: path segments ------------------------------------------------------------------------------


def asgi_call(method: str, raw_path: str, token: str, body: bytes = b"") -> tuple[int, dict[str, Any]]:
    """One request through Django's ASGI handler with the scope daphne builds: ``path`` decoded with U+FFFD for
    bytes that are not UTF-8, ``raw_path`` as the client sent it."""
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode()),
               (b"content-type", b"application/json")]  # fmt: skip
    scope = {**http_scope(method, unquote(raw_path, errors="replace"), headers), "raw_path": raw_path.encode()}
    return call_django(scope, [{"type": "http.request", "body": body, "more_body": False}])


#: A path segment: percent-encoded text, or bytes that are not UTF-8 (``%FF``, a surrogate's would-be UTF-8).
SEGMENTS = [
    pytest.param(quote(value), says, id=str(param.id)) for param in NOT_VISIBLE for value, says in [param.values]
] + [
    pytest.param("h3%FFbad", "not UTF-8", id="invalid-utf8"),
    pytest.param("%ED%A0%80", "not UTF-8", id="surrogate-bytes"),
]


@pytest.mark.parametrize(("segment", "says"), SEGMENTS)
def test_api_path_queue_of_a_new_task(engine, redis_client, token, segment, says):
    before = snapshot(redis_client)
    status, body = asgi_call("POST", f"/api/v1/queues/{segment}/tasks", token, b'{"type": "email"}')
    assert (status, body["error"], body["field"]) == (400, "invalid_argument", "queue"), body
    assert says in body["message"], body
    assert snapshot(redis_client) == before


@pytest.mark.parametrize("segment", ["h3%FFbad", "%ED%A0%80"])
def test_api_path_task_id(engine, redis_client, token, segment):
    conf.get_client().enqueue("email", queue="jobs")
    before = snapshot(redis_client)
    status, body = asgi_call("GET", f"/api/v1/queues/jobs/tasks/{segment}", token)
    assert (status, body["field"]) == (400, "id") and "not UTF-8" in body["message"], body
    assert snapshot(redis_client) == before


# -- Client and AsyncClient ---------------------------------------------------------------------------------------

#: (option, where the value goes, what the message names): each a way a string reaches ``enqueue``.
CLIENT_FIELDS = {
    "type": "task type",
    "queue": "queue name",
    "task_id": "task id",
    "group": "group",
}


def enqueue_arguments(field: str, value: str) -> tuple[str, dict[str, Any], Any]:
    if field == "type":
        return value, {}, b""
    if field == "header name":
        return "email", {"headers": {value: "v"}}, b""
    if field == "header value":
        return "email", {"headers": {"h": value}}, b""
    if field == "payload":
        return "email", {}, {"note": value}
    return "email", {field: value}, b""


CLIENT_CASES = [
    pytest.param(field, value, named, id=f"{field}-{param.id}")
    for field, named in CLIENT_FIELDS.items()
    for param in NAMES
    for value, _ in [param.values]
] + [
    pytest.param(field, SURROGATE, named, id=f"{field}-surrogate")
    for field, named in (("header name", "header name"), ("header value", "header"), ("payload", "payload"))
]


@pytest.mark.parametrize(("field", "value", "named"), CLIENT_CASES)
def test_client(redis_url, redis_client, field, value, named):
    task_type, options, payload = enqueue_arguments(field, value)
    before = snapshot(redis_client)
    with Client(redis_url) as client, pytest.raises(ValidationError) as refused:
        client.enqueue(task_type, payload, **options)
    assert refused.value.message.startswith(named) and "codec" not in refused.value.message, refused.value.message
    assert snapshot(redis_client) == before


@pytest.mark.parametrize(("field", "value", "named"), CLIENT_CASES)
def test_async_client(redis_url, redis_client, field, value, named):
    task_type, options, payload = enqueue_arguments(field, value)
    before = snapshot(redis_client)

    async def enqueue() -> None:
        async with AsyncClient(redis_url) as client:
            await client.enqueue(task_type, payload, **options)

    with pytest.raises(ValidationError) as refused:
        asyncio.run(enqueue())
    assert refused.value.message.startswith(named), refused.value.message
    assert snapshot(redis_client) == before


@pytest.mark.parametrize(("value", "says"), NAMES)
def test_client_enqueue_many(redis_url, redis_client, value, says):
    before = snapshot(redis_client)
    with Client(redis_url) as client, pytest.raises(ValidationError, match=r"item 1: task type"):
        client.enqueue_many([("email", b""), (value, b"")])
    assert snapshot(redis_client) == before


# -- the console's forms ------------------------------------------------------------------------------------------


@pytest.fixture
def console(db) -> DjangoClient:
    return logged_in(make_user("cora", "view_console", "create_task", "edit_task"))


@pytest.mark.parametrize(("value", "says"), NOT_VISIBLE)
@pytest.mark.parametrize("field", ["type", "queue"])
def test_console_new_task_form(console, engine, redis_client, field, value, says):
    before = snapshot(redis_client)
    form = {"type": "email", "queue": "emails", "payload": "{}", "encoding": "json", field: value}
    response = console.post(reverse("taskq:task-new"), form)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert any(says in message for message in errors.get(field, [])), errors
    assert snapshot(redis_client) == before


@pytest.mark.parametrize(("value", "says"), NOT_VISIBLE)
@pytest.mark.parametrize("field", ["type", "queue"])
def test_console_edit_form(console, seed, redis_client, field, value, says):
    task_id = seed.archived(error="bounced")
    before = snapshot(redis_client)
    form = {"payload": "{}", "encoding": "json", "queue": "", field: value}
    response = console.post(reverse("taskq:task-edit", args=["default", task_id]), form)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert any(says in message for message in errors.get(field, [])), errors
    assert snapshot(redis_client) == before


@pytest.mark.parametrize(
    ("form", "field"),
    [("NewTaskForm", "type"), ("NewTaskForm", "queue"), ("NewTaskForm", "payload"), ("NewTaskForm", "headers"),
     ("EditTaskForm", "type"), ("EditTaskForm", "payload"), ("SearchForm", "q"), ("TaskListQuery", "task_id")],
)  # fmt: skip
def test_console_forms_refuse_what_is_not_unicode(form, field):
    """A browser sends UTF-8 (Django decodes bytes that are not as U+FFFD); code that hands a form its data
    directly may give anything, and the form names the field."""
    from taskq.console import forms

    data = {"type": "email", "queue": "emails", "payload": "{}", "encoding": "json", field: f"a{SURROGATE}"}
    bound = getattr(forms, form)(data)
    assert not bound.is_valid()
    assert any("lone surrogate" in message for message in bound.errors.get(field, [])), bound.errors


# -- the CLI ----------------------------------------------------------------------------------------------------

#: A command line's bytes that are not UTF-8 reach Python as lone surrogates (``surrogateescape``): ``\xff``.
UNDECODABLE_ARGUMENT = "\udcff"


@pytest.mark.parametrize(
    ("value", "says"), [pytest.param(UNDECODABLE_ARGUMENT, "lone surrogate", id="undecodable"), *NOT_VISIBLE]
)
@pytest.mark.parametrize(("args", "named"), [(["--queue"], "queue"), (["--id"], "task id"), ([], "type")])
def test_cli_enqueue(engine, redis_client, args, named, value, says):
    before = snapshot(redis_client)
    argv = ["task", "enqueue", "email", "--payload", "{}", *args, value] if args else ["task", "enqueue", value,
                                                                                      "--payload", "{}"]  # fmt: skip
    result = invoke(*argv)
    assert (result.code, result.out) == (2, ""), result.err
    assert result.err.startswith("error: invalid input: ") and named in result.err and says in result.err
    assert snapshot(redis_client) == before


def test_cli_payload_strings(engine, redis_client):
    before = snapshot(redis_client)
    result = invoke("task", "enqueue", "email", "--payload", json.dumps({"note": UNDECODABLE_ARGUMENT}))
    assert result.code == 2 and "payload" in result.err and "lone surrogate" in result.err, result.err
    assert snapshot(redis_client) == before
