"""Issue 26, the API half: each mismatch Schemathesis found between the OpenAPI document and the server, and each
one a curl user found between the API and its README, as a test of its own.

The document is judged as a contract tester judges it: a request it calls valid must not be refused with a 400,
and one it calls invalid must be refused. ``verdict`` asks the document (with jsonschema, as Schemathesis does),
the server answers through Django's test client on real Redis."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest
from api_support import Api
from jsonschema import Draft202012Validator

from taskq.queues.api.openapi import document

DOC = document()
ROOT = Path(__file__).resolve().parents[2]
Q = "/api/v1/queues/jobs"
TASK_OPS = {
    ("/api/v1/queues/{queue}/tasks/{task_id}", "get"),
    ("/api/v1/queues/{queue}/tasks/{task_id}", "delete"),
    ("/api/v1/queues/{queue}/tasks/{task_id}/ack", "post"),
    ("/api/v1/queues/{queue}/tasks/{task_id}/fail", "post"),
    ("/api/v1/queues/{queue}/tasks/{task_id}/extend", "post"),
    ("/api/v1/queues/{queue}/deadletters/{task_id}", "get"),
    ("/api/v1/queues/{queue}/deadletters/{task_id}", "delete"),
    ("/api/v1/queues/{queue}/deadletters/{task_id}/respawn", "post"),
}


def valid(schema: dict[str, Any], value: Any) -> bool:
    return Draft202012Validator({**schema, "components": DOC["components"]}).is_valid(value)


def parameter(path: str, method: str, name: str) -> dict[str, Any]:
    [param] = [p for p in DOC["paths"][path][method].get("parameters", []) if p["name"] == name]
    return param["schema"]


def body_schema(path: str, method: str) -> dict[str, Any]:
    return DOC["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]


def send(api: Api, method: str, url: str, body: Any = None) -> Any:
    if method == "get":
        return api.get(url)
    if method == "delete":
        return api.delete(url)
    return api.post(url, body if body is not None else {})


def request_body(path: str) -> dict[str, Any]:
    """A body the document calls valid for each operation that takes one (so only the path is on trial)."""
    if path.endswith("/tasks"):
        return {"type": "t"}
    if path.endswith(("/ack", "/fail", "/extend")):
        return {"lease": "l"}
    return {}


# Segments as they stand in a URL path (after percent-decoding): the first ones are names the server takes, the
# others ones it refuses.
SEGMENTS = ["jobs", "a~2Fb", "~2E~2E", "caf\u00e9", "x" * 128, "a\x90b", "a\x04", "a\x7f", "x" * 129, "a~b"]


def operations_with(name: str) -> list[tuple[str, str]]:
    return [
        (path, method)
        for path, item in DOC["paths"].items()
        for method, op in item.items()
        if any(p["name"] == name for p in op.get("parameters", []))
    ]


# -- Schemathesis: 15 valid requests refused ------------------------------------------------------------------


@pytest.mark.parametrize(("path", "method"), operations_with("queue"))
def test_the_queue_path_parameter_is_valid_exactly_when_the_server_takes_it(api, path, method):
    """Control characters (C0, DEL and C1) in a queue name: the server refuses them; the document has to say so.
    One test per operation, as Schemathesis reported one failure per operation."""
    schema = parameter(path, method, "queue")
    for segment in SEGMENTS + ["a{b}"]:
        url = path.replace("{queue}", segment).replace("{task_id}", "id")
        response = send(api, method, url, request_body(path))
        refused = response.status_code == 400 and response.json().get("field") == "queue"
        assert valid(schema, segment) != refused, (segment, response.status_code, response.content[:200])


@pytest.mark.parametrize(("path", "method"), operations_with("task_id"))
def test_the_task_id_path_parameter_is_valid_exactly_when_the_server_takes_it(api, path, method):
    schema = parameter(path, method, "task_id")
    for segment in SEGMENTS + ["a{b}"]:
        url = path.replace("{queue}", "jobs").replace("{task_id}", segment)
        response = send(api, method, url, request_body(path))
        refused = response.status_code == 400 and response.json().get("field") == "id"
        assert valid(schema, segment) != refused, (segment, response.status_code, response.content[:200])


def test_consume_queue_names_are_valid_exactly_when_the_server_takes_them(api):
    schema = body_schema("/api/v1/consume", "post")
    for name in ["jobs", "a/b", "..", "x" * 128, "a\x90b", "a\x1f", "x" * 129, "a{b}", ""]:
        body = {"queues": [name]}
        response = api.post("/api/v1/consume", body)
        assert valid(schema, body) == (response.status_code == 200), (name, response.content[:200])


@pytest.mark.parametrize(
    "body",
    [
        {"type": "t", "payload": 1, "payload_base64": "AA=="},
        {"type": "t", "payload": None, "payload_base64": ""},
        {"type": "t", "payload_base64": "AA=="},
        {"type": "t", "payload": None},
        {"type": "t", "payload_base64": "A"},
        {"type": "t", "id": "a\x90"},
        {"type": "t\x05"},
        {"type": "t", "id": "a/b~c{d}"},
    ],
)
def test_publish_bodies_are_valid_exactly_when_the_server_takes_them(api, body):
    """Both payload fields at once are refused, and the document's oneOf says so; ids and types with control
    characters likewise."""
    response = api.post(f"{Q}/tasks", body)
    assert valid(body_schema("/api/v1/queues/{queue}/tasks", "post"), body) == (response.status_code == 201), (
        response.content
    )


def test_a_task_id_that_reads_as_percent_encoding_is_reached_by_its_link(api):
    """Found by Schemathesis once the links existed: an id holding text such as '%C3%A4' was handed back in its
    URL segment as it is, and a client that took it for percent-encoding reached another id (404). Segments are
    now percent-encoded in full."""
    sent = {"path": {"queue": "q"}, "body": {"type": "t", "id": "%C3%A4 \u00e4"}}
    published = api.post("/api/v1/queues/q/tasks", sent["body"])
    assert published.json()["id_segment"] == "%25C3%25A4%20%C3%A4"
    consumed, consume_sent = follow(api, PUBLISH, "201", "consume", published, sent)
    got, _ = follow(api, CONSUME, "200", "getTask", consumed, consume_sent)
    assert got.status_code == 200 and got.json()["id"] == "%C3%A4 \u00e4"


# -- Schemathesis: 1 invalid request accepted -------------------------------------------------------------------


def test_consume_ttr_null_is_what_the_document_says(api):
    """``"ttr": null`` was taken as the default while the document called ttr a number. Optional fields given
    as null now take their default everywhere, and the document says they may be null."""
    schema = body_schema("/api/v1/consume", "post")
    body = {"queues": ["jobs"], "ttr": None}
    assert valid(schema, body) == (api.post("/api/v1/consume", body).status_code == 200)
    for path, method in (("/api/v1/queues/{queue}/tasks", "post"), ("/api/v1/consume", "post")):
        props = body_schema(path, method)
        for name, prop in DOC["components"]["schemas"][props["$ref"].rsplit("/", 1)[1]]["properties"].items():
            if name in ("type", "queues", "payload", "payload_base64"):
                continue
            assert valid(prop, None), (path, name)


# -- Schemathesis: 8 operations never reached ----------------------------------------------------------------


def links_to(operation_id: str) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(path, method, status, link) of every link in the document to ``operation_id``."""
    return [
        (path, method, status, link)
        for path, item in DOC["paths"].items()
        for method, op in item.items()
        for status, response in op["responses"].items()
        for link in response.get("links", {}).values()
        if link["operationId"] == operation_id
    ]


def operation_id(path: str, method: str) -> str:
    return str(DOC["paths"][path][method]["operationId"])


@pytest.mark.parametrize(("path", "method"), sorted(TASK_OPS))
def test_a_link_from_publish_or_consume_leads_to_each_task_operation(api, path, method):
    """Schemathesis never got past 404 on the operations behind a task id: nothing linked to them. Each now has a
    link from publish or consume (or from an operation those link to), and following it reaches the task."""
    sources = {operation_id(p, m) for p, m, _status, _link in links_to(operation_id(path, method))}
    reachable = {"publish", "consume"}
    for _ in range(3):  # two hops at most: publish -> consume -> fail -> the dead letter's operations
        reachable |= {
            link["operationId"]
            for p, item in DOC["paths"].items()
            for m, op in item.items()
            if op["operationId"] in reachable
            for response in op["responses"].values()
            for link in response.get("links", {}).values()
        }
    assert sources and operation_id(path, method) in reachable, sources


def follow(api: Api, source: tuple[str, str], status: str, name: str, response: Any, sent: dict[str, Any]) -> Any:
    """Send the request a link of the document describes, from ``response`` to the request ``sent`` (its path
    parameters and body), merged with nothing else but what the test adds through ``sent["extra"]``."""
    path, method = source
    link = DOC["paths"][path][method]["responses"][status]["links"][name]
    [(target, target_method)] = [
        (p, m) for p, item in DOC["paths"].items() for m, op in item.items() if op["operationId"] == link["operationId"]
    ]
    body = response.json() if response.content else None
    context = {"response": body, "path": sent.get("path", {}), "body": sent.get("body", {})}
    url = target
    for param, expression in link.get("parameters", {}).items():
        url = url.replace("{" + param + "}", str(evaluate(expression, context)))
    payload = {**evaluate(link.get("requestBody", {}), context), **sent.get("extra", {})}
    return send(api, target_method, url, payload), {"path": path_of(target, url), "body": payload}


def path_of(template: str, url: str) -> dict[str, str]:
    names = re.findall(r"\{(\w+)\}", template)
    pattern = re.escape(template)
    for name in names:
        pattern = pattern.replace(re.escape("{" + name + "}"), f"(?P<{name}>[^/]+)")
    match = re.fullmatch(pattern, url)
    assert match, (template, url)
    return match.groupdict()


def evaluate(expression: Any, context: dict[str, Any]) -> Any:
    """A runtime expression of the kinds the document uses, in a JSON value or alone."""
    if isinstance(expression, dict):
        return {key: evaluate(value, context) for key, value in expression.items()}
    if isinstance(expression, list):
        return [evaluate(value, context) for value in expression]
    if not isinstance(expression, str):
        return expression  # a constant
    if expression.startswith("$request.path."):
        return context["path"][expression.removeprefix("$request.path.")]
    source, pointer = expression.split("#/")
    value = {"$response.body": context["response"], "$request.body": context["body"]}[source]
    for step in pointer.split("/"):
        value = value[int(step)] if isinstance(value, list) else value[step]
    return value


PUBLISH = ("/api/v1/queues/{queue}/tasks", "post")
CONSUME = ("/api/v1/consume", "post")
FAIL = ("/api/v1/queues/{queue}/tasks/{task_id}/fail", "post")


def test_following_the_links_walks_a_whole_life(api):
    """publish -> consume -> extend -> fail -> consume -> ack, then a dead letter's get, respawn and delete, each
    step by a link of the document from the response before, in a queue whose name needs escaping."""
    sent = {"path": {"queue": "a~2Fb"}, "body": {"type": "t", "id": "x/y", "tries": 2}}
    published = api.post("/api/v1/queues/a~2Fb/tasks", sent["body"])
    consumed, consume_sent = follow(api, PUBLISH, "201", "consume", published, sent)
    assert [t["id"] for t in consumed.json()["tasks"]] == ["x/y"]
    got, _ = follow(api, CONSUME, "200", "getTask", consumed, consume_sent)
    assert got.status_code == 200 and got.json()["id"] == "x/y"
    extended, extend_sent = follow(api, CONSUME, "200", "extend", consumed, consume_sent)
    assert extended.status_code == 200, extended.content
    failed, fail_sent = follow(
        api,
        ("/api/v1/queues/{queue}/tasks/{task_id}/extend", "post"),
        "200",
        "fail",
        extended,
        extend_sent,
    )
    assert failed.status_code == 200 and failed.json()["state"] == "retry", failed.content
    again, again_sent = follow(api, FAIL, "200", "consume", failed, fail_sent)
    assert again.json()["tasks"][0]["retried"] == 1
    acked, _ = follow(api, CONSUME, "200", "ack", again, again_sent)
    assert acked.status_code == 204

    published = api.post("/api/v1/queues/a~2Fb/tasks", {"type": "t", "id": "d", "tries": 1})
    consumed, consume_sent = follow(api, PUBLISH, "201", "consume", published, sent)
    failed, fail_sent = follow(api, CONSUME, "200", "failToDeadLetters", consumed, consume_sent)
    assert failed.json()["state"] == "archived"
    dead, _ = follow(api, FAIL, "200", "getDeadLetter", failed, fail_sent)
    assert dead.status_code == 200 and dead.json()["last_failed_at"]
    respawned, _ = follow(api, FAIL, "200", "respawnDeadLetter", failed, fail_sent)
    assert respawned.status_code == 200
    assert follow(api, FAIL, "200", "deleteDeadLetter", failed, fail_sent)[0].status_code == 409  # pending now
    deleted, delete_sent = follow(api, FAIL, "200", "deleteTask", failed, fail_sent)
    assert deleted.status_code == 204
    assert (
        follow(api, ("/api/v1/queues/{queue}/tasks/{task_id}", "delete"), "204", "getTask", deleted, delete_sent)[
            0
        ].status_code
        == 404
    )


# -- curl: status codes the README promises -------------------------------------------------------------------


def dead_letter(api: Api) -> str:
    task_id = api.post(f"{Q}/tasks", {"type": "t", "tries": 1}).json()["id"]
    [task] = api.post("/api/v1/consume", {"queues": ["jobs"]}).json()["tasks"]
    assert api.post(f"{Q}/tasks/{task_id}/fail", {"lease": task["lease"], "error": "boom"}).status_code == 200
    return task_id


def test_respawning_a_task_that_is_not_a_dead_letter_is_a_409(api):
    task_id = api.post(f"{Q}/tasks", {"type": "t"}).json()["id"]
    response = api.post(f"{Q}/deadletters/{task_id}/respawn")
    assert response.status_code == 409 and response.json()["error"] == "failed_precondition", response.content
    assert "pending" in response.json()["message"]
    assert api.post(f"{Q}/deadletters/nope/respawn").status_code == 404  # no such task at all


def test_reading_a_task_that_is_not_a_dead_letter_is_a_409(api):
    task_id = api.post(f"{Q}/tasks", {"type": "t"}).json()["id"]
    for response in (api.get(f"{Q}/deadletters/{task_id}"), api.delete(f"{Q}/deadletters/{task_id}")):
        assert response.status_code == 409 and response.json()["error"] == "failed_precondition", response.content
    assert api.get(f"{Q}/tasks/{task_id}").status_code == 200  # the refused delete left it alone


def test_a_second_ack_is_a_409_lease_lost(api):
    api.post(f"{Q}/tasks", {"type": "t"})
    [task] = api.post("/api/v1/consume", {"queues": ["jobs"]}).json()["tasks"]
    assert api.post(f"{Q}/tasks/{task['id']}/ack", {"lease": task["lease"]}).status_code == 204
    again = api.post(f"{Q}/tasks/{task['id']}/ack", {"lease": task["lease"]})
    assert again.status_code == 409 and again.json()["error"] == "lease_lost", again.content


def test_deleting_an_active_task_does_not_point_to_a_cancel_the_api_lacks(api):
    api.post(f"{Q}/tasks", {"type": "t"})
    [task] = api.post("/api/v1/consume", {"queues": ["jobs"]}).json()["tasks"]
    response = api.delete(f"{Q}/tasks/{task['id']}")
    assert response.status_code == 409
    message = response.json()["message"]
    assert "cancel" not in message and "ack" in message and "fail" in message, message


# -- curl: messages for people who do not read Python -----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "shown"),
    [
        ("/tasks", {"type": "t", "delay": True}, "got true"),
        ("/tasks", {"type": True}, "got true"),
        ("/tasks", {"type": None}, "got null"),
        ("/tasks", {"type": "t", "tries": False}, "got false"),
        ("/tasks", {"type": "t", "id": ["x"]}, 'got ["x"]'),
    ],
)
def test_errors_show_values_as_json(api, path, body, shown):
    message = api.post(Q + path, body).json()["message"]
    assert shown in message and "True" not in message and "None" not in message, message


def test_errors_name_the_field_once(api):
    for body, name in (({"queues": ["q"], "ttr": 0}, "ttr"), ({"queues": ["q"], "count": 0}, "count")):
        message = api.post("/api/v1/consume", body).json()["message"]
        assert not message.startswith(f"{name}: {name}"), message
    message = api.post(f"{Q}/tasks", {"type": "t", "tries": 0}).json()["message"]
    assert message.count("tries") == 1, message


def test_range_errors_state_the_range(api):
    message = api.post(f"{Q}/tasks", {"type": "t", "delay": -1}).json()["message"]
    assert "must be 0 and at most" not in message and "from 0 to 31622400 seconds" in message, message
    message = api.post("/api/v1/consume", {"queues": ["q"], "ttr": 10**6}).json()
    assert message["field"] == "ttr" and "86400" in message["message"], message
    # The README's example, word for word.
    assert api.post("/api/v1/consume", {"queues": ["q"], "ttr": 0}).json()["message"] == (
        "ttr must be more than 0 and at most 86400 seconds, got 0"
    )


# -- curl: dead letters ------------------------------------------------------------------------------------------


def test_dead_letters_carry_their_failure_time(api):
    task_id = dead_letter(api)
    listed = api.get(f"{Q}/deadletters").json()["tasks"][0]
    one = api.get(f"{Q}/deadletters/{task_id}").json()
    assert listed["last_failed_at"] and listed["last_failed_at"] == one["last_failed_at"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", one["last_failed_at"])


def test_dead_letters_page_with_a_cursor(api):
    ids = {dead_letter(api) for _ in range(5)}
    seen: list[str] = []
    page = api.get(f"{Q}/deadletters", limit=2).json()
    while True:
        seen += [t["id"] for t in page["tasks"]]
        if page["next_cursor"] is None:
            break
        page = api.get(f"{Q}/deadletters", limit=2, cursor=page["next_cursor"]).json()
    assert len(seen) == 5 and set(seen) == ids
    bad = api.get(f"{Q}/deadletters", cursor="not-a-cursor")
    assert bad.status_code == 400 and bad.json()["field"] == "cursor"


def test_a_cursor_survives_its_dead_letter_leaving_and_newer_ones_arriving(api):
    """The page after a cursor starts after the task it marks, even when that task was respawned meanwhile (the
    listing goes on from its time) and new dead letters arrived (they are newer: on no later page)."""
    ids = [dead_letter(api) for _ in range(4)]
    first = api.get(f"{Q}/deadletters", limit=2).json()
    assert [t["id"] for t in first["tasks"]] == ids[:1:-1]
    assert api.post(f"{Q}/deadletters/{ids[2]}/respawn").status_code == 200  # the marked one leaves
    api.delete(f"{Q}/tasks/{ids[2]}")
    dead_letter(api)
    second = api.get(f"{Q}/deadletters", limit=2, cursor=first["next_cursor"]).json()
    assert [t["id"] for t in second["tasks"]] == ids[1::-1] and second["next_cursor"] is None


def test_offset_is_refused_not_ignored(api):
    dead_letter(api)
    response = api.get(f"{Q}/deadletters", offset=1)
    assert response.status_code == 400 and response.json()["field"] == "offset", response.content
    assert "cursor" in response.json()["message"]


def test_limit_is_bounded_as_documented(api):
    dead_letter(api)
    [limit] = [
        p for p in DOC["paths"]["/api/v1/queues/{queue}/deadletters"]["get"]["parameters"] if p["name"] == "limit"
    ]
    top = limit["schema"]["maximum"]
    assert api.get(f"{Q}/deadletters", limit=top).status_code == 200
    assert api.get(f"{Q}/deadletters", limit=top + 1).json()["field"] == "limit"


# -- curl: payloads ----------------------------------------------------------------------------------------------


def test_an_empty_payload_is_not_returned_as_empty_base64(api):
    task_id = api.post(f"{Q}/tasks", {"type": "t"}).json()["id"]
    got = api.get(f"{Q}/tasks/{task_id}").json()
    assert (got["payload"], got["payload_encoding"]) == (None, None)
    zero = api.post(f"{Q}/tasks", {"type": "t", "payload_base64": ""}).json()["id"]
    assert api.get(f"{Q}/tasks/{zero}").json()["payload_encoding"] is None
    one = api.post(f"{Q}/tasks", {"type": "t", "payload_base64": base64.b64encode(b"\xff").decode()}).json()["id"]
    assert api.get(f"{Q}/tasks/{one}").json()["payload"] == "/w=="
    text = api.post(f"{Q}/tasks", {"type": "t", "payload": ""}).json()["id"]
    assert api.get(f"{Q}/tasks/{text}").json().items() >= {"payload": "", "payload_encoding": "json"}.items()


def test_the_api_page_states_the_payload_limit():
    from test_api_page import api_section

    section = api_section()
    assert "1 MiB" in section and re.search(r"payload.{0,80}1 MiB|1 MiB.{0,80}payload", section, re.S)
