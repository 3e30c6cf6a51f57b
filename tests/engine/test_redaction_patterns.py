"""Value patterns (``TASKS_REDACT_PATTERNS``): what they mask (strings at any depth of JSON, numbers whose text
matches, UTF-8 text that is not JSON, headers, error text, audit details, what search reads) and what they
leave (keys, booleans, binary data), and the patterns refused before anything is masked with them."""

from __future__ import annotations

import json

import pytest

from taskq.queues.engine.errors import ValidationError
from taskq.queues.engine.failures import Failure
from taskq.queues.engine.message import TaskInfo
from taskq.queues.engine.redaction import MASK, MASKED_WHOLE, Redaction
from taskq.queues.engine.search import matches, parse

#: The issue's example: a secret in free text, under a key no key rule names.
NOTE = {"note": "my password is s3cret-pw"}
PATTERNS = [r"(?i)password is \S+", r"sk_live_[A-Za-z0-9]+", r"\b4111\d{12}\b"]


@pytest.fixture
def rules() -> Redaction:
    return Redaction.build(patterns=PATTERNS)


def test_the_issues_example_is_masked_by_a_pattern_and_not_by_key_rules(rules):
    stored = json.dumps(NOTE).encode()
    assert Redaction.build(keys=["password"]).apply("user:login", stored) is stored  # no key called password
    shown = rules.apply("user:login", stored)
    assert json.loads(shown) == {"note": f"my {MASK}"}
    assert rules.hides("user:login", stored)


def test_patterns_mask_strings_at_any_depth_and_numbers_whose_text_matches(rules):
    payload = {
        "orders": [{"memo": ["pay with sk_live_ABC123", "then ship"]}, {"card": 4111222233334444}],
        "sk_live_KEY9": "the key is not a value",  # keys are names: patterns do not read them
        "flags": [True, False, None, 4111],
    }
    shown = json.loads(rules.apply("shop:order", json.dumps(payload).encode()))
    assert shown["orders"] == [{"memo": [f"pay with {MASK}", "then ship"]}, {"card": MASK}]
    assert shown["sk_live_KEY9"] == "the key is not a value"
    assert shown["flags"] == [True, False, None, 4111]


def test_patterns_and_key_rules_apply_together(rules):
    both = Redaction.build(keys=["token"], patterns=PATTERNS)
    payload = {"token": "abc", "note": "password is x1"}
    assert json.loads(both.apply("t", json.dumps(payload).encode())) == {"token": MASK, "note": MASK}


def test_a_top_level_string_and_utf8_text_are_masked_and_binary_data_is_not(rules):
    assert json.loads(rules.apply("t", b'"password is s3cret"')) == MASK
    assert rules.apply("t", "é password is s3cret".encode()) == f"é {MASK}".encode()
    binary = b"\xff\xfepassword is s3cret"
    assert rules.apply("t", binary) is binary  # not UTF-8: patterns read text, so only a type rule masks it
    plain = b"nothing to hide"
    assert rules.apply("t", plain) is plain and not rules.hides("t", plain)


def test_json_too_deep_to_walk_is_masked_whole(rules):
    deep = b"[" * 200 + b'"password is x"' + b"]" * 200
    assert rules.apply("t", deep) == MASKED_WHOLE


def test_a_type_rule_still_masks_the_whole(rules):
    typed = Redaction.build(types=["billing:"], patterns=PATTERNS)
    assert typed.apply("billing:charge", b'{"note": "hello"}') == MASKED_WHOLE


def test_error_text_headers_and_python_values(rules):
    assert rules.mask_string("login refused: Password is hunter2 (3 tries)") == f"login refused: {MASK} (3 tries)"
    text = "nothing here"
    assert rules.mask_string(text) is text
    assert rules.mask_headers({"authorization": "Bearer sk_live_H1", "trace": "abc"}) == {
        "authorization": f"Bearer {MASK}",
        "trace": "abc",
    }
    # mask_text: an error a handler raised, which a worker masks before it stores it (Failure.redacted)
    assert rules.mask_text("t", json.dumps(NOTE).encode(), "KeyError: 'password is s3cret-pw'") == f"KeyError: '{MASK}"
    # The RQ bridge's Python values
    assert rules.mask_value("rq.job", ("ada", {"note": "password is s3cret"}, 4111222233334444)) == (
        "ada",
        {"note": MASK},
        MASK,
    )
    assert "s3cret" not in rules.mask_value_text("rq.job", None, "Traceback ... ValueError: password is s3cret")


def test_a_workers_failure_is_stored_masked(rules):
    failure = Failure(
        kind="ValueError",
        message="charge refused for sk_live_CARD77",
        frame="handlers.py:12 in charge",
        traceback="Traceback (most recent call last):\nValueError: charge refused for sk_live_CARD77",
    )
    stored = failure.redacted(rules, "shop:charge", b"{}")
    assert "sk_live_CARD77" not in stored.message and "sk_live_CARD77" not in stored.traceback
    assert stored.message == f"charge refused for {MASK}"


def test_an_audit_detail_stays_json_with_its_strings_masked(rules):
    detail = json.dumps({"options": {"headers": {"auth": "sk_live_Z9"}}, "query": "password is p1", "n": 3})
    shown = rules.mask_json_text(detail)
    assert json.loads(shown) == {"options": {"headers": {"auth": MASK}}, "query": MASK, "n": 3}
    assert rules.mask_json_text("searched for password is p1") == f"searched for {MASK}"
    untouched = json.dumps({"n": 1})
    assert rules.mask_json_text(untouched) is untouched


def test_search_reads_the_payload_and_the_error_as_masked(rules):
    task = TaskInfo(
        id="t1",
        type="user:login",
        queue="default",
        state="retry",
        payload=json.dumps(NOTE).encode(),
        last_error="login refused: password is hunter2",
    )
    assert matches(parse("s3cret-pw"), task, 0) and matches(parse("hunter2"), task, 0)  # unmasked: found
    searchable = rules.searchable(task)
    for word in ("s3cret-pw", "hunter2", "password"):
        assert not matches(parse(word), searchable, 0), word
    assert matches(parse("refused"), searchable, 0) and matches(parse("note"), searchable, 0)
    assert rules.searchable(TaskInfo(id="t2", type="x", queue="q", state="pending", payload=b"{}")).payload == b"{}"


def test_no_patterns_cost_nothing():
    none = Redaction.build(keys=["password"])
    assert not none.patterns and none.mask_string("password is x") == "password is x"
    assert not Redaction.build() and Redaction.build(patterns=["x+"])


@pytest.mark.parametrize(
    ("patterns", "message"),
    [
        ("password is \\S+", r"TASKS_REDACT_PATTERNS must be a list of regular expressions \(strings\), got str"),
        (42, "must be a list of regular expressions"),
        (["ok+", 3], r"TASKS_REDACT_PATTERNS\[1\] must be a regular expression \(a string\), got int 3"),
        (["ok+", ""], r"TASKS_REDACT_PATTERNS\[1\] must be 1 to 1000 characters long, got 0"),
        (["x" * 1001], r"TASKS_REDACT_PATTERNS\[0\] must be 1 to 1000 characters long, got 1001"),
        (["(unclosed"], r"TASKS_REDACT_PATTERNS\[0\] '\(unclosed' is not a valid regular expression: missing \)"),
        (["a{99999999999}"], "is too large to compile"),
        (["a*"], r"TASKS_REDACT_PATTERNS\[0\] 'a\*' can match the empty string"),
        ([r"\b"], "can match the empty string"),
        (["(?=x)"], "can match the empty string"),
        (["(a+)+b"], r"TASKS_REDACT_PATTERNS\[0\] '\(a\+\)\+b' nests an unbounded repetition inside another"),
        ([r"(?:\s*\w+)*;"], "nests an unbounded repetition"),
        ([r"(x|y+)*z"], "nests an unbounded repetition"),
        ([r"(?=(a+)+)b"], "nests an unbounded repetition"),
        (["x+"] * 101, "holds 101 patterns; at most 100"),
    ],
)
def test_bad_patterns_are_refused_naming_the_setting_and_the_entry(patterns, message):
    with pytest.raises(ValidationError, match=message):
        Redaction.build(patterns=patterns)


@pytest.mark.parametrize(
    "pattern",
    [r"(?i)password is \S+", r"(?:a++)+b", r"(?>a+)+b", r"(?:ab){2,5}", r"\d{4}-\d{4}", r"(?:\w+\.)?example\.com"],
)
def test_possessive_atomic_and_bounded_repetitions_are_accepted(pattern):
    assert Redaction.build(patterns=[pattern]).patterns[0].pattern == pattern


@pytest.mark.parametrize(
    ("patterns", "payload", "shown"),
    [
        # The raw JSON escapes what the string holds: the search of the raw text cannot stand for the walk.
        ([r"passé is \S+"], b'{"note": "pass\\u00e9 is x1"}', {"note": MASK}),
        ([r'say "hi"'], b'{"note": "say \\"hi\\" now"}', {"note": f"{MASK} now"}),
        # Anchors and lookarounds read around a match, which differs inside the JSON: always walked.
        ([r"^token-\w+"], b'{"a": "token-1", "b": "my token-2"}', {"a": MASK, "b": "my token-2"}),
        ([r"\w+-pw$"], b'{"a": "s3cret-pw", "b": "s3cret-pw!"}', {"a": MASK, "b": "s3cret-pw!"}),
        ([r"(?<!x)sk_\w+"], b'{"a": "sk_1", "b": "xsk_2"}', {"a": MASK, "b": "xsk_2"}),
        # Word boundaries read the same: what surrounds a JSON value is no word character.
        (
            [r"\b4111\d{12}\b"],
            b'{"card": 4111222233334444, "id": 941112222333344445}',
            {"card": MASK, "id": 941112222333344445},
        ),
    ],
)
def test_a_payload_that_escapes_or_an_anchored_pattern_is_walked_not_prefiltered(patterns, payload, shown):
    assert json.loads(Redaction.build(patterns=patterns).apply("t", payload)) == shown


def test_a_payload_no_pattern_can_match_is_returned_as_it_is(rules):
    clean = json.dumps({"user": "ada", "items": [{"sku": "a-1", "qty": 2}], "note": "gift wrap"}).encode()
    assert rules.apply("t", clean) is clean
    both = Redaction.build(keys=["user"], patterns=PATTERNS)
    assert json.loads(both.apply("t", clean))["user"] == MASK  # keys still apply when no pattern can match
