"""Completion of the search language (the console's query box, issue 27): the keys are the parser's own; the
values of queue:, type: and state: and the payload paths come from real Redis (bounded reads, payloads masked);
the term under the cursor anywhere in a longer search is what an option replaces, names with spaces quoted.

A search is written with ``|`` where the cursor is."""

from __future__ import annotations

import pytest

from taskq.queues.engine import Client, Inspector
from taskq.queues.engine.errors import ValidationError
from taskq.queues.engine.inspection.task_search import PAYLOAD_SAMPLE_PER_LIST
from taskq.queues.engine.keys import STATES
from taskq.queues.engine.redaction import Redaction
from taskq.queues.engine.search import KEYS, QuerySyntaxError, parse
from taskq.queues.engine.search_completion import MAX_OPTIONS, InspectorSources, complete, payload_paths


@pytest.fixture
def tasks(r, redis_url, clock):
    with Client(redis_url, clock=clock) as client:
        client.enqueue("email:deliver", {"to": "ada@example.com", "customer": {"id": 7, "tier": "gold"}},
                       queue="mail")  # fmt: skip
        client.enqueue("email:digest", {"items": [{"sku": "A1"}], "card": {"number": "4111"}}, queue="mail")
        client.enqueue("sms:send", {"phone": "+4912345"}, queue="bulk mail")
        client.enqueue("report:build", {"week": 47}, queue="low", process_in=60)
        client.enqueue("billing:charge", {"amount": 12, "iban": "DE89"}, queue="low")


@pytest.fixture
def sources(redis_url, clock, tasks):
    with Inspector(redis_url, clock=clock) as insp:
        yield InspectorSources(insp, Redaction.build(types=["billing:"], keys=["card"]))


def at(typed: str, sources) -> tuple[str, list[str]]:
    """What accepting each option makes of ``typed`` (``|`` the cursor): the span replaced, and each result."""
    cursor, text = typed.index("|"), typed.replace("|", "")
    found = complete(text, cursor, sources)
    return text[found.start : found.end], [text[: found.start] + o.text + text[found.end :] for o in found.options]


def labels(typed: str, sources) -> list[str]:
    cursor, text = typed.index("|"), typed.replace("|", "")
    return [o.label for o in complete(text, cursor, sources).options]


def test_the_keys_are_the_parsers_own(sources):
    offered = labels("|", sources)
    assert offered == [key + ":" for key in KEYS]  # payload.<path>: as the parser's list names it
    for key in KEYS:
        key = key.replace("<path>", "to")
        try:
            parse(f"{key}:x")
        except QuerySyntaxError as exc:
            assert "unknown key" not in exc.message  # a value the key refuses, never the key itself
    assert labels("st|", sources) == ["state:"] and at("ag|", sources) == ("ag", ["age:"])
    assert labels("er|", sources) == ["error:", "fingerprint:"]  # those starting so first
    assert at("pay|", sources) == ("pay", ["payload."])  # then the paths: the box asks again after accepting


def test_values_of_each_kind_come_from_redis(sources):
    assert labels("queue:|", sources) == ["bulk mail", "low", "mail"]
    assert labels("queue:m|", sources) == ["mail", "bulk mail"]  # those starting so, then those holding it
    assert labels("type:|", sources) == ["billing:charge", "email:deliver", "email:digest", "report:build", "sms:send"]
    assert labels("type:email:d|", sources) == ["email:deliver", "email:digest"]
    assert labels("state:|", sources) == list(STATES) and labels("state:ret|", sources) == ["retry"]
    assert labels("id:|", sources) == labels("error:|", sources) == labels("payload.to:|", sources) == []
    assert labels("colour:|", sources) == []  # a key the parser does not know has no values


def test_other_terms_narrow_types_and_paths(sources):
    assert labels("queue:mail type:|", sources) == ["email:deliver", "email:digest"]
    assert labels("type:| queue:low", sources) == ["billing:charge", "report:build"]
    assert labels("queue:low state:scheduled payload.|", sources) == ["payload.week:"]
    assert labels("type:sms:* payload.|", sources) == ["payload.phone:"]
    # Other terms that cannot be read yet narrow nothing: the box completes while the search is half written.
    assert labels("state:sleeping payload.p|", sources) == ["payload.phone:"]


def test_payload_paths_are_keys_of_masked_payloads_never_values(sources):
    offered = labels("payload.|", sources)
    assert offered == [f"payload.{p}:" for p in
                       ("card", "customer", "customer.id", "customer.tier", "items", "items.0", "items.0.sku",
                        "phone", "to", "week")]  # fmt: skip
    # Below the masked key "card" nothing shows; the type masked whole ("billing:") shows no key at all.
    assert not [p for p in offered if "number" in p or "amount" in p or "iban" in p]
    everything = [o.text + o.detail for t in ("payload.|", "payload.card:|", "queue:|") for o in
                  complete(t.replace("|", ""), t.index("|"), sources).options]  # fmt: skip
    assert not [text for text in everything if "4111" in text or "DE89" in text or "ada@" in text]
    assert labels("payload.cu|", sources) == ["payload.customer:", "payload.customer.id:", "payload.customer.tier:"]


def test_the_term_under_the_cursor_in_a_longer_search_is_replaced(sources):
    assert at("state:retry qu| error:x", sources) == ("qu", ["state:retry queue: error:x"])
    assert at("state:retry queue:lo| error:x", sources) == ("queue:lo", ["state:retry queue:low error:x"])
    # At the end, a value is followed by a space: the next key comes next.
    assert at("type:x state:arch|", sources) == ("state:arch", ["type:x state:archived "])
    # In a list, the other values stay: the one under the cursor is completed.
    assert at("queue:mail,lo|", sources) == ("queue:mail,lo", ["queue:mail,low "])
    assert at("queue:lo|,mail", sources) == ("queue:lo,mail", ["queue:low,mail"])
    assert "mail" not in labels("queue:mail,|", sources)  # already there
    # In the key of a term with a value: the key alone is replaced; before a word, a key goes in front of it.
    assert at("sta|te:retry", sources) == ("state:", ["state:retry"])
    assert at("|overdue", sources)[1][0] == "queue:overdue"
    assert labels('"two wo|', sources) == labels("greylis|ted", sources) == []  # words are not completed


def test_names_with_spaces_are_quoted_as_the_parser_reads_them(sources):
    assert at("queue:bu|", sources) == ("queue:bu", ['queue:"bulk mail" '])
    assert at("queue:low,bu|", sources) == ("queue:low,bu", ['queue:"low,bulk mail" '])
    assert at('queue:"bulk m|', sources) == ('queue:"bulk m', ['queue:"bulk mail" '])
    assert at('queue:"low,bu|" state:retry', sources) == ('queue:"low,bu"', ['queue:"low,bulk mail" state:retry'])
    assert parse('queue:"low,bulk mail" ').queues == ("low", "bulk mail")


def test_reads_are_bounded(redis_url, clock, r):
    with Client(redis_url, clock=clock) as client:
        for n in range(PAYLOAD_SAMPLE_PER_LIST + 10):
            client.enqueue("t:x", {f"k{n}": {"deep": {"er": {"and": {"deeper": {"still": {"more": 1}}}}}}}, queue="q")
    with Inspector(redis_url, clock=clock) as insp:
        assert len(insp.payload_sample("", size=3)) == 3
        assert len(insp.payload_sample("")) == PAYLOAD_SAMPLE_PER_LIST  # one crowded list does not fill it alone
        found = complete("payload.", 8, InspectorSources(insp))
    assert len(found.options) == MAX_OPTIONS
    assert payload_paths([b'{"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}}']) == [
        "a", "a.b", "a.b.c", "a.b.c.d", "a.b.c.d.e", "a.b.c.d.e.f"]  # fmt: skip
    # Not JSON, not an object, keys the language cannot write: nothing, or only what it can.
    assert payload_paths([b"plain text", b"[1, 2]", b'{"a b": 1, "ok": {"x.y": 2}}', b"{"]) == ["0", "ok"]
    assert len(payload_paths([f'{{"k{n}": 1}}'.encode() for n in range(500)], most=50)) == 50


@pytest.mark.parametrize(("text", "cursor"), [("queue:", 7), ("queue:", -1), ("x" * 1001, 0), ("q", True)])
def test_a_cursor_outside_the_search_or_a_search_too_long_is_refused(sources, text, cursor):
    with pytest.raises(ValidationError):
        complete(text, cursor, sources)
