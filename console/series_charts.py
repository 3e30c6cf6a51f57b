"""The time-series charts of the dashboard, the queue page and the task type page, built from the points the
inspector reads (``taskq.queues.engine.series``). Every figure drawn is one Redis holds: counts as recorded, run and
wait percentiles from the bucket counts of each point, the size and latency a worker sampled."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.utils.safestring import SafeString

from taskq.queues.engine.series import RANGES, Point, percentile

from .charts import SERIES_COLOURS, Line, stable_colours, time_chart

#: Queues drawn in a colour of their own on the dashboard's stacked charts; the rest are added up as "other".
QUEUE_COLOURS = SERIES_COLOURS


@dataclass(frozen=True)
class ChartSet:
    """The charts of one page for one range, with what the range tabs need."""

    range: str
    step: str  # what one column stands for: "1 min", "5 min", "1 h"...
    charts: list[tuple[str, SafeString]]


def _labels(points: Sequence[Point], range_name: str) -> list[str]:
    fmt = "%H:%M" if RANGES[range_name][1] == "m" else "%m-%d %H:00"
    return [datetime.fromtimestamp(p.start, UTC).strftime(fmt) for p in points]


def _step(points: Sequence[Point], range_name: str) -> str:
    seconds = points[1].start - points[0].start if len(points) > 1 else 60 if RANGES[range_name][1] == "m" else 3600
    return f"{seconds // 60} min" if seconds < 3600 else f"{seconds // 3600} h"


def _rate(failed: int, done: int) -> float | None:
    return None if not done else 100.0 * failed / done


def _throughput(points: Sequence[Point], task_type: str | None = None) -> list[Line]:
    return [
        Line("succeeded", [p.total("ok", task_type) for p in points], "ok"),
        Line("failed", [p.total("fail", task_type) for p in points], "fail"),
    ]


def _error_rate(points: Sequence[Point], task_type: str | None = None) -> Line:
    rates = [_rate(p.total("fail", task_type), p.total("ok", task_type) + p.total("fail", task_type)) for p in points]
    return Line("failed, % of attempts", rates, "rate")


def dashboard_fields(busiest: Sequence[str]) -> list[str]:
    """The global series' fields the dashboard reads: the busiest queues' own, and every queue's together."""
    return [f"{metric}|{q}" for q in busiest[:QUEUE_COLOURS] for metric in ("ok", "fail")] + ["ok", "fail"]


def dashboard_charts(points: Sequence[Point], range_name: str, busiest: Sequence[str]) -> ChartSet:
    """Successes and failures of every queue, stacked by queue: the busiest (today's processed, most first) in
    their own colour (one that follows the queue's name, ``stable_colours``), the rest added up as "other"
    (every queue's total less theirs)."""
    shown = list(busiest[:QUEUE_COLOURS])
    colours = stable_colours(shown)

    def stacked(metric: str) -> list[Line]:
        lines = [Line(q, [p.total(metric, q) for p in points], colours[q]) for q in shown]
        other = [p.fields.get(metric, 0) - sum(p.total(metric, q) for q in shown) for p in points]
        if any(other):
            lines.append(Line("other", other, "qother"))
        return lines

    step, labels = _step(points, range_name), _labels(points, range_name)
    return ChartSet(
        range_name,
        step,
        [
            (
                "Succeeded by queue",
                time_chart(labels, stacked("ok"), title=f"Succeeded per {step}, by queue", stacked=True),
            ),
            (
                "Failed by queue",
                time_chart(labels, stacked("fail"), title=f"Failed per {step}, by queue", stacked=True),
            ),
        ],
    )


def queue_charts(points: Sequence[Point], range_name: str) -> ChartSet:
    """Size, latency, throughput and error rate of one queue."""
    step, labels = _step(points, range_name), _labels(points, range_name)
    size = Line("size", [p.fields.get("size") for p in points], "size")
    latency = Line("latency", [p.fields.get("latency_ms") for p in points], "latency")
    return ChartSet(
        range_name,
        step,
        [
            ("Size", time_chart(labels, [size], title="Queue size (sampled each minute)", stacked=False)),
            (
                "Latency",
                time_chart(
                    labels, [latency], title="Latency: age of the oldest pending task", stacked=False, unit="ms"
                ),
            ),
            ("Throughput", time_chart(labels, _throughput(points), title=f"Attempts per {step}", stacked=True)),
            (
                "Error rate",
                time_chart(labels, [_error_rate(points)], title="Failed attempts, %", stacked=False, unit="%"),
            ),
        ],
    )


def type_charts(points: Sequence[Point], range_name: str, task_type: str) -> ChartSet:
    """Run-time percentiles, wait before start, throughput and error rate of one task type of one queue."""
    step, labels = _step(points, range_name), _labels(points, range_name)
    runs = [Line(f"p{q}", [percentile([p], "r", q / 100, task_type) for p in points], f"p{q}") for q in (50, 95, 99)]
    wait = Line("p95 wait", [percentile([p], "w", 0.95, task_type) for p in points], "wait")
    return ChartSet(
        range_name,
        step,
        [
            (
                "Run time",
                time_chart(labels, runs, title="Run time percentiles (bucket upper bounds)", stacked=False, unit="ms"),
            ),
            (
                "Throughput",
                time_chart(labels, _throughput(points, task_type), title=f"Attempts per {step}", stacked=True),
            ),
            (
                "Error rate",
                time_chart(
                    labels, [_error_rate(points, task_type)], title="Failed attempts, %", stacked=False, unit="%"
                ),
            ),
            (
                "Wait before start",
                time_chart(labels, [wait], title="Wait from pending to started, p95", stacked=False, unit="ms"),
            ),
        ],
    )


def type_summary(points: Sequence[Point], task_type: str) -> dict[str, float | int | None]:
    """The whole range's figures for one type: attempts, failures, error rate, run-time and wait percentiles."""
    ok = sum(p.total("ok", task_type) for p in points)
    failed = sum(p.total("fail", task_type) for p in points)
    return {
        "succeeded": ok,
        "failed": failed,
        "retried": sum(p.total("retry", task_type) for p in points),
        "error_rate": _rate(failed, ok + failed),
        "p50": percentile(points, "r", 0.50, task_type),
        "p95": percentile(points, "r", 0.95, task_type),
        "p99": percentile(points, "r", 0.99, task_type),
        "wait_p95": percentile(points, "w", 0.95, task_type),
    }
