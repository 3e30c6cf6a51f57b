"""The console's pure helpers: payload rendering, charts, URL segments, duration formatting."""

from __future__ import annotations

import pytest

from console.charts import Bar, grouped_columns, stacked_bars
from console.converters import QueueNameConverter, TaskIdConverter, escape_segment, unescape_segment
from console.rendering import PREVIEW_CHARS, preview, render_bytes
from console.templatetags.console_tags import duration


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
    assert columns.count("<rect") == 2
    assert "<svg" in grouped_columns([], ["processed"], title="empty")


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
