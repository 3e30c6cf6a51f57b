"""Schedules of periodic tasks: five-field cron expressions in a time zone, and ``@every <duration>``.

    parse("*/5 * * * *")                 every five minutes (UTC)
    parse("30 2 * * mon-fri", "Europe/Paris")
    parse("@daily", "America/New_York")  @hourly @daily (@midnight) @weekly @monthly @yearly (@annually)
    parse("@every 90s")                  1h30m, 2d, 45m ... ticks at whole multiples of the period since the epoch

Fields: minute (0-59), hour (0-23), day of month (1-31), month (1-12 or jan-dec), day of week (0-7 or sun-sat,
0 and 7 both Sunday). Each field is ``*``, a value, a range ``a-b``, a step ``*/n``, ``a-b/n`` or ``a/n`` (a to
the field's maximum), or a comma-separated list of those. As in Vixie cron, when both day fields are restricted
(neither starts with ``*``) a day matches if either does; otherwise both must.

Times are matched on the wall clock of the time zone. Daylight-saving transitions follow Vixie cron: a wall time
that does not exist (clocks jump forward over it) fires once at the jump; a wall time that happens twice (clocks
go back) fires at its first occurrence only, unless the hour field is ``*`` (a schedule that runs every hour
runs in both copies of the repeated hour). Nothing here does I/O; times are epoch seconds.
"""

from __future__ import annotations

import calendar
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import ValidationError
from .quoting import shown

OP = "cron.parse"
MAX_SPEC = 256
MIN_EVERY = 1.0
MAX_EVERY = 366 * 24 * 3600.0

MONTHS = {
    name: i
    for i, name in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1
    )
}
DAYS = {name: i for i, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
# Longest UTC offset change of any zone (Lord Howe moves 30 min, a few zones once moved 2 h): searching this far
# back on the wall clock finds every instant of a repeated hour.
_DST_SLACK = timedelta(hours=3)
# How far ahead a match is searched for: 28 years cover every leap-year and weekday combination.
_SEARCH_YEARS = 28


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int] | None = None


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12, MONTHS),
    _Field("day of week", 0, 7, DAYS),
)


def time_zone(name: str) -> tzinfo:
    """The zone called ``name`` (IANA, e.g. ``Europe/Paris``; ``UTC``). Raises ValidationError."""
    if not isinstance(name, str) or not name or len(name) > 64:
        raise ValidationError(f"time zone must be an IANA name such as 'Europe/Paris', got {shown(name)}", op=OP)
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError(f"unknown time zone {shown(name)}", op=OP) from None


def _value(text: str, field: _Field, spec: str) -> int:
    if field.names and text.lower() in field.names:
        return field.names[text.lower()]
    if not text.isdigit():
        raise ValidationError(f"{field.name}: {shown(text)} is not a number in {shown(spec)}", op=OP)
    value = int(text)
    if not field.low <= value <= field.high:
        raise ValidationError(f"{field.name}: {value} is out of range {field.low}-{field.high} in {shown(spec)}", op=OP)
    return value


def _part(part: str, field: _Field, spec: str) -> set[int]:
    """One element of a comma list: ``*``, ``a``, ``a-b``, each optionally ``/step``."""
    base, slash, step_text = part.partition("/")
    step = 1
    if slash:
        if not step_text.isdigit() or int(step_text) == 0:
            raise ValidationError(
                f"{field.name}: step {shown(step_text)} must be a positive number in {shown(spec)}", op=OP
            )
        step = int(step_text)
    if base == "*":
        low, high = field.low, field.high
    elif "-" in base:
        first, _, last = base.partition("-")
        low, high = _value(first, field, spec), _value(last, field, spec)
        if low > high:
            raise ValidationError(f"{field.name}: range {shown(base)} runs backwards in {shown(spec)}", op=OP)
    else:
        low = _value(base, field, spec)
        high = field.high if slash else low  # "a/n" means a to the maximum, every n
    return set(range(low, high + 1, step))


def _field(text: str, field: _Field, spec: str) -> frozenset[int]:
    if not text:
        raise ValidationError(f"{field.name} is empty in {shown(spec)}", op=OP)
    values: set[int] = set()
    for part in text.split(","):
        values |= _part(part, field, spec)
    if field.name == "day of week" and 7 in values:
        values = (values - {7}) | {0}
    return frozenset(values)


class Schedule:
    """When an entry fires. Subclasses give the tick strictly after an instant."""

    spec: str

    def next_after(self, t: float) -> float | None:
        """The first tick strictly after ``t`` (epoch seconds); None if there is none."""
        raise NotImplementedError

    def latest_between(self, after: float, until: float) -> float | None:
        """The last tick in ``(after, until]``, or None. Cheap however long the interval: it searches back from
        ``until`` in growing windows instead of walking every tick since ``after``."""
        window = 60.0
        while True:
            start = max(after, until - window)
            tick = self.next_after(start)
            if tick is not None and tick <= until:
                while True:
                    following = self.next_after(tick)
                    if following is None or following > until:
                        return tick
                    tick = following
            if start <= after:
                return None
            window *= 4

    def ticks(self, after: float, count: int) -> list[float]:
        """The next ``count`` ticks after ``after``."""
        out: list[float] = []
        t: float | None = after
        while len(out) < count and t is not None:
            t = self.next_after(t)
            if t is not None:
                out.append(t)
        return out


@dataclass(frozen=True)
class Every(Schedule):
    """``@every <duration>``: ticks at whole multiples of ``period`` seconds since the epoch, so every scheduler
    computes the same ticks whenever it started."""

    spec: str
    period: float

    def next_after(self, t: float) -> float | None:
        return (math.floor(t / self.period) + 1) * self.period


@dataclass(frozen=True)
class Cron(Schedule):
    spec: str
    zone: tzinfo
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    days_restricted: bool
    weekdays_restricted: bool

    # -- the wall clock: naive datetimes in the zone ------------------------------------------------------------

    def _day_matches(self, year: int, month: int, day: int) -> bool:
        in_days = day in self.days
        in_weekdays = (calendar.weekday(year, month, day) + 1) % 7 in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return in_days or in_weekdays
        return in_days and in_weekdays

    def _next_wall(self, start: datetime) -> datetime | None:
        """The first wall time at or after ``start`` (whole minutes) that the fields match."""
        year, month, day, hour, minute = start.year, start.month, start.day, start.hour, start.minute
        limit = start.year + _SEARCH_YEARS
        while year <= limit:
            if month not in self.months:
                month, day, hour, minute = month + 1, 1, 0, 0
                if month > 12:
                    year, month = year + 1, 1
                continue
            if day > calendar.monthrange(year, month)[1]:
                month, day, hour, minute = month + 1, 1, 0, 0
                if month > 12:
                    year, month = year + 1, 1
                continue
            if not self._day_matches(year, month, day):
                day, hour, minute = day + 1, 0, 0
                continue
            if hour not in self.hours:
                later = next((h for h in sorted(self.hours) if h > hour), -1)
                if later < 0:
                    day, hour, minute = day + 1, 0, 0
                else:
                    hour, minute = later, 0
                continue
            found = next((m for m in sorted(self.minutes) if m >= minute), -1)
            if found < 0:
                hour, minute = hour + 1, 0
                if hour > 23:
                    day, hour = day + 1, 0
                continue
            return datetime(year, month, day, hour, found)
        return None

    # -- wall times to instants ---------------------------------------------------------------------------------

    def _instants(self, wall: datetime) -> list[float]:
        """The instants at which a matching wall time fires (see the module docstring for DST)."""
        first = wall.replace(tzinfo=self.zone, fold=0)
        second = wall.replace(tzinfo=self.zone, fold=1)
        if first.astimezone(UTC).astimezone(self.zone).replace(tzinfo=None) != wall:
            return [self._jump(wall, second.timestamp(), first.timestamp())]
        if first.utcoffset() != second.utcoffset():  # a repeated wall time
            if len(self.hours) == 24:
                return [first.timestamp(), second.timestamp()]
            return [first.timestamp()]
        return [first.timestamp()]

    def _jump(self, wall: datetime, low: float, high: float) -> float:
        """The instant the clocks jumped over ``wall``: the first second whose wall time is later than it."""
        lo, hi = math.floor(min(low, high)), math.ceil(max(low, high))
        while lo < hi:
            mid = (lo + hi) // 2
            if datetime.fromtimestamp(mid, self.zone).replace(tzinfo=None) > wall:
                hi = mid
            else:
                lo = mid + 1
        return float(lo)

    def _offset(self, t: float) -> timedelta | None:
        return datetime.fromtimestamp(t, self.zone).utcoffset()

    def next_after(self, t: float) -> float | None:
        local = datetime.fromtimestamp(t, self.zone).replace(tzinfo=None).replace(second=0, microsecond=0)
        fixed = self.zone is UTC
        # When the clocks go back within the next few hours, instants later than t carry earlier wall times: walk
        # the wall clock from a little before t, and keep the earliest instant found until the walk is past any
        # wall time that could still map to an earlier instant (wall order is not instant order there).
        slack = _DST_SLACK.total_seconds()
        back = not fixed and self._offset(t) != self._offset(t + slack)
        wall = self._next_wall(local - _DST_SLACK if back else local)
        best: float | None = None
        while wall is not None:
            if best is not None:
                if fixed or (best - t < 7 * 86400 and self._offset(t) == self._offset(best)):
                    break  # no transition in between: the wall clock ran straight, the first match is the earliest
                if wall > datetime.fromtimestamp(best + slack, self.zone).replace(tzinfo=None):
                    break
            for instant in self._instants(wall):
                if instant > t and (best is None or instant < best):
                    best = instant
            wall = self._next_wall(wall + timedelta(minutes=1))
        return best


def parse_every(text: str, spec: str) -> Every:
    body = text.strip().replace(" ", "")
    if not body or _DURATION.sub("", body):
        raise ValidationError(f"{shown(spec)}: expected a duration such as 30s, 5m, 1h30m or 2d after @every", op=OP)
    period = sum(float(number) * UNITS[unit] for number, unit in _DURATION.findall(body))
    if not MIN_EVERY <= period <= MAX_EVERY:
        raise ValidationError(f"{shown(spec)}: the period must be between 1s and 366d", op=OP)
    if period != int(period):
        raise ValidationError(f"{shown(spec)}: the period must be a whole number of seconds", op=OP)
    return Every(spec, float(period))


def parse(spec: str, tz: str = "UTC") -> Schedule:
    """Parse a schedule. Raises ValidationError naming what is wrong."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValidationError(f"schedule must be a non-empty string, got {shown(spec)}", op=OP)
    if len(spec) > MAX_SPEC:
        raise ValidationError(f"schedule is {len(spec)} characters long; the limit is {MAX_SPEC}", op=OP)
    zone = time_zone(tz)
    text = spec.strip()
    lowered = text.lower()
    if lowered.startswith("@every"):
        return parse_every(text[len("@every") :], spec)
    if lowered.startswith("@"):
        if lowered not in MACROS:
            raise ValidationError(
                f"unknown macro {shown(text)}; use one of {', '.join(sorted(MACROS))} or @every", op=OP
            )
        text = MACROS[lowered]
    parts = text.split()
    if len(parts) != 5:
        raise ValidationError(
            f"{shown(spec)} has {len(parts)} fields; cron needs 5: minute hour day-of-month month day-of-week", op=OP
        )
    minutes, hours, days, months, weekdays = (_field(part, f, spec) for part, f in zip(parts, _FIELDS, strict=True))
    schedule = Cron(
        spec,
        zone,
        minutes,
        hours,
        days,
        months,
        weekdays,
        days_restricted=not parts[2].startswith("*"),
        weekdays_restricted=not parts[4].startswith("*"),
    )
    if schedule._next_wall(datetime(2000, 1, 1)) is None:
        raise ValidationError(f"{shown(spec)} never fires (no such day)", op=OP)
    return schedule
