"""Input at the edges of JSON and Unicode: a key given twice in any body the API reads is refused naming it, and
no message (API, client, CLI) carries Python's own wording ("'utf-8' codec can't encode...",
"sys.set_int_max_str_digits()", ranges as "must be 0 and at most")."""

from __future__ import annotations

import pytest
from api_support import Api

from taskq.queues import conf
from taskq.queues.engine import Client, ValidationError
from tests.cli.helpers import invoke

Q = "/api/v1/queues/jobs"

#: Every operation that reads a JSON body, and a body for it that gives one key twice.
DUPLICATES = [
    (f"{Q}/tasks", b'{"type": "a", "type": "b"}', "type"),
    (f"{Q}/tasks", b'{"type": "a", "payload": {"to": "ada", "to": "bob"}}', "to"),
    (f"{Q}/tasks", b'{"type": "a", "headers": {"h": "1", "h": "2"}}', "h"),
    ("/api/v1/consume", b'{"queues": ["jobs"], "queues": ["other"]}', "queues"),
    (f"{Q}/tasks/x/ack", b'{"lease": "a", "lease": "b"}', "lease"),
    (f"{Q}/tasks/x/fail", b'{"lease": "a", "error": "e", "error": "f"}', "error"),
    (f"{Q}/tasks/x/extend", b'{"lease": "a", "ttr": 5, "ttr": 10}', "ttr"),
    (f"{Q}/respawn", b'{"limit": 1, "limit": 2}', "limit"),
    (f"{Q}/deadletters/x/respawn", b'{"a": 1, "a": 1}', "a"),
]


@pytest.mark.parametrize(("path", "body", "key"), DUPLICATES)
def test_a_key_given_twice_is_refused_naming_it(api: Api, engine, path, body, key):
    conf.get_client().enqueue("t", queue="jobs")  # so the queue exists: the refusal comes from the body alone
    before = sorted(engine.keys("*"))
    response = api.post(path, body)
    assert response.status_code == 400, response.content
    doc = response.json()
    assert (doc["error"], doc["field"]) == ("invalid_argument", "body"), doc
    assert f'the key "{key}" is given twice' in doc["message"], doc
    assert sorted(engine.keys("*")) == before


def test_a_body_with_distinct_keys_at_each_level_is_read(api: Api):
    body = b'{"type": "a", "payload": {"to": "ada", "cc": {"to": "bob"}}, "headers": {"to": "x"}}'
    assert api.post(f"{Q}/tasks", body).status_code == 201


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        (b'{"type": "t", "payload": ' + b"1" * 5000 + b"}", "body", "a number has more than 4300 digits"),
        (b'{"type": "t", "payload": "\\ud800"}', "payload", "lone surrogate (U+D800)"),
        (b'{"type": "t", "headers": {"\\udfff": "v"}}', "headers", "lone surrogate (U+DFFF)"),
        (b'\xff{"type": "t"}', "body", "not UTF-8 text (byte 0xff at position 0)"),
        (b'{"type": "t",}', "body", "at line 1, column 14"),
        (b'{"type": "t", "delay": -1}', "delay", "from 0 to 31622400 seconds"),
    ],
)
def test_api_messages_are_for_people_who_do_not_read_python(api: Api, engine, body, field, says):
    response = api.post(f"{Q}/tasks", body)
    doc = response.json()
    assert (response.status_code, doc["field"]) == (400, field), doc
    assert says in doc["message"], doc
    for internal in ("codec", "sys.", "set_int_max_str_digits", "Expecting", "char ", "must be 0 and"):
        assert internal not in doc["message"], doc
    assert engine.dbsize() == 0


@pytest.mark.parametrize(
    ("payload", "options", "says"),
    [
        (10**5000, {}, "payload is neither bytes nor JSON-serializable: a number has more than 4300 digits"),
        ({"a": float("nan")}, {}, "NaN and infinite numbers are not JSON"),
        ({"a": {1, 2}}, {}, "set values are not JSON"),
        ({"a": "\udcff"}, {}, "payload holds a lone surrogate (U+DCFF)"),
        (b"", {"process_in": 10**9}, "process_in must be from 0 to 31622400 seconds, got 1000000000"),
        (b"", {"timeout": 0}, "timeout must be more than 0 and at most 31622400 seconds, got 0"),
        (b"", {"max_retry": "3"}, 'max_retry must be an integer, got "3"'),
        (b"", {"queue": "a{b}"}, "queue name \"a{b}\" may not contain '{' or '}'"),
    ],
    ids=["huge-int", "nan", "set", "surrogate", "process_in", "timeout", "max_retry", "braces"],
)
def test_client_messages(redis_url, redis_client, payload, options, says):
    with Client(redis_url) as client, pytest.raises(ValidationError) as refused:
        client.enqueue("t", payload, **options)
    assert says in refused.value.message, refused.value.message
    assert "codec" not in refused.value.message and "sys." not in refused.value.message
    assert redis_client.dbsize() == 0


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--payload", "[" * 200 + "]" * 200], "nested deeper than 64 levels of arrays and objects"),
        (["--payload", '{"a": 1, "a": 2}'], 'the key "a" is given twice'),
        (["--payload", "1" * 5000], "a number has more than 4300 digits"),
        (["--payload", "{x"], "not valid JSON: expecting property name enclosed in double quotes at line 1"),
        (["--payload-base64", "***"], "not valid base64 (A-Z a-z 0-9 + /"),
    ],
)
def test_cli_payload_messages(engine, argv, says):
    result = invoke("task", "enqueue", "t", *argv)
    assert (result.code, result.out) == (2, ""), result.err
    assert says in result.err, result.err
    for internal in ("128", "sys.", "Expecting", "binascii", "Incorrect padding"):
        assert internal not in result.err, result.err
    assert engine.dbsize() == 0


def test_cli_payload_depth_follows_the_setting(engine, settings):
    settings.TASKS_MAX_PAYLOAD_DEPTH = 8
    result = invoke("task", "enqueue", "t", "--payload", "[" * 9 + "]" * 9)
    assert result.code == 2 and "nested deeper than 8 levels" in result.err, result.err
