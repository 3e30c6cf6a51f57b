"""The OpenAPI document matches the routes, responses match its schemas, and a Hypothesis fuzz run over every
documented operation never gets a 5xx."""

from __future__ import annotations

import re
from typing import Any

import pytest
from api_support import Api
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from taskq.queues.api import urls
from taskq.queues.api.openapi import document

DOC = document()


def routes() -> set[tuple[str, str]]:
    found = set()
    for pattern in urls.urlpatterns:
        if pattern.name == "not-found":
            continue
        path = "/api/v1/" + re.sub(r"<str:(\w+)>", r"{\1}", str(pattern.pattern))
        for method in pattern.callback.api_methods:
            found.add((path, method.lower()))
    return found


def documented() -> set[tuple[str, str]]:
    return {(path, method) for path, item in DOC["paths"].items() for method in item}


def test_every_route_is_documented_and_every_documented_operation_exists():
    assert routes() == documented()


def test_the_document_is_served_without_a_token_and_is_valid_json_schema(engine, db):
    from django.test import Client

    served = Client().get("/api/v1/openapi.json")
    assert served.status_code == 200 and served.json() == DOC
    assert DOC["openapi"].startswith("3.1")
    for schema in DOC["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)


def check(response: Any, path: str, method: str) -> None:
    """The response's status is documented for the operation, and its body matches the documented schema."""
    op = DOC["paths"][path][method]
    status = str(response.status_code)
    assert status in op["responses"], (path, method, status, response.content[:300])
    content = op["responses"][status].get("content")
    if content is None:
        assert response.content == b""
        return
    schema = {**content["application/json"]["schema"], "components": DOC["components"]}
    errors = sorted(Draft202012Validator(schema).iter_errors(response.json()), key=str)
    assert not errors, (path, method, status, [e.message for e in errors])


T = "/api/v1/queues/{queue}/tasks/{task_id}"
DL = "/api/v1/queues/{queue}/deadletters"


def test_responses_match_the_schemas_in_the_main_cases(api, make_token):
    base = "/api/v1/queues/jobs"
    check(
        api.post(f"{base}/tasks", {"type": "t", "payload": [1], "ttl": 60, "tries": 1}),
        "/api/v1/queues/{queue}/tasks",
        "post",
    )
    check(api.post(f"{base}/tasks", {"type": ""}), "/api/v1/queues/{queue}/tasks", "post")
    check(api.get(f"{base}/peek"), "/api/v1/queues/{queue}/peek", "get")
    check(api.get(f"{base}/size"), "/api/v1/queues/{queue}/size", "get")
    consumed = api.post("/api/v1/consume", {"queues": ["jobs"], "ttr": 30})
    check(consumed, "/api/v1/consume", "post")
    task = consumed.json()["tasks"][0]
    check(api.get(f"{base}/tasks/{task['id']}"), T, "get")
    check(api.post(f"{base}/tasks/{task['id']}/extend", {"lease": task["lease"]}), T + "/extend", "post")
    check(api.post(f"{base}/tasks/{task['id']}/ack", {"lease": "wrong"}), T + "/ack", "post")
    check(api.post(f"{base}/tasks/{task['id']}/fail", {"lease": task["lease"]}), T + "/fail", "post")
    check(api.get(f"{base}/deadletters"), DL, "get")
    check(api.get(f"{base}/deadletters/{task['id']}"), DL + "/{task_id}", "get")
    check(api.post(f"{base}/deadletters/{task['id']}/respawn"), DL + "/{task_id}/respawn", "post")
    check(api.get(f"{base}/peek"), "/api/v1/queues/{queue}/peek", "get")
    check(api.post(f"{base}/respawn", {}), "/api/v1/queues/{queue}/respawn", "post")
    check(api.delete(f"{base}/deadletters"), DL, "delete")
    check(api.delete(f"{base}/tasks/{task['id']}"), T, "delete")
    check(api.post(f"{base}/tasks/{task['id']}/ack", {"lease": task["lease"]}), T + "/ack", "post")
    check(api.get(f"{base}/size", secret="tq_nope"), "/api/v1/queues/{queue}/size", "get")
    check(Api(make_token("narrow", ["other"])).get(f"{base}/size"), "/api/v1/queues/{queue}/size", "get")
    check(api.post("/api/v1/consume", {"queues": ["jobs"], "timeout": 0}), "/api/v1/consume", "post")


def test_every_operation_that_reads_a_body_documents_and_answers_413_and_400(api):
    """Every POST route reads a JSON body: each answers an oversized one with the documented JSON 413, and one
    nested too deep with the documented 400 (both with the Error schema)."""
    posts = sorted(path for path, method in routes() if method == "post")
    assert posts
    oversized = b'{"x": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    deep = b"[" * 2000 + b"]" * 2000
    for path in posts:
        url = path.replace("{queue}", "jobs").replace("{task_id}", "x")
        for status, body in (("413", oversized), ("400", deep)):
            assert status in DOC["paths"][path]["post"]["responses"], (path, status)
            response = api.post(url, body)
            assert str(response.status_code) == status, (path, response.content[:200])
            check(response, path, "post")


# -- fuzz ------------------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=10,
)
segments = st.one_of(
    st.sampled_from(["jobs", "other", "a{b}", "x" * 300, "~", "a~2Fb", "%7B"]),
    st.text(st.characters(blacklist_characters="/?#", blacklist_categories=("Cs",)), min_size=1, max_size=12),
)


def body_for(op: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Bodies built from the documented fields with values of any JSON type (and the odd unknown field). A
    consume's timeout is never a long valid wait, so the run stays fast."""
    if "requestBody" not in op:
        return st.none()
    name = op["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    fields = list(DOC["components"]["schemas"][name]["properties"]) + ["unknown"]
    values = {f: (st.sampled_from([0, -1, 61, "1", None]) if f == "timeout" else json_values) for f in fields}
    return st.one_of(st.fixed_dictionaries({}, optional=values), json_values, st.just("{not json"))


operations = [(path, method, op) for path, item in DOC["paths"].items() for method, op in item.items()]


@st.composite
def requests(draw):
    path, method, op = draw(st.sampled_from(operations))
    url = path
    for name in ("queue", "task_id"):
        url = url.replace("{" + name + "}", draw(segments))
    auth = draw(st.sampled_from(["good", "good", "good", "none", "bad"]))
    return path, method, url, draw(body_for(op)), auth


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(request=requests())
def test_fuzz_never_5xx(fuzz_api, request):
    path, method, url, body, auth = request
    secret = {"good": None, "none": "", "bad": "tq_bad"}[auth]
    from urllib.parse import quote

    url = quote(url, safe="/~")
    if method == "get":
        response = fuzz_api.get(url, secret=secret)
    elif method == "delete":
        response = fuzz_api.delete(url, secret=secret)
    else:
        response = fuzz_api.post(url, body, secret=secret)
    assert response.status_code < 500, (method, url, body, response.content[:300])
    if response.status_code != 204:
        assert response["Content-Type"] == "application/json", (method, url, response.content[:200])
    if (
        response.status_code != 404
        or response.json().get("error") != "not_found"
        or "no API endpoint" not in response.json().get("message", "")
    ):
        check(response, path, method)


@pytest.fixture(scope="module")
def _fuzz_db(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        from taskq.queues.api.tokens import create_token
        from taskq.queues.models import ApiToken

        ApiToken.objects.filter(name="fuzz").delete()
        secret = create_token("fuzz", ["jobs", "other", "a~b"])[1]
        yield secret
        ApiToken.objects.filter(name="fuzz").delete()


@pytest.fixture
def fuzz_api(_fuzz_db, engine, django_db_blocker):
    with django_db_blocker.unblock():
        yield Api(_fuzz_db)
