"""asynq's protobuf messages as ``wire`` writes and reads them: what Go's proto.Marshal writes, byte for byte (the
Go comparisons of the producer, worker and reads tests check it against real Go too), and what no message is."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from taskq.queues.engine.asynq.wire import (
    GO_ZERO_TIME,
    Timestamp,
    WireEnqueueEvent,
    WireError,
    WireSchedulerEntry,
    WireServer,
    WireTask,
    WireWorker,
)


def test_a_task_is_written_in_field_number_order_with_zero_values_left_out() -> None:
    task = WireTask(type="t", payload=b"\x00\xff", id="i", queue="q", retry=25, timeout=1800, last_failed_at=-1)
    assert task.encode() == bytes.fromhex(
        "0a0174"  # 1 type "t"
        "120200ff"  # 2 payload
        "1a0169"  # 3 id "i"
        "220171"  # 4 queue "q"
        "2819"  # 5 retry 25
        "40880e"  # 8 timeout 1800
        "58ffffffffffffffffff01"  # 11 last_failed_at -1: ten bytes of two's complement
    )
    assert WireTask.decode(task.encode()) == task
    assert WireTask().encode() == b""  # every field at its zero value: nothing at all


def test_maps_and_repeated_fields_round_trip() -> None:
    server = WireServer(host="h", pid=7, queues={"b": 1, "a": -3}, strict_priority=True, start_time=Timestamp(5, 6))
    assert WireServer.decode(server.encode()) == server
    entry = WireSchedulerEntry(id="e", enqueue_options=['Queue("q")', "MaxRetry(3)"], next_enqueue_time=Timestamp())
    assert WireSchedulerEntry.decode(entry.encode()) == entry
    event = WireEnqueueEvent(task_id="t", enqueue_time=Timestamp.of(datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)))
    assert WireEnqueueEvent.decode(event.encode()).enqueue_time.datetime() == datetime(2026, 1, 2, 3, 4, 5, 6, UTC)


def test_an_empty_timestamp_is_written_and_gos_zero_time_reads_as_none() -> None:
    worker = WireWorker(task_id="t", start_time=Timestamp(), deadline=GO_ZERO_TIME)
    back = WireWorker.decode(worker.encode())
    assert back.start_time == Timestamp() and back.start_time.datetime() == datetime(1970, 1, 1, tzinfo=UTC)
    assert back.deadline is not None and back.deadline.is_go_zero and back.deadline.datetime() is None
    assert WireWorker.decode(WireWorker(task_id="t").encode()).start_time is None  # unset: not written


def test_fields_of_a_newer_asynq_are_kept_and_written_back_after_the_known_ones() -> None:
    newer = WireTask(type="t", id="i").encode() + bytes.fromhex("a00605")  # field 100, varint 5
    task = WireTask.decode(newer)
    assert task.unknown == bytes.fromhex("a00605")
    assert task.encode() == newer


@pytest.mark.parametrize(
    "data",
    [
        bytes.fromhex("0a05"),  # a string of 5 bytes with none there
        bytes.fromhex("28ff"),  # a varint cut short
        bytes.fromhex("0b"),  # wire type 3 (a group), which proto3 never writes
        bytes.fromhex("2a0174"),  # field 5 (retry, an int) as bytes
        bytes.fromhex("0001"),  # field number 0
    ],
)
def test_bytes_that_are_no_message_raise_wire_error(data: bytes) -> None:
    with pytest.raises(WireError):
        WireTask.decode(data)
