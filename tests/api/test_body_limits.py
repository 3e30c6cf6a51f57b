"""Request bodies the API refuses, always in JSON: over 2 MiB is a 413 (from Content-Length before reading, or
as soon as a body without one runs past the limit), JSON nested deeper than a payload may be is a 400 measured
without recursion, and nothing reaches Redis (issue 22)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.test import RequestFactory
from django.urls import get_resolver

from taskq.queues import conf
from taskq.queues.api.http import ENVELOPE_DEPTH, MAX_BODY, bad_request, server_error
from tests.asgi_http import call_django, http_scope

PUBLISH = "/api/v1/queues/jobs/tasks"
MiB = 1024 * 1024


def padded(size: int) -> bytes:
    """A valid publish body of exactly ``size`` bytes."""
    head = b'{"type": "t", "payload": "'
    return head + b"x" * (size - len(head) - 2) + b'"}'


def nested(depth: int) -> bytes:
    """A publish body whose payload nests ``depth - 1`` arrays (the body object is one more level)."""
    return b'{"type": "t", "payload": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


def assert_json_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert body["error"] == code, body
    return body


@pytest.mark.parametrize("size", [int(2.1 * MiB), 3 * MiB])
def test_a_body_over_the_limit_is_a_json_413(api, engine, size):
    body = assert_json_error(api.post(PUBLISH, padded(size)), 413, "too_large")
    assert str(size) in body["message"] and str(MAX_BODY) in body["message"]
    assert engine.dbsize() == 0


def test_a_body_at_the_limit_is_read(api):
    assert api.post(PUBLISH, padded(MAX_BODY)).status_code == 400  # the payload's own 1 MiB limit, not the body's


def test_django_reads_more_than_the_api_so_the_api_answers_first():
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE > MAX_BODY


def asgi_post(token: str, chunks: list[bytes], headers: list[tuple[bytes, bytes]]) -> tuple[int, Any]:
    """POST through Django's ASGI handler, the body in ``chunks`` messages, as a server passes a chunked body on
    (no Content-Length)."""
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode()), *headers]
    return call_django(http_scope("POST", PUBLISH, headers), messages)


def test_a_chunked_body_without_content_length_is_a_json_413(api, engine):
    chunks = [b'{"type": "t", "payload": "'] + [b"x" * 64 * 1024] * 48 + [b'"}']  # 3 MiB
    status, body = asgi_post(api.secret or "", chunks, [(b"content-type", b"application/json")])
    assert (status, body["error"]) == (413, "too_large")
    # The size it is over is named (it read "the body is over bytes" once).
    assert body["message"] == f"the body is more than {MAX_BODY} bytes; the limit is {MAX_BODY}", body
    assert engine.dbsize() == 0


def test_a_small_chunked_body_is_published(api, engine):
    chunks = [b'{"type": "t", ', b'"payload": {"a": 1}}']
    status, body = asgi_post(api.secret or "", chunks, [(b"content-type", b"application/json")])
    assert status == 201 and body["queue"] == "jobs"


def test_a_declared_length_over_the_limit_is_refused_before_reading(api, engine):
    # Content-Length says 3 MiB; the refusal comes from the header (the body sent is a few bytes).
    headers = [(b"content-type", b"application/json"), (b"content-length", str(3 * MiB).encode())]
    status, body = asgi_post(api.secret or "", [b"{}"], headers)
    assert (status, body["error"]) == (413, "too_large") and str(3 * MiB) in body["message"]


@pytest.mark.parametrize("depth", [990, 10_000, 1_000_000])
def test_deep_json_is_a_json_400_and_writes_nothing(api, engine, depth):
    body = assert_json_error(api.post(PUBLISH, nested(depth)), 400, "invalid_argument")
    limit = conf.taskq_settings().max_payload_depth + ENVELOPE_DEPTH
    assert body["field"] == "body" and f"nested deeper than {limit}" in body["message"]
    assert engine.dbsize() == 0


def test_deep_json_is_refused_by_every_operation_that_reads_a_body(api, engine):
    deep = b"[" * 5000 + b"]" * 5000
    for path in ("/api/v1/consume", PUBLISH + "/x/ack", PUBLISH + "/x/fail", "/api/v1/queues/jobs/respawn"):
        assert_json_error(api.post(path, deep), 400, "invalid_argument")


def test_the_depth_bound_is_the_payload_limit_plus_the_body_object(api, engine, settings):
    settings.TASKS_MAX_PAYLOAD_DEPTH = 8
    assert api.post(PUBLISH, nested(8 + ENVELOPE_DEPTH)).status_code == 201  # a payload 8 deep
    assert_json_error(api.post(PUBLISH, nested(9 + ENVELOPE_DEPTH)), 400, "invalid_argument")
    # Brackets inside strings are text, not nesting.
    assert api.post(PUBLISH, json.dumps({"type": "t", "payload": "[" * 5000})).status_code == 201


def test_too_many_query_fields_is_a_json_400(api):
    query = "&".join(f"f{i}=1" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))
    response = api.client.get(f"/api/v1/queues/jobs/deadletters?{query}", HTTP_AUTHORIZATION=f"Bearer {api.secret}")
    assert_json_error(response, 400, "invalid_argument")


def test_django_refusals_outside_a_view_answer_json_under_the_api_only():
    resolver = get_resolver()
    assert resolver.resolve_error_handler(400) is bad_request
    assert resolver.resolve_error_handler(500) is server_error
    factory = RequestFactory()
    api_response = bad_request(factory.post(PUBLISH), RequestDataTooBig("too big"))
    assert_json_error(api_response, 413, "too_large")
    page = bad_request(factory.get("/queues/jobs/"), RequestDataTooBig("too big"))
    assert page.status_code == 400 and page["Content-Type"].startswith("text/html")


def test_unexpected_errors_under_the_api_are_json(api, monkeypatch):
    from taskq.queues.api import views

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(views.conf, "get_client", boom)
    api.client.raise_request_exception = False
    response = api.post(PUBLISH, {"type": "t"})
    assert_json_error(response, 500, "internal")
