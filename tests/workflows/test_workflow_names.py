"""The workflow group has a name of its own, ``parallel`` (``Parallel``), so "group" means only the aggregation group
of ``enqueue(group=)``: the public API has no ``group`` left, and the errors say "parallel"."""

from __future__ import annotations

import pytest

import taskq
from taskq.queues import engine
from taskq.queues.engine import ValidationError, chord, parallel, sig
from taskq.queues.engine.workflows import Parallel


def test_the_public_api_names_it_parallel_and_has_no_group():
    assert taskq.parallel is engine.parallel is parallel
    assert "parallel" in taskq.__all__ and "group" not in taskq.__all__
    assert not hasattr(taskq, "group") and not hasattr(engine, "group")


def test_a_chord_s_header_is_a_parallel():
    assert isinstance(chord([sig("a"), sig("b")], sig("sum")).header, Parallel)
    given = parallel(sig("a"))
    assert chord(given, sig("sum")).header is given


def test_its_errors_say_parallel():
    with pytest.raises(ValidationError, match="a parallel needs at least one member"):
        parallel()
    with pytest.raises(ValidationError, match="must be sig\\(...\\), chain, parallel or chord"):
        parallel("not a signature")
