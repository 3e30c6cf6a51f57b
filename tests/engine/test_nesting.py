"""JSON depth measured without recursion (``taskq.queues.engine.nesting``), the payload depth limit it enforces
(``validation.payload``), and the readers that parse stored payloads through it (redaction, search)."""

from __future__ import annotations

import json
import sys

import pytest

from taskq.queues.engine import PayloadTooDeepError, ValidationError, nesting
from taskq.queues.engine import validation as check
from taskq.queues.engine.redaction import MASK, MASKED_WHOLE, Redaction
from taskq.queues.engine.search import matches, parse

FAR_PAST_THE_STACK = sys.getrecursionlimit() * 10


def nested(levels: int, inner: str = "1") -> str:
    return "[" * levels + inner + "]" * levels


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ('"a [ { string"', 0),
        ("[]", 1),
        ("{}", 1),
        ('{"a":[1,{"b":[]}]}', 4),
        ('["]","\\"[[[", {"[": "{"}]', 2),  # brackets in strings and escaped quotes do not count
        ("[1,[2],[[3]],4]", 3),
        ("[[[", 3),  # not JSON: its unclosed brackets
        ("]]]", 0),
        (nested(FAR_PAST_THE_STACK), FAR_PAST_THE_STACK),
    ],
)
def test_depth_of_text_and_bytes(text, depth):
    assert nesting.depth(text) == depth
    assert nesting.depth(text.encode()) == depth
    assert nesting.deeper_than(text, depth) is False
    assert depth == 0 or nesting.deeper_than(text.encode(), depth - 1)


def test_depth_agrees_with_a_recursive_count_on_generated_documents():
    def recursive(value) -> int:
        if isinstance(value, list):
            return 1 + max((recursive(v) for v in value), default=0)
        if isinstance(value, dict):
            return 1 + max((recursive(v) for v in value.values()), default=0)
        return 0

    documents = [
        {"a": [1, 2, {"b": "]]]"}], "c": {"d": {"e": [[], {}]}}},
        [[[[["x"]]], [[["y", {"z": '\\"[{'}]]]]],
        {"k" * 5: [{"v": [i] * i} for i in range(6)]},
        "plain",
    ]
    for doc in documents:
        for text in (json.dumps(doc), json.dumps(doc, indent=2), json.dumps(doc, ensure_ascii=False)):
            assert nesting.depth(text) == recursive(doc), text


def test_loads_refuses_too_deep_by_name_and_parses_the_rest():
    with pytest.raises(nesting.TooDeepError, match="nested deeper than 128 levels"):
        nesting.loads(nested(FAR_PAST_THE_STACK))
    with pytest.raises(nesting.TooDeepError):
        nesting.loads(nested(5), limit=4)
    assert nesting.loads(nested(4), limit=4) == [[[[1]]]]
    with pytest.raises(ValueError):  # not JSON at all: json's own error
        nesting.loads("{oops")


def test_payload_limit_applies_to_values_json_bytes_and_not_to_opaque_bytes():
    limits = check.PayloadLimits(max_depth=3)
    assert check.payload([[["ok"]]], "t", limits) == b'[[["ok"]]]'
    for payload in ([[[["no"]]]], b"[[[[1]]]]", b'\n  {"a":[[[1]]]}'):
        with pytest.raises(PayloadTooDeepError, match="deeper than 3 levels"):
            check.payload(payload, "t", limits)
    # Bytes that do not begin as a JSON array or object are opaque: never parsed, never measured.
    assert check.payload(b"x[[[[[[", "t", limits) == b"x[[[[[["
    assert check.payload(bytes([0x9F]) + b"{{{{{{", "t", limits)


def test_a_value_too_deep_to_encode_is_refused_by_name():
    value: list = []
    for _ in range(FAR_PAST_THE_STACK):
        value = [value]
    with pytest.raises(PayloadTooDeepError, match="nested deeper than 64 levels"):
        check.payload(value, "t")


def test_payload_limits_are_checked():
    with pytest.raises(ValidationError, match="max_payload_depth must be between 1 and 128"):
        check.PayloadLimits(max_depth=0)
    with pytest.raises(ValidationError, match="max_payload_depth"):
        check.PayloadLimits(max_depth=129)


def test_redaction_masks_a_too_deep_value_whole_and_never_recurses():
    rules = Redaction.build(keys=["password"], max_depth=8)
    deep = ('{"password":"pw-123","nest":' + nested(FAR_PAST_THE_STACK) + "}").encode()
    assert rules.apply("t", deep) == MASKED_WHOLE
    assert rules.hides("t", deep)
    assert rules.mask_text("t", deep, "failed with pw-123") == MASK
    shallow = b'{"password":"pw-123","nest":[[1]]}'
    assert rules.apply("t", shallow) == b'{"password":"[redacted]","nest":[[1]]}'
    assert rules.mask_text("t", shallow, "failed with pw-123") == f"failed with {MASK}"
    # Without key rules nothing is parsed, so nothing is masked: the page shows it as too deep instead.
    assert Redaction.build(types=["other:"]).apply("t", deep) is deep


def test_search_skips_a_too_deep_payload_for_field_queries():
    from taskq.queues.engine.message import TaskInfo

    deep = TaskInfo(id="a", type="t", queue="q", state="pending", payload=nested(FAR_PAST_THE_STACK).encode())
    fine = TaskInfo(id="b", type="t", queue="q", state="pending", payload=b'{"customer":"acme"}')
    query = parse("payload.customer:acme")
    assert [t.id for t in (deep, fine) if matches(query, t, 0.0)] == ["b"]


def test_value_depth_is_found_without_recursion():
    deep: list = []
    for _ in range(FAR_PAST_THE_STACK):
        deep = [deep]
    assert nesting.value_deeper_than(deep, 64)
    assert nesting.value_deeper_than({"a": [({"b": 1},)]}, 3)  # dict, list, tuple, dict
    assert not nesting.value_deeper_than({"a": [({"b": 1},)]}, 4)
    assert not nesting.value_deeper_than("scalar", 0)
