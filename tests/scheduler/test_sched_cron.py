"""The cron parser: fields, ranges, steps, lists, names, macros, @every, bad input, and time zones across DST."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from taskq.queues.engine import ValidationError
from taskq.queues.engine.cron import Cron, Every, parse


def at(text: str, tz: str = "UTC") -> float:
    """Epoch seconds of a wall time ``YYYY-mm-dd HH:MM`` in ``tz`` (first occurrence when repeated)."""
    zone = UTC if tz == "UTC" else ZoneInfo(tz)
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=zone).timestamp()


def walls(spec: str, start: str, count: int, tz: str = "UTC") -> list[str]:
    """The next ``count`` ticks after ``start`` as wall times in ``tz`` with their UTC offset."""
    schedule = parse(spec, tz)
    zone = UTC if tz == "UTC" else ZoneInfo(tz)
    return [datetime.fromtimestamp(t, zone).strftime("%Y-%m-%d %H:%M%z") for t in schedule.ticks(at(start, tz), count)]


CASES = [
    # spec, start (exclusive), expected next ticks (UTC)
    ("* * * * *", "2024-01-01 00:00", ["2024-01-01 00:01", "2024-01-01 00:02"]),
    (
        "*/15 * * * *",
        "2024-01-01 00:07",
        ["2024-01-01 00:15", "2024-01-01 00:30", "2024-01-01 00:45", "2024-01-01 01:00"],
    ),
    ("5 * * * *", "2024-01-01 00:05", ["2024-01-01 01:05", "2024-01-01 02:05"]),
    ("0 9-11 * * *", "2024-01-01 10:30", ["2024-01-01 11:00", "2024-01-02 09:00", "2024-01-02 10:00"]),
    (
        "0 9-17/4 * * *",
        "2024-01-01 00:00",
        ["2024-01-01 09:00", "2024-01-01 13:00", "2024-01-01 17:00", "2024-01-02 09:00"],
    ),
    ("0 20/2 * * *", "2024-01-01 00:00", ["2024-01-01 20:00", "2024-01-01 22:00", "2024-01-02 20:00"]),
    ("0,30 8 * * *", "2024-01-01 08:00", ["2024-01-01 08:30", "2024-01-02 08:00"]),
    ("0 0 1,15 * *", "2024-01-01 00:00", ["2024-01-15 00:00", "2024-02-01 00:00", "2024-02-15 00:00"]),
    ("0 0 31 * *", "2024-01-31 00:00", ["2024-03-31 00:00", "2024-05-31 00:00"]),  # months without a 31st skipped
    ("0 0 29 2 *", "2024-03-01 00:00", ["2028-02-29 00:00"]),  # leap day
    ("0 12 * jan,JUL *", "2024-01-31 12:00", ["2024-07-01 12:00"]),
    ("0 12 * * mon-fri", "2024-01-05 12:00", ["2024-01-08 12:00", "2024-01-09 12:00"]),  # Fri -> Mon
    ("0 12 * * SAT,sun", "2024-01-01 00:00", ["2024-01-06 12:00", "2024-01-07 12:00", "2024-01-13 12:00"]),
    ("0 0 * * 7", "2024-01-01 00:00", ["2024-01-07 00:00"]),  # 7 is Sunday too
    ("0 0 * * 0", "2024-01-01 00:00", ["2024-01-07 00:00"]),
    ("0 0 * * 5-7", "2024-01-01 00:00", ["2024-01-05 00:00", "2024-01-06 00:00", "2024-01-07 00:00"]),
    # both day fields restricted: either matches (Vixie cron)
    (
        "0 0 13 * fri",
        "2024-01-01 00:00",
        ["2024-01-05 00:00", "2024-01-12 00:00", "2024-01-13 00:00", "2024-01-19 00:00"],
    ),
    # a day field starting with * does not widen the other
    ("0 0 */10 * mon", "2024-01-01 00:00", ["2024-03-11 00:00", "2024-04-01 00:00"]),
    ("@hourly", "2024-01-01 00:30", ["2024-01-01 01:00", "2024-01-01 02:00"]),
    ("@daily", "2024-01-01 00:00", ["2024-01-02 00:00"]),
    ("@midnight", "2024-01-01 00:00", ["2024-01-02 00:00"]),
    ("@weekly", "2024-01-01 00:00", ["2024-01-07 00:00", "2024-01-14 00:00"]),
    ("@monthly", "2024-01-15 00:00", ["2024-02-01 00:00", "2024-03-01 00:00"]),
    ("@yearly", "2024-06-01 00:00", ["2025-01-01 00:00"]),
    ("@annually", "2024-06-01 00:00", ["2025-01-01 00:00"]),
    ("59 23 31 12 *", "2024-12-31 23:58", ["2024-12-31 23:59", "2025-12-31 23:59"]),
]


@pytest.mark.parametrize(("spec", "start", "expected"), CASES, ids=[c[0] + " after " + c[1] for c in CASES])
def test_next_ticks(spec, start, expected):
    assert walls(spec, start, len(expected)) == [e + "+0000" for e in expected]


def test_next_tick_is_strictly_after_and_ignores_seconds():
    schedule = parse("*/5 * * * *")
    assert schedule.next_after(at("2024-01-01 00:05")) == at("2024-01-01 00:10")
    assert schedule.next_after(at("2024-01-01 00:05") - 0.001) == at("2024-01-01 00:05")
    assert schedule.next_after(at("2024-01-01 00:05") + 30) == at("2024-01-01 00:10")


@pytest.mark.parametrize(
    ("spec", "period"),
    [
        ("@every 30s", 30),
        ("@every 5m", 300),
        ("@every 1h30m", 5400),
        ("@every 2d", 172800),
        ("@every 1s", 1),
        ("@EVERY 90s", 90),
        ("@every 1m 30s", 90),
        ("@every 1500ms", None),
    ],
)
def test_every_durations(spec, period):
    if period is None:
        with pytest.raises(ValidationError, match="whole number of seconds"):
            parse(spec)
        return
    schedule = parse(spec)
    assert isinstance(schedule, Every) and schedule.period == period


def test_every_is_aligned_to_the_epoch_whatever_the_start():
    schedule = parse("@every 30s", "Asia/Kolkata")  # the zone plays no part
    assert schedule.next_after(1_700_000_001.5) == 1_700_000_010.0
    assert schedule.next_after(1_700_000_010.0) == 1_700_000_040.0
    assert schedule.ticks(1_700_000_000.0, 3) == [1_700_000_010.0, 1_700_000_040.0, 1_700_000_070.0]
    assert parse("@every 1h").next_after(at("2024-01-01 10:20")) == at("2024-01-01 11:00")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "non-empty"),
        ("   ", "non-empty"),
        ("* * * *", "has 4 fields"),
        ("* * * * * *", "has 6 fields"),
        ("60 * * * *", "out of range 0-59"),
        ("* 24 * * *", "out of range 0-23"),
        ("* * 0 * *", "out of range 1-31"),
        ("* * 32 * *", "out of range 1-31"),
        ("* * * 13 *", "out of range 1-12"),
        ("* * * * 8", "out of range 0-7"),
        ("*/0 * * * *", 'step "0"'),
        ("*/x * * * *", 'step "x"'),
        ("5-1 * * * *", "runs backwards"),
        ("a * * * *", "not a number"),
        ("* * * foo *", "not a number"),
        ("* * * * funday", "not a number"),
        ("1,,2 * * * *", "not a number"),
        ("-1 * * * *", "not a number"),
        ("@reboot", "unknown macro"),
        ("@every", "expected a duration"),
        ("@every 10", "expected a duration"),
        ("@every 10y", "expected a duration"),
        ("@every 0s", "between 1s"),
        ("@every 400d", "between 1s"),
        ("0 0 30 2 *", "never fires"),
        ("0 0 31 4,6,9,11 *", "never fires"),
        ("* " * 200, "limit is 256"),
    ],
)
def test_bad_specs_are_refused_with_a_reason(spec, message):
    with pytest.raises(ValidationError, match=message):
        parse(spec)


@pytest.mark.parametrize("tz", ["Mars/Olympus", "", "../../etc/passwd", "x" * 100])
def test_bad_time_zones_are_refused(tz):
    with pytest.raises(ValidationError, match="time zone"):
        parse("* * * * *", tz)


def test_cron_in_a_time_zone_reads_its_wall_clock():
    assert walls("30 7 * * *", "2024-06-01 00:00", 2, "Europe/Paris") == [
        "2024-06-01 07:30+0200",
        "2024-06-02 07:30+0200",
    ]
    assert walls("30 7 * * *", "2024-01-01 00:00", 1, "Asia/Kolkata") == ["2024-01-01 07:30+0530"]
    assert parse("0 9 * * *", "America/New_York").next_after(at("2024-01-01 00:00")) == at("2024-01-01 14:00")


def test_dst_spring_forward_runs_a_skipped_time_once_at_the_jump():
    # 2024-03-10: New York clocks jump from 02:00 EST to 03:00 EDT.
    assert walls("30 2 * * *", "2024-03-09 12:00", 3, "America/New_York") == [
        "2024-03-10 03:00-0400",
        "2024-03-11 02:30-0400",
        "2024-03-12 02:30-0400",
    ]
    # every quarter of the skipped hour collapses into the one run at the jump, then the schedule carries on
    assert walls("*/15 * * * *", "2024-03-10 01:40", 4, "America/New_York") == [
        "2024-03-10 01:45-0500",
        "2024-03-10 03:00-0400",
        "2024-03-10 03:15-0400",
        "2024-03-10 03:30-0400",
    ]


def test_dst_fall_back_runs_a_fixed_time_once():
    # 2024-11-03: New York clocks go back from 02:00 EDT to 01:00 EST, so 01:30 happens twice.
    assert walls("30 1 * * *", "2024-11-02 12:00", 3, "America/New_York") == [
        "2024-11-03 01:30-0400",
        "2024-11-04 01:30-0500",
        "2024-11-05 01:30-0500",
    ]


def test_dst_fall_back_runs_hourly_schedules_in_both_copies_of_the_hour():
    assert walls("*/30 * * * *", "2024-11-03 00:15", 6, "America/New_York") == [
        "2024-11-03 00:30-0400",
        "2024-11-03 01:00-0400",
        "2024-11-03 01:30-0400",
        "2024-11-03 01:00-0500",
        "2024-11-03 01:30-0500",
        "2024-11-03 02:00-0500",
    ]
    # asked from inside the second copy of the hour
    second = at("2024-11-03 06:10")  # 01:10 EST
    assert parse("*/30 * * * *", "America/New_York").next_after(second) == at("2024-11-03 06:30")


def test_dst_in_europe_and_a_half_hour_shift():
    assert walls("0 2 * * *", "2024-03-30 12:00", 2, "Europe/Berlin") == [
        "2024-03-31 03:00+0200",
        "2024-04-01 02:00+0200",
    ]
    assert walls("0 2 * * *", "2024-10-26 12:00", 2, "Europe/Berlin") == [
        "2024-10-27 02:00+0200",
        "2024-10-28 02:00+0100",
    ]
    # Lord Howe Island moves its clocks by 30 minutes (02:00 -> 02:30 on 2024-10-06)
    assert walls("15 2 * * *", "2024-10-05 12:00", 2, "Australia/Lord_Howe") == [
        "2024-10-06 02:30+1100",
        "2024-10-07 02:15+1100",
    ]


def test_latest_between_finds_the_last_tick_of_a_long_interval():
    schedule = parse("* * * * *")
    now = at("2024-06-01 12:00") + 30
    assert schedule.latest_between(at("2023-01-01 00:00"), now) == at("2024-06-01 12:00")
    assert schedule.latest_between(at("2024-06-01 12:00"), now) is None  # the bound is exclusive
    assert parse("0 0 1 1 *").latest_between(at("2020-06-01 00:00"), now) == at("2024-01-01 00:00")
    assert parse("0 0 1 1 *").latest_between(at("2024-01-01 00:00"), now) is None
    assert parse("@every 10s").latest_between(0, 1_700_000_005) == 1_700_000_000


def test_parsed_fields():
    schedule = parse("0-10/5,30 */6 1 jan-mar 1-5")
    assert isinstance(schedule, Cron)
    assert schedule.minutes == {0, 5, 10, 30}
    assert schedule.hours == {0, 6, 12, 18}
    assert schedule.months == {1, 2, 3}
    assert schedule.weekdays == {1, 2, 3, 4, 5}
    assert schedule.days_restricted and schedule.weekdays_restricted
