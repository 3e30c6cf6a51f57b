"""The time series: a tally written to the minute and hour hashes of its queue and to the global ones, read back
point by point, percentiles from the buckets, gauges. Real Redis; the instants are fixed, nothing sleeps."""

from __future__ import annotations

import pytest

from taskq.queues.engine import Keys
from taskq.queues.engine.broker.commands import run_command
from taskq.queues.engine.sans_io import drive
from taskq.queues.engine.series import (
    EDGES_MS,
    MAX_NAMED_TYPES,
    RETENTION,
    SeriesTally,
    bucket_of,
    flush_flow,
    gauge_flow,
    percentile,
    point,
    read_flow,
)

KEYS = Keys()
T0 = 1_700_000_040.0  # the start of a minute


def run(r, flow):
    return drive(flow, lambda request: run_command(r, request))


def test_buckets_and_points():
    assert bucket_of(0) == 0 and bucket_of(1) == 0 and bucket_of(1.5) == 1
    assert bucket_of(EDGES_MS[-1]) == len(EDGES_MS) - 1 and bucket_of(10**9) == len(EDGES_MS)
    assert point(120.0, "m") == 2 and point(119.9, "m") == 1 and point(7200, "h") == 2


def test_a_tally_goes_to_the_minute_and_hour_hashes_of_its_queue_and_the_global_ones(r):
    tally = SeriesTally()
    for run_ms in (3, 3, 40):
        tally.finished("critical", "email:deliver", "ok", run_ms, waited_ms=20, at=T0)
    tally.finished("critical", "email:deliver", "retry", 700, waited_ms=2, at=T0)
    tally.finished("critical", "sms", "archive", 12, waited_ms=0, at=T0)
    tally.finished("default", "sms", "ok", 1, waited_ms=0, at=T0 + 60)  # the next minute, another queue
    run(r, flush_flow(KEYS, tally.drain()))
    assert tally.drain() == {}

    minute = KEYS.queue("critical").series("m", point(T0, "m"))
    assert {k.decode(): int(v) for k, v in r.hgetall(minute).items()} == {
        "ok|email:deliver": 3,
        "fail|email:deliver": 1,
        "retry|email:deliver": 1,
        "ms|email:deliver": 3 + 3 + 40 + 700,
        "r1|email:deliver": 2,  # 3 ms: over 1, up to 5
        "r4|email:deliver": 1,  # 40 ms: up to 50
        "r8|email:deliver": 1,  # 700 ms: up to 1000
        "w3|email:deliver": 3,  # 20 ms: up to 25
        "w1|email:deliver": 1,
        "fail|sms": 1,
        "ms|sms": 12,
        "r3|sms": 1,
        "w0|sms": 1,
    }
    hour = KEYS.queue("critical").series("h", point(T0, "h"))
    assert r.hgetall(hour) == r.hgetall(minute)  # one minute so far in the hour
    assert 0 < r.ttl(minute) <= RETENTION["m"] and RETENTION["m"] < r.ttl(hour) <= RETENTION["h"]
    total = KEYS.series("m", point(T0, "m"))
    assert r.hgetall(total) == {b"ok|critical": b"3", b"fail|critical": b"2", b"ok": b"3", b"fail": b"2"}
    assert r.hget(KEYS.series("h", point(T0, "h")), "ok|default") == b"1"


def test_reading_a_range_gives_one_point_per_step_and_percentiles_come_from_the_buckets(r):
    tally = SeriesTally()
    for n in range(100):  # 90 fast tasks, 9 slower, 1 slow
        tally.finished("q", "t", "ok", 3 if n < 90 else (80 if n < 99 else 4000), waited_ms=0, at=T0 + 60)
    run(r, flush_flow(KEYS, tally.drain()))
    points = run(r, read_flow(KEYS, "q", "m", T0, T0 + 120))
    assert [p.start for p in points] == [point(T0, "m") * 60 + 60 * i for i in range(3)]
    assert [p.total("ok") for p in points] == [0, 100, 0]
    assert percentile(points, "r", 0.5) == 5 and percentile(points, "r", 0.95) == 100
    assert percentile(points, "r", 0.99) == 100 and percentile(points, "r", 1.0) == 5000
    assert percentile(points, "r", 0.5, task_type="other") is None
    everything = run(r, read_flow(KEYS, None, "h", T0, T0 + 120))
    assert everything[0].total("ok", "q") == 100 and everything[0].fields["ok"] == 100
    (some,) = run(r, read_flow(KEYS, None, "h", T0, T0, fields=["ok|q", "fail|q", "ok"]))
    assert some.fields == {"ok|q": 100, "ok": 100}  # only the fields asked for, those recorded
    assert run(r, read_flow(KEYS, "q", "m", T0 + 60, T0)) == []


def test_gauges_record_size_and_latency_in_the_minute_and_the_hour(r):
    run(r, gauge_flow(KEYS, {"q": (42, 1.5)}, T0))
    for resolution in ("m", "h"):
        key = KEYS.queue("q").series(resolution, point(T0, resolution))
        assert r.hgetall(key) == {b"size": b"42", b"latency_ms": b"1500"}
        assert r.ttl(key) > 0


def test_what_could_not_be_written_is_kept_for_the_next_write():
    tally = SeriesTally()
    tally.finished("q", "t", "ok", 1, 0, T0)
    taken = tally.drain()
    tally.finished("q", "t", "ok", 1, 0, T0)
    tally.put_back(taken)
    assert tally.drain()[("q", point(T0, "m"))]["ok|t"] == 2


@pytest.mark.parametrize("outcome", ["ok", "retry", "archive"])
def test_every_outcome_counts_its_run_time(outcome):
    tally = SeriesTally()
    tally.finished("q", "t", outcome, 2, 0, T0)
    fields = tally.drain()[("q", point(T0, "m"))]
    assert fields["r1|t"] == 1 and fields["ms|t"] == 2
    assert fields["ok|t"] == (outcome == "ok") and fields["fail|t"] == (outcome != "ok")


def test_a_batch_counts_as_its_attempts_one_by_one_and_any_number_of_types_is_counted():
    """``finished_many`` (the acker's batch) counts exactly what ``finished`` does per attempt, also past the bound on
    the task types whose field names the tally keeps built (they are built again after it is reached)."""
    ends = [
        (f"type{n % (MAX_NAMED_TYPES + 5)}", ("ok", "retry", "archive")[n % 3], n % 700, n % 40) for n in range(3000)
    ]
    one_by_one, batched = SeriesTally(), SeriesTally()
    for task_type, outcome, run_ms, waited_ms in ends:
        one_by_one.finished("q", task_type, outcome, run_ms, waited_ms, T0)
    batched.finished_many("q", T0, ends[:1500])
    batched.finished_many("q", T0, ends[1500:])
    assert batched.drain() == one_by_one.drain()
