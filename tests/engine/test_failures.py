"""The failure a handler's exception leaves: its masked message, the frame that names it, its fingerprint, its
bounded traceback, and its redaction (a redacted payload value never reaches the stored traceback)."""

from __future__ import annotations

import functools
import json

import pytest

from taskq.queues.engine.failures import CUT, MAX_TRACEBACK, Failure, bounded, capture, fingerprint, mask_message
from taskq.queues.engine.redaction import MASK, Redaction


@pytest.mark.parametrize(
    ("message", "masked"),
    [
        ("card 4242 declined after 3.5 s", "card <n> declined after <n> s"),
        ("task 3f2a9c1e-1111-4a2b-8c3d-0123456789ab not found", "task <id> not found"),
        ("task 3f2a9c1e11114a2b8c3d0123456789ab not found", "task <id> not found"),
        ("object at 0x7f3a2b1c9d80 is closed", "object at <hex> is closed"),
        ("commit deadbeef12 missing", "commit <hex> missing"),
        ("user ada@example.com", "user ada@example.com"),  # no number, nothing masked
        ("deadline exceeded", "deadline exceeded"),  # hex letters alone are words, not ids
        ("row5 of table2", "row<n> of table<n>"),
    ],
)
def test_mask_message(message, masked):
    assert mask_message(message) == masked


def test_same_error_with_other_ids_shares_a_fingerprint():
    one = Failure("KeyError", "no order 1234 for 3f2a9c1e-1111-4a2b-8c3d-0123456789ab", "shop:charge")
    two = Failure("KeyError", "no order 98 for 0b9d2a33-2222-4c2b-9d3d-abcdefabcdef", "shop:charge")
    assert one.fingerprint == two.fingerprint
    assert len(one.fingerprint) == 16


@pytest.mark.parametrize(
    "other",
    [
        Failure("ValueError", "no order 1234", "shop:charge"),  # another class
        Failure("KeyError", "no customer 1234", "shop:charge"),  # another message
        Failure("KeyError", "no order 1234", "shop:refund"),  # another frame
    ],
)
def test_a_difference_in_class_message_or_frame_is_another_group(other):
    assert Failure("KeyError", "no order 1234", "shop:charge").fingerprint != other.fingerprint


def test_fingerprint_digests_its_three_parts():
    assert fingerprint("A", "b", "c") != fingerprint("A", "b\nc", "")


# -- the frame: the innermost in the handler's module --------------------------------------------------------------


def _parse(text: str):
    return json.loads(text)  # raises in the json module, below this module's frames


def charge(task):
    return _parse(task)


def raised(handler, *args) -> BaseException:
    try:
        handler(*args)
    except Exception as exc:
        return exc
    raise AssertionError("the handler did not raise")


def test_frame_is_the_innermost_in_the_handler_module():
    exc = raised(charge, "{not json")
    assert capture(exc, charge).frame == f"{__name__}:_parse"


def test_frame_of_a_handler_object_is_found_through_its_function():
    class Wrapped:  # like taskq.queues.engine.handlers.Handler: the function under .func
        func = staticmethod(charge)

    exc = raised(charge, "{not json")
    assert capture(exc, Wrapped()).frame == f"{__name__}:_parse"


def test_frame_of_a_wrapped_function_is_found_in_the_wrapped_module():
    # The wrapper's code lives elsewhere (here in C): the group still names the wrapped function's frames.
    cached = functools.lru_cache(charge)
    exc = raised(cached, "{not json")
    assert capture(exc, cached).frame == f"{__name__}:_parse"


def test_frame_without_a_handler_is_the_innermost():
    exc = raised(charge, "{not json")
    assert capture(exc).frame.startswith("json.")


def test_frame_of_an_exception_never_raised_is_empty():
    failure = capture(TimeoutError("task timed out after 5 s"), charge)
    assert failure.frame == ""
    assert failure.traceback == ""  # nothing to unfold: the worker decided on it, no code raised it
    assert failure.error == "TimeoutError: task timed out after 5 s"


def test_capture_keeps_class_message_and_traceback():
    exc = raised(charge, "{not json")
    failure = capture(exc, charge)
    assert failure.kind == "JSONDecodeError"
    assert failure.error.startswith("JSONDecodeError: Expecting property name")
    assert failure.traceback.startswith("Traceback (most recent call last):")
    assert "in _parse" in failure.traceback


# -- bounds ------------------------------------------------------------------------------------------------------


def throw(exc: BaseException):
    raise exc


def test_a_long_traceback_keeps_its_end():
    exc = RuntimeError("x" * 20_000 + " the bottom")
    kept = bounded(capture(raised(throw, exc)).traceback)  # as the retry and archive calls store it
    assert MAX_TRACEBACK - 10 < len(kept) <= MAX_TRACEBACK
    assert kept.startswith("[... ") and kept.endswith("xx the bottom\n")


def test_bounded_leaves_short_text_alone_and_cuts_long_text_to_the_limit():
    assert bounded("short", 10) == "short"
    cut = bounded("x" * 100 + "end", 60)
    assert len(cut) <= 60 and cut.endswith("xend") and "characters cut" in cut


# -- redaction ---------------------------------------------------------------------------------------------------

PAYLOAD = json.dumps({"user": "ada", "card": "4242-4242-4242-4242", "auth": {"pin": 9876, "note": "it's"}}).encode()
RULES = Redaction.build(keys=["card", "auth"])


def leaky(payload: bytes):
    data = json.loads(payload)
    try:
        raise ValueError(f"card {data['card']} declined for {data['user']}; auth was {data['auth']!r}")
    except ValueError as exc:
        raise KeyError(str(exc)) from exc  # the secret again, escaped once more by KeyError's repr


def test_a_redacted_payload_value_never_appears_in_the_stored_traceback():
    failure = capture(raised(leaky, PAYLOAD), leaky).redacted(RULES, "charge", PAYLOAD)
    stored = failure.traceback + failure.error
    for secret in ("4242-4242-4242-4242", "9876", "it's", "it\\'s"):
        assert secret not in stored
    assert "declined for ada" in failure.traceback  # what is not redacted stays readable
    assert failure.traceback.count(MASK) >= 4
    assert "in leaky" in failure.traceback  # frames are code, kept


def test_a_secret_in_a_message_the_cut_splits_is_masked_before_the_cut():
    secret = "9" * 40
    payload = json.dumps({"card": secret}).encode()
    kept = MAX_TRACEBACK - len(CUT.format(10_000))  # what bounded keeps of a text of five-digit length
    tail = "x" * (kept - 1 - 20)  # the cut falls 20 digits into the secret ("\n" ends the traceback)
    failure = capture(raised(throw, ValueError(f"card {secret}{tail}")))
    assert bounded(failure.traceback).startswith(CUT.format(len(failure.traceback) - kept) + "9" * 20 + "x")
    stored = bounded(failure.redacted(Redaction.build(keys=["card"]), "charge", payload).traceback)
    assert "9" * 5 not in stored and stored.endswith("xx\n")


def test_a_redacted_type_has_its_messages_masked_whole():
    rules = Redaction.build(types=["charge"])
    failure = capture(raised(leaky, PAYLOAD), leaky).redacted(rules, "charge", PAYLOAD)
    assert failure.error == f"KeyError: {MASK}"
    assert "ada" not in failure.traceback and "4242" not in failure.traceback
    assert f"ValueError: {MASK}" in failure.traceback


def test_without_rules_nothing_changes():
    failure = capture(raised(leaky, PAYLOAD), leaky)
    assert failure.redacted(Redaction(), "charge", PAYLOAD) is failure


def test_a_message_utf8_cannot_encode_is_captured_replaced():
    """A handler's message cut inside an emoji (half a surrogate pair) could not be sent to Redis; the failure
    is stored with U+FFFD in its place instead, as a consumer's fail over the API is."""
    try:
        raise ValueError("upload of \U0001f4e6"[:-1] + "\ud83d")
    except ValueError as exc:
        failure = capture(exc)
    assert failure.error == "ValueError: upload of \ufffd"
    for text in (failure.message, failure.traceback, *failure.messages):
        text.encode("utf-8")  # every part can be written


def test_a_wrapper_loop_is_captured_under_the_handler_itself():
    def looping(text):
        return _parse(text)

    looping.__wrapped__ = looping  # inspect.unwrap refuses a loop
    assert capture(raised(looping, "{not json"), looping).frame == f"{__name__}:_parse"
