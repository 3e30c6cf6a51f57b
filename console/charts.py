"""Inline SVG charts, drawn server-side: no JavaScript library and nothing fetched from elsewhere.

Colours come from CSS classes (``.c-<series>``) so both themes restyle them. Every label is escaped here, since
the markup is handed to templates as safe.

An SVG's text scales with its drawing: one drawn for a desktop card read about 5 px on a 375 px phone. So each
chart is drawn twice, for two widths (``WIDE`` and ``NARROW`` user units across, with fewer labels in the
narrow one), inside a ``.chart-fit`` box; a CSS container query (console.css) shows the narrow drawing when the
box is under 460 px wide. Either drawing is then shown at 0.88x to 1.4x, so its 12 px text stays at 10.5 px or more.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe

#: The states the size counts (completed excluded), in the queue page's tab order.
SIZE_SERIES = ("active", "pending", "aggregating", "waiting", "scheduled", "retry", "archived")


#: Widths of the two drawings, in user units (at 1:1, CSS px).
WIDE, NARROW = 520, 330

#: Width of one character of an axis figure at 12 px, in user units (measured: "500 ms" takes 44.6), rounded up.
AXIS_CHAR_WIDTH = 7.5


def _axis_margin(ticks: Sequence[str], least: int) -> int:
    """The left margin that holds a vertical axis's figures (drawn ending 6 units left of the axis): at least
    ``least``, more for a wide figure, which was cut at the drawing's edge ("500 ms" read "00 ms")."""
    return max(least, 8 + round(AXIS_CHAR_WIDTH * max(len(tick) for tick in ticks)))


def _fitted(draw: Callable[[bool], str]) -> SafeString:
    """Both drawings of a chart (``draw(narrow)``), for the container query to pick from."""
    return mark_safe(f'<div class="chart-fit">{draw(False)}{draw(True)}</div>')  # draw() escapes


def _svg_open(css: str, width: int, height: float, role: str, title: str, narrow: bool) -> str:
    return (
        f'<svg class="{css}" data-fit="{"narrow" if narrow else "wide"}" viewBox="0 0 {width} {height:.0f}" '
        f'role="{role}" aria-label="{escape(title)}"><title>{escape(title)}</title>'
    )


#: Colour classes of named series (``c-q0`` ... ``c-q7``, console.css).
SERIES_COLOURS = 8


def stable_colours(names: Sequence[str]) -> dict[str, str]:
    """A colour class per name that follows the name, not its rank: a queue keeps its colour while the order of
    the busiest changes. Each name asks for the slot its CRC-32 picks; names taken in sorted order move to the
    next free slot when two ask for one (so the same set of names always gets the same colours)."""
    taken: dict[str, str] = {}
    free = list(range(SERIES_COLOURS))
    for name in sorted(set(names)):
        if not free:
            break
        want = zlib.crc32(name.encode()) % SERIES_COLOURS
        slot = next((s for s in free if s >= want), free[0])
        free.remove(slot)
        taken[name] = f"q{slot}"
    return taken


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
    return _fitted(lambda narrow: _stacked_bars(bars, series, title, narrow))


def _stacked_bars(bars: Sequence[Bar], series: Sequence[str], title: str, narrow: bool) -> str:
    row, top = 26, 8
    label_w, chars = (100, 13) if narrow else (140, 19)  # about 7 units a character at 12 px
    scale_max = _nice_max(max((sum(b.values.get(s, 0) for s in series) for b in bars), default=0))
    # The last figure of the axis is centred on its end: the right margin holds its half ("20,000" ran out).
    right = max(20, 4 + round(AXIS_CHAR_WIDTH * len(f"{scale_max:,}") / 2))
    width = (NARROW if narrow else WIDE) - label_w - right
    height = top + row * max(len(bars), 1) + 24
    # With links on its labels the chart is a group, not an image: an image's content is not interactive.
    role = "group" if any(bar.href for bar in bars) else "img"
    out = [_svg_open("chart", label_w + width + right, height, role, title, narrow)]
    for index, bar in enumerate(bars):
        y = top + index * row
        name = escape(bar.label if len(bar.label) <= chars else bar.label[: chars - 1] + "…")
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
    out.append(_x_axis(label_w, width, top + row * max(len(bars), 1) + 16, scale_max, 2 if narrow else 4))
    out.append("</svg>")
    return "".join(out)


def _x_axis(left: int, width: int, y: int, scale_max: int, steps: int) -> str:
    ticks = []
    for i in range(steps + 1):
        value = scale_max * i // steps
        x = left + width * i / steps
        ticks.append(f'<text class="axis" x="{x:.1f}" y="{y}" text-anchor="middle">{value:,}</text>')
    return "".join(ticks)


def grouped_columns(bars: Sequence[Bar], series: Sequence[str], *, title: str) -> SafeString:
    """Vertical columns per label, side by side per series (processed and failed per day)."""
    return _fitted(lambda narrow: _grouped_columns(bars, series, title, narrow))


def _grouped_columns(bars: Sequence[Bar], series: Sequence[str], title: str, narrow: bool) -> str:
    height, bottom = (150, 28) if narrow else (180, 28)
    scale_max = _nice_max(max((v for b in bars for v in b.values.values()), default=0))
    ticks = [_short(scale_max * i // 4, "") for i in range(5)]
    left = _axis_margin(ticks, 40 if narrow else 48)
    width = (NARROW if narrow else WIDE) - left - 10
    slot = width / max(len(bars), 1)
    col = max(slot * 0.8 / len(series), 1.0)
    out = [_svg_open("chart", left + width + 10, height + bottom + 10, "img", title, narrow)]
    for i, tick in enumerate(ticks):
        y = 10 + height - height * i / 4
        out.append(
            f'<line class="grid" x1="{left}" x2="{left + width}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>'
        )
    label_every = max(1, -(-len(bars) // (5 if narrow else 10)))
    for index, bar in enumerate(bars):
        x0 = left + index * slot + slot * 0.1
        for k, name in enumerate(series):
            value = bar.values.get(name, 0)
            h = value / scale_max * height
            out.append(
                f'<rect class="c-{name}" x="{x0 + k * col:.1f}" y="{10 + height - h:.1f}" width="{col:.1f}" '
                f'height="{h:.1f}"><title>{escape(bar.label)} · {name}: {value:,}</title></rect>'
            )
        if index % label_every == 0:
            out.append(
                f'<text class="axis" x="{left + (index + 0.5) * slot:.1f}" y="{height + bottom}" '
                f'text-anchor="middle">{escape(bar.label)}</text>'
            )
    out.append("</svg>")
    return "".join(out)


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
    overlap); every column or dot has a hover title with its exact figure. The legend is drawn above, in as many
    rows as it takes to stay inside the drawing."""
    return _fitted(lambda narrow: _time_chart(labels, lines, title, stacked, unit, narrow))


def _legend(lines: Sequence[Line], left: int, right: int) -> tuple[list[str], int]:
    """The legend's swatches and names, wrapped at ``right``; and the height it takes."""
    out, x, y = [], float(left), 4
    for line in lines:
        name = line.name or "(none)"  # an unnamed series still gets a visible entry, not a bare swatch
        size = 24 + 7 * len(name)
        if x > left and x + size - 10 > right:
            x, y = float(left), y + 16
        out.append(
            f'<rect class="c-{escape(line.css)}" x="{x:.0f}" y="{y}" width="10" height="10"/>'
            f'<text class="axis legend" x="{x + 14:.0f}" y="{y + 9}">{escape(name)}</text>'
        )
        x += size
    return out, y + 20


def _time_chart(
    labels: Sequence[str], lines: Sequence[Line], title: str, stacked: bool, unit: str, narrow: bool
) -> str:
    height, bottom = (130, 22) if narrow else (150, 22)
    if stacked:
        peak = max((sum(line.values[i] or 0 for line in lines) for i in range(len(labels))), default=0)
    else:
        peak = max((v for line in lines for v in line.values if v is not None), default=0)
    scale = _nice_max(int(peak) + (0 if peak == int(peak) else 1))
    ticks = [_short(scale * i / 4, unit) for i in range(5)]
    left = _axis_margin(ticks, 44 if narrow else 56)
    width = (NARROW if narrow else WIDE) - left - 10
    n = max(len(labels), 1)
    slot = width / n
    legend, top = _legend(lines, left, left + width)
    out = [_svg_open("chart time", left + width + 10, top + height + bottom + 4, "img", title, narrow), *legend]
    for i, tick in enumerate(ticks):
        y = top + height - height * i / 4
        out.append(
            f'<line class="grid" x1="{left}" x2="{left + width}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(tick)}</text>'
        )
    out += _columns(labels, lines, left, top, height, slot, scale, unit) if stacked else []
    out += [] if stacked else _lines(labels, lines, left, top, height, slot, scale, unit)
    # Under the axis, about one label per 90 px of chart, so they never run into each other.
    every = max(1, -(-n // (3 if narrow else 5)))
    for i in range(0, len(labels), every):
        out.append(
            f'<text class="axis" x="{left + (i + 0.5) * slot:.1f}" y="{top + height + 16}" text-anchor="middle">'
            f"{escape(labels[i])}</text>"
        )
    out.append("</svg>")
    return "".join(out)


def _columns(
    labels: Sequence[str], lines: Sequence[Line], left: int, top: int, height: int, slot: float, scale: int, unit: str
) -> list[str]:
    out = []
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
    return out


def _lines(
    labels: Sequence[str], lines: Sequence[Line], left: int, top: int, height: int, slot: float, scale: int, unit: str
) -> list[str]:
    out = []
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
    return out


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
    return mark_safe(  # every label is escaped above
        f'<svg class="sparkline" viewBox="0 0 {width} {SPARK_HEIGHT}" width="{width}" height="{SPARK_HEIGHT}" '
        f'role="img" aria-label="{escape(title)}">{"".join(bars)}</svg>'
    )
