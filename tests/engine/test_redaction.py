"""Redaction rules (taskq.queues.engine.redaction) and the inspector's search that must not see through them."""

from __future__ import annotations

import json

import pytest

from taskq.queues.engine import ValidationError
from taskq.queues.engine.redaction import MASK, MASKED_WHOLE, Redaction

RULES = Redaction.build(types=["billing:"], keys=["password", "Card"])


@pytest.mark.parametrize(
    ("task_type", "payload", "expected"),
    [
        # A redacted type: the whole payload, JSON or not.
        ("billing:charge", b'{"amount":5}', MASKED_WHOLE),
        ("billing:charge", b"\x00\xffraw", MASKED_WHOLE),
        ("billing:", b"plain text", MASKED_WHOLE),
        # Prefix match: "billing" alone (no colon) is another type.
        ("billing", b'{"amount":5}', b'{"amount":5}'),
        # Keys at any depth, case-insensitive, whatever the value holds.
        ("user:signup", b'{"name":"ada","password":"hunter2"}', b'{"name":"ada","password":"%s"}' % MASK.encode()),
        ("user:signup", b'{"a":[{"b":{"CARD":{"n":"4111"}}}]}', b'{"a":[{"b":{"CARD":"%s"}}]}' % MASK.encode()),
        # Nothing to mask: the very bytes come back (the pretty-printing stays the renderer's business).
        ("user:signup", b'{ "name": "ada" }', b'{ "name": "ada" }'),
        ("user:signup", b"not json password", b"not json password"),
        ("user:signup", b'["password"]', b'["password"]'),  # a value, not a key
        ("user:signup", b"", b""),
    ],
)
def test_apply_masks_types_whole_and_keys_at_any_depth(task_type, payload, expected):
    assert RULES.apply(task_type, payload) == expected


def test_unchanged_data_is_the_same_object_and_none_stays_none():
    data = b'{"name":"ada"}'
    assert RULES.apply("user:signup", data) is data
    assert not RULES.hides("user:signup", data)
    assert RULES.hides("billing:x", data)
    assert RULES.apply("billing:x", None) is None
    assert not Redaction() and RULES


def test_masked_json_keeps_the_rest_of_the_document():
    doc = {"user": {"email": "ada@example.com", "password": "s3cret", "tags": ["a", "b"]}, "n": 1.5, "ok": None}
    masked = json.loads(RULES.apply("user:signup", json.dumps(doc).encode()))
    assert masked == {"user": {"email": "ada@example.com", "password": MASK, "tags": ["a", "b"]}, "n": 1.5, "ok": None}


@pytest.mark.parametrize(
    ("types", "keys", "message"),
    [
        (["ok", ""], [], "task type"),
        (["x" * 300], [], "task type"),
        ([1], [], "task type"),
        ([], ["  "], "non-empty string"),
        ([], [" password"], "surrounding"),
        ([], ["pass\x00word"], "printable"),
        ([], [None], "non-empty string"),
    ],
)
def test_bad_rules_are_refused_with_a_named_error(types, keys, message):
    with pytest.raises(ValidationError, match=message) as caught:
        Redaction.build(types=types, keys=keys)
    assert caught.value.op == "redaction"


def test_search_with_redaction_does_not_match_inside_masked_values(r, redis_url):
    from taskq.queues.engine import Client, Inspector

    client = Client(redis_url)
    client.enqueue("user:signup", {"name": "ada", "password": "hunter2"}, task_id="key-rule")
    client.enqueue("billing:charge", {"card": "none", "note": "hunter2"}, task_id="type-rule")
    client.enqueue("user:signup", {"name": "hunter2"}, task_id="plain")
    inspector = Inspector(redis_url)

    def found(text, redaction=None):
        return sorted(t.id for t in inspector.search_tasks("default", "pending", text=text, redaction=redaction).tasks)

    assert found("hunter2") == ["key-rule", "plain", "type-rule"]
    assert found("hunter2", RULES) == ["plain"]
    # What stays visible is still found: the key's name and the values beside it.
    assert found('"password"', RULES) == ["key-rule"]
    assert found("ada", RULES) == ["key-rule"]
    # A search for the mask itself finds nothing it could not show (the raw bytes never held it).
    assert found(MASK, RULES) == []


# --- Python values (the RQ bridge's job arguments, results and tracebacks) -----------------------------------


def deep_list(levels: int) -> list:
    """A list nested ``levels`` deep, built without recursion."""
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_mask_value_masks_keys_at_any_depth_of_dicts_lists_tuples_and_sets():
    value = (
        {"Password": "hunter2", "user": [{"card": {"n": 4111}}, ("x", {"note": "kept"})]},
        frozenset({("a", 1)}),
        {1: "int key", ("t",): "tuple key"},
    )
    assert RULES.mask_value("rq_jobs.add", value) == (
        {"Password": MASK, "user": [{"card": MASK}, ("x", {"note": "kept"})]},
        frozenset({("a", 1)}),
        {1: "int key", ("t",): "tuple key"},
    )
    assert RULES.mask_value("billing:charge", value) == MASK  # the type (an RQ job's func_name) whole
    assert value[0]["Password"] == "hunter2"  # a copy: the job's own arguments are untouched


def test_mask_value_cuts_containers_deeper_than_the_bound_even_without_rules():
    from taskq.queues.engine.redaction import MAX_DEPTH, TOO_DEEP

    for rules in (RULES, Redaction()):
        masked = rules.mask_value("rq_jobs.add", deep_list(10_000))
        depth = 0
        while isinstance(masked, list):
            masked, depth = masked[0], depth + 1
        assert (masked, depth) == (TOO_DEEP, MAX_DEPTH)
    assert Redaction().mask_value("x", deep_list(MAX_DEPTH)) == deep_list(MAX_DEPTH)  # at the bound: all of it


def test_mask_value_text_masks_the_values_of_keys_as_repr_and_str_write_them():
    kwargs = {"login": {"password": "hunter2", "tags": ("a", "b")}, "card": 4111111111111111}
    text = "ValueError: bad login {'password': 'hunter2', 'tags': ('a', 'b')} for card 4111111111111111 (hunter2)"
    masked = RULES.mask_value_text("rq_jobs.login", [[], kwargs], text)
    assert "hunter2" not in masked and "4111111111111111" not in masked and "bad login" in masked
    assert RULES.mask_value_text("billing:charge", [[], kwargs], text) == MASK
    assert Redaction().mask_value_text("x", [[], kwargs], text) == text
    # A secret under a key deeper than the bound is not found, and the walk does not fail either.
    assert RULES.mask_value_text("x", [deep_list(10_000), {"password": "p"}], "p q") == f"{MASK} q"


def test_json_too_deep_to_parse_is_not_shown():
    from taskq.queues.engine.redaction import MASKED_WHOLE

    deep = b"[" * 100_000 + b"]" * 100_000
    assert RULES.apply("user:signup", deep) == MASKED_WHOLE  # masked whole: its keys cannot be looked into
    assert RULES.mask_text("user:signup", deep, "some text") == MASK
