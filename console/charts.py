"""Inline SVG charts, drawn server-side: no JavaScript library and nothing fetched from elsewhere.

Colours come from CSS classes (``.c-<series>``) so both themes restyle them. Every label is escaped here, since
the markup is handed to templates as safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe

#: The states the size counts (completed excluded), in the queue page's tab order.
SIZE_SERIES = ("active", "pending", "aggregating", "waiting", "scheduled", "retry", "archived")


@dataclass(frozen=True)
class Bar:
    label: str
    values: dict[str, int]
    href: str = ""


def _nice_max(value: int) -> int:
    """Four times the smallest 1/2/5 x 10^n step that reaches ``value`` in four, so the axis ends on a round
    number and all five ticks (0, 1/4 … 4/4) are round too (0 10 20 30 40, not 0 12 25 37 50)."""
    if value <= 0:
        return 4
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor * 4 >= value:
                return step * factor * 4
        step *= 10


def stacked_bars(bars: Sequence[Bar], series: Sequence[str], *, title: str) -> SafeString:
    """Horizontal bars, one per label, stacked by series (the queue size by state chart)."""
    row, label_w, width, top = 26, 150, 420, 8
    scale_max = _nice_max(max((sum(b.values.get(s, 0) for s in series) for b in bars), default=0))
    height = top + row * max(len(bars), 1) + 24
    # With links on its labels the chart is a group, not an image: an image's content is not interactive.
    role = "group" if any(bar.href for bar in bars) else "img"
    out = [
        f'<svg class="chart" viewBox="0 0 {label_w + width + 20} {height}" role="{role}" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for index, bar in enumerate(bars):
        y = top + index * row
        name = escape(bar.label if len(bar.label) <= 24 else bar.label[:23] + "…")
        label = f'<text class="axis" x="{label_w - 8}" y="{y + 16}" text-anchor="end">{name}</text>'
        if bar.href:
            label = f'<a href="{escape(bar.href)}">{label}</a>'
        out.append(label)
        x = float(label_w)
        for name in series:
            value = bar.values.get(name, 0)
            if value <= 0:
                continue
            w = value / scale_max * width
            out.append(
                f'<rect class="c-{name}" x="{x:.1f}" y="{y + 3}" width="{max(w, 1):.1f}" height="{row - 8}">'
                f"<title>{escape(bar.label)} · {name}: {value:,}</title></rect>"
            )
            x += w
    out.append(_x_axis(label_w, width, top + row * max(len(bars), 1) + 16, scale_max))
    out.append("</svg>")
    return mark_safe("".join(out))  # noqa: S308 - every interpolated label is escaped above


def _x_axis(left: int, width: int, y: int, scale_max: int) -> str:
    ticks = []
    for i in range(5):
        value = scale_max * i // 4
        x = left + width * i / 4
        ticks.append(f'<text class="axis" x="{x:.1f}" y="{y}" text-anchor="middle">{value:,}</text>')
    return "".join(ticks)


def grouped_columns(bars: Sequence[Bar], series: Sequence[str], *, title: str) -> SafeString:
    """Vertical columns per label, side by side per series (processed and failed per day)."""
    left, width, height, bottom = 48, 530, 180, 28
    scale_max = _nice_max(max((v for b in bars for v in b.values.values()), default=0))
    slot = width / max(len(bars), 1)
    col = max(slot * 0.8 / len(series), 1.0)
    out = [
        f'<svg class="chart" viewBox="0 0 {left + width + 10} {height + bottom + 10}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for i in range(5):
        value = scale_max * i // 4
        y = 10 + height - height * i / 4
        out.append(
            f'<line class="grid" x1="{left}" x2="{left + width}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{value:,}</text>'
        )
    label_every = max(1, len(bars) // 10)
    for index, bar in enumerate(bars):
        x0 = left + index * slot + slot * 0.1
        for k, name in enumerate(series):
            value = bar.values.get(name, 0)
            h = value / scale_max * height
            out.append(
                f'<rect class="c-{name}" x="{x0 + k * col:.1f}" y="{10 + height - h:.1f}" width="{col:.1f}" '
                f'height="{h:.1f}"><title>{escape(bar.label)} · {name}: {value:,}</title></rect>'
            )
        if index % label_every == 0 or index == len(bars) - 1:
            out.append(
                f'<text class="axis" x="{left + (index + 0.5) * slot:.1f}" y="{height + bottom}" '
                f'text-anchor="middle">{escape(bar.label)}</text>'
            )
    out.append("</svg>")
    return mark_safe("".join(out))  # noqa: S308 - every interpolated label is escaped above


@dataclass(frozen=True)
class Line:
    """One series of a time chart: its legend name, one value per point (None: nothing recorded), and its
    colour class (``c-<css>``)."""

    name: str
    values: Sequence[float | None]
    css: str


def _short(value: float, unit: str) -> str:
    """An axis or hover figure: 1,234 / 1.2k / 3.4M, with the unit (``ms``, ``%``, ``/min``...)."""
    if unit == "ms" and value >= 1000:
        return f"{value / 1000:g} s"
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= size * 10:
            return f"{value / size:,.0f}{suffix}{unit and ' ' + unit}"
    text = f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"
    return f"{text}{unit and ' ' + unit}"


def time_chart(
    labels: Sequence[str], lines: Sequence[Line], *, title: str, stacked: bool, unit: str = ""
) -> SafeString:
    """A chart over time, one column per point: stacked columns (counts: each line a layer) or lines (gauges,
    percentiles, rates). ``labels`` names each point (a few are printed under the axis, spaced so they never
    overlap); every column or dot has a hover title with its exact figure. The legend is drawn above."""
    left, width, height, top, bottom = 56, 600, 150, 24, 22
    n = max(len(labels), 1)
    slot = width / n
    if stacked:
        peak = max((sum(line.values[i] or 0 for line in lines) for i in range(len(labels))), default=0)
    else:
        peak = max((v for line in lines for v in line.values if v is not None), default=0)
    scale = _nice_max(int(peak) + (0 if peak == int(peak) else 1))
    out = [
        f'<svg class="chart time" viewBox="0 0 {left + width + 10} {top + height + bottom + 4}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    x = float(left)
    for line in lines:  # the legend
        out.append(
            f'<rect class="c-{escape(line.css)}" x="{x:.0f}" y="4" width="10" height="10"/>'
            f'<text class="axis legend" x="{x + 14:.0f}" y="13">{escape(line.name)}</text>'
        )
        x += 24 + 7 * len(line.name)
    for i in range(5):
        value = scale * i / 4
        y = top + height - height * i / 4
        out.append(
            f'<line class="grid" x1="{left}" x2="{left + width}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(_short(value, unit))}</text>'
        )
    if stacked:
        for i, label in enumerate(labels):
            base = 0.0
            for line in lines:
                value = line.values[i] or 0
                if value <= 0:
                    continue
                h = value / scale * height
                y = top + height - (base + value) / scale * height
                out.append(
                    f'<rect class="c-{escape(line.css)}" x="{left + i * slot + slot * 0.1:.1f}" y="{y:.1f}" '
                    f'width="{max(slot * 0.8, 0.8):.1f}" height="{max(h, 0.5):.1f}">'
                    f"<title>{escape(label)} · {escape(line.name)}: {escape(_short(value, unit))}</title></rect>"
                )
                base += value
    else:
        for line in lines:
            dots = [
                (left + (i + 0.5) * slot, top + height - v / scale * height, v)
                for i, v in enumerate(line.values)
                if v is not None
            ]
            if len(dots) > 1:
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _v in dots)
                out.append(f'<polyline class="line c-{escape(line.css)}" points="{path}"/>')
            for (x, y, v), i in zip(dots, [i for i, v in enumerate(line.values) if v is not None], strict=True):
                out.append(
                    f'<circle class="dot c-{escape(line.css)}" cx="{x:.1f}" cy="{y:.1f}" r="2">'
                    f"<title>{escape(labels[i])} · {escape(line.name)}: {escape(_short(v, unit))}</title></circle>"
                )
    # Under the axis, about one label per 100 px of chart, so they never run into each other.
    every = max(1, -(-n // 6))
    for i in range(0, len(labels), every):
        out.append(
            f'<text class="axis" x="{left + (i + 0.5) * slot:.1f}" y="{top + height + 16}" text-anchor="middle">'
            f"{escape(labels[i])}</text>"
        )
    out.append("</svg>")
    return mark_safe("".join(out))  # noqa: S308 - every interpolated label is escaped above


#: The colour of each periodic run's outcome in a run sparkline (scheduler_store.EnqueueRecord.outcome).
RUN_COLOURS = {
    "completed": "c-completed",
    "failed": "c-retry",
    "archived": "c-archived",
    "enqueued": "c-pending",
    "duplicate": "c-scheduled",
    "deleted": "c-waiting",
    "expired": "c-waiting",
}
SPARK_BAR, SPARK_GAP, SPARK_HEIGHT, SPARK_STUB = 5, 2, 20, 4


@dataclass(frozen=True)
class Run:
    outcome: str
    ran: float | None  # seconds, None until an attempt ended
    label: str  # the bar's tooltip


def run_sparkline(runs: Sequence[Run], *, title: str) -> SafeString:
    """Periodic runs as a sparkline, oldest left: a bar per run coloured by its outcome, as tall as it ran next to
    the longest of them (a stub for a run that has not run, or ran no measurable time)."""
    longest = max((r.ran for r in runs if r.ran), default=0.0)
    bars = []
    for n, run in enumerate(runs):
        rise = (SPARK_HEIGHT - SPARK_STUB) * (run.ran / longest) if run.ran and longest else 0.0
        height = SPARK_STUB + rise
        bars.append(
            f'<rect class="{RUN_COLOURS.get(run.outcome, "c-waiting")}" x="{n * (SPARK_BAR + SPARK_GAP)}" '
            f'y="{SPARK_HEIGHT - height:.1f}" width="{SPARK_BAR}" height="{height:.1f}">'
            f"<title>{escape(run.label)}</title></rect>"
        )
    width = max(1, len(runs) * (SPARK_BAR + SPARK_GAP) - SPARK_GAP)
    return mark_safe(  # noqa: S308 - every label is escaped above
        f'<svg class="sparkline" viewBox="0 0 {width} {SPARK_HEIGHT}" width="{width}" height="{SPARK_HEIGHT}" '
        f'role="img" aria-label="{escape(title)}">{"".join(bars)}</svg>'
    )
