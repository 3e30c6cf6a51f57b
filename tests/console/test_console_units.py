"""The console's pure helpers: payload rendering, charts, URL segments, duration formatting."""

from __future__ import annotations

import re
import zlib

import pytest

from taskq.console.charts import NARROW, WIDE, Bar, Line, grouped_columns, stable_colours, stacked_bars, time_chart
from taskq.console.converters import QueueNameConverter, TaskIdConverter, escape_segment, unescape_segment
from taskq.console.templatetags.console_tags import duration
from taskq.queues.rendering import PREVIEW_CHARS, preview, render_bytes


def test_render_json_pretty():
    rendered = render_bytes(b'{"a":[1,2],"b":"\xc3\xa9"}')
    assert rendered.kind == "json" and '"b": "é"' in rendered.text and not rendered.truncated


def test_render_text_binary_and_empty():
    assert render_bytes(b"plain words").kind == "text"
    assert render_bytes(b"").kind == "empty" and render_bytes(None).kind == "empty"
    binary = render_bytes(bytes(range(40)))
    assert binary.kind == "hex" and binary.text.startswith("00000000  00 01 02")


def test_render_truncates_unless_full():
    data = ("y" * (PREVIEW_CHARS * 3)).encode()
    short, full = render_bytes(data), render_bytes(data, full=True)
    assert short.truncated and len(short.text) == PREVIEW_CHARS
    assert not full.truncated and len(full.text) == len(data)
    assert render_bytes(b"\x00" * 100_000).truncated


def test_preview_is_one_line():
    assert preview(b'{"to":\n "ada"}') == '{"to": "ada"}'
    assert len(preview(b"z" * 1000)) == 80
    assert preview(b"\x00\x01") == "00 01"
    assert preview("é".encode() * 400).startswith("éé")  # a character cut at the slice end is still text


def test_charts_escape_labels():
    svg = stacked_bars([Bar("<script>", {"pending": 3}, "/queues/x/")], ["pending"], title="t<")
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "t&lt;" in svg
    columns = grouped_columns([Bar("11-22", {"processed": 5, "failed": 1})], ["processed", "failed"], title="h")
    assert columns.count("<rect") == 4  # two columns in each of the two drawings
    assert "<svg" in grouped_columns([], ["processed"], title="empty")


def test_each_chart_is_drawn_wide_and_narrow_and_its_legend_wraps_inside_the_drawing():
    lines = [Line(f"queue-with-a-long-name-{n}", [n, None, 2], f"q{n}") for n in range(6)] + [Line("", [1, 1, 1], "q7")]
    svg = str(time_chart(["10:00", "10:01", "10:02"], lines, title="t", stacked=False))
    assert svg.startswith('<div class="chart-fit">') and svg.count("<svg") == 2
    for fit, width in (("wide", WIDE), ("narrow", NARROW)):
        drawing = svg.split(f'data-fit="{fit}"', 1)[1].split("</svg>", 1)[0]
        assert f'viewBox="0 0 {width} ' in drawing
        legend = re.findall(r'<text class="axis legend" x="(\d+)" y="(\d+)">([^<]*)</text>', drawing)
        assert len(legend) == 7 and legend[-1][2] == "(none)"  # an unnamed series is named, not a bare swatch
        assert all(int(x) + 7 * len(name) <= width for x, _y, name in legend)  # nothing runs off the right edge
        assert len({y for _x, y, _n in legend}) > 1  # it wrapped


def test_a_series_colour_follows_its_name_not_its_rank():
    names = ["critical", "default", "low", "emails", "reports", "q007", "q008", "billing"]
    colours = stable_colours(names)
    assert stable_colours(list(reversed(names))) == colours  # the busiest order changed: the colours did not
    assert sorted(colours.values()) == [f"q{n}" for n in range(8)]  # and no two of them share one
    assert stable_colours(["low"]) == {"low": f"q{zlib.crc32(b'low') % 8}"}  # the slot its name asks for


@pytest.mark.parametrize(
    "name", ["plain", "a/b", "til~de", "~2F", "~7E/~", "日本", ".", "..", "...", "a.b", "~2E", "./"]
)
def test_segments_round_trip(name):
    escaped = escape_segment(name)
    assert "/" not in escaped and escaped not in (".", "..") and unescape_segment(escaped) == name


def test_dot_segments_are_escaped_and_dots_elsewhere_are_not():
    assert (escape_segment(".."), escape_segment("."), escape_segment("a.b")) == ("~2E~2E", "~2E", "a.b")
    assert unescape_segment("a~2Eb") == "a.b"  # ~2E reads as a dot anywhere


@pytest.mark.parametrize("segment", ["a~b", "~", "~2f", "~2e"])
def test_stray_tilde_is_refused(segment):
    with pytest.raises(ValueError):
        unescape_segment(segment)


def test_converters_apply_the_engines_rules():
    with pytest.raises(ValueError):
        QueueNameConverter().to_python("{x}")
    with pytest.raises(ValueError):
        TaskIdConverter().to_python("x" * 129)
    assert TaskIdConverter().to_python("a~2Fb") == "a/b"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "—"), (1.25, "1.2 s"), (75, "1m 15s"), (3725, "1h 2m"), (90000, "1d 1h"), (-5, "-5.0 s"), ("x", "—")],
)
def test_duration(seconds, text):
    assert duration(seconds) == text


def test_age_is_how_long_ago_as_a_duration():
    from datetime import UTC, datetime, timedelta

    from taskq.console.templatetags.console_tags import age

    assert age(datetime.now(UTC) - timedelta(minutes=3, seconds=5)) in ("3m 5s", "3m 6s") and age(None) == "—"
