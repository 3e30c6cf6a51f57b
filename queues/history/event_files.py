"""The exported event files: one Parquet file per exporter batch and UTC date, under ``<dir>/date=YYYY-MM-DD/``
(Hive-style partitions that Spark and pyarrow both read).

A batch's file name is made of the queue's digest and the stream id of the batch's first event. A batch always
starts right after the committed offset, so an exporter that crashed after writing and before committing writes
the very same names again on restart, replacing its own files instead of adding duplicates. Files are written
under a hidden temporary name (Spark and pyarrow skip names starting with ``.``), synced, then renamed.
"""

from __future__ import annotations

import hashlib
import os
from bisect import bisect_left, bisect_right
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from taskq.queues.engine import extras
from taskq.queues.engine.export_store import StreamEntry, parse_stream_id

try:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
except ImportError:
    extras.require("spark", "The event files (TASKS_EVENT_EXPORT, Parquet)", op="history.event_files")
    raise

SCHEMA = pa.schema(
    [
        ("stream_id", pa.string()),
        ("stream_ms", pa.int64()),
        ("stream_seq", pa.int64()),
        ("queue", pa.string()),
        ("task_id", pa.string()),
        ("type", pa.string()),
        ("from_state", pa.string()),
        ("to_state", pa.string()),
        ("at_ms", pa.int64()),
        ("worker", pa.string()),
        ("error", pa.string()),
        ("lease", pa.string()),  # the attempt's lease token, on a start (files written before it have none)
        ("started_ms", pa.int64()),  # on an attempt's end: when its handler started (ms)
    ]
)


#: Rows of a file are sorted by task, and stored in row groups of this many, so each group's ``task_id`` min/max
#: statistics cover a narrow range of ids: the task page reads one group per file, not the file (``task_events``).
#: Readers that want stream order sort by ``stream_ms``, ``stream_seq`` (the analytics job orders by ``at_ms``).
SORT_KEYS = [("task_id", "ascending"), ("stream_ms", "ascending"), ("stream_seq", "ascending")]
ROW_GROUP_ROWS = 5_000


def utc_date(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def _at(entry: StreamEntry, stream_ms: int) -> int:
    try:
        return int(entry.fields.get("at", ""))
    except ValueError:
        return stream_ms


def rows_by_date(queue: str, entries: list[StreamEntry]) -> dict[str, dict[str, list[Any]]]:
    """Columns of the entries, split by the UTC date of each event's time."""
    out: dict[str, dict[str, list[Any]]] = defaultdict(lambda: {name: [] for name in SCHEMA.names})
    for entry in entries:
        ms, seq = parse_stream_id(entry.stream_id)
        at = _at(entry, ms)
        f = entry.fields
        cols = out[utc_date(at)]
        for name, value in (
            ("stream_id", entry.stream_id),
            ("stream_ms", ms),
            ("stream_seq", seq),
            ("queue", queue),
            ("task_id", f.get("id", "")),
            ("type", f.get("type", "")),
            ("from_state", f.get("from", "")),
            ("to_state", f.get("to", "")),
            ("at_ms", at),
            ("worker", f.get("worker")),
            ("error", f.get("error")),
            ("lease", f.get("lease")),
            ("started_ms", int(f["started"]) if f.get("started", "").isdigit() else None),
        ):
            cols[name].append(value)
    return out


def batch_file_name(queue: str, first_stream_id: str) -> str:
    digest = hashlib.sha1(queue.encode()).hexdigest()[:16]
    return f"{digest}-{first_stream_id}.parquet"


def write_batch(directory: str | Path, queue: str, entries: list[StreamEntry]) -> list[Path]:
    """Store one batch of a queue's events durably; returns the files written (one per UTC date)."""
    if not entries:
        return []
    root = Path(directory)
    name = batch_file_name(queue, entries[0].stream_id)
    written = []
    for date, columns in sorted(rows_by_date(queue, entries).items()):
        folder = root / f"date={date}"
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / name
        temp = folder / f".{name}.tmp"
        write_table(pa.Table.from_pydict(columns, schema=SCHEMA), temp)
        with open(temp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temp, final)
        _fsync_dir(folder)
        written.append(final)
    return written


def write_table(table: pa.Table, path: str | Path) -> None:
    """Write events (a table of ``SCHEMA``) to one Parquet file in the export's layout: sorted by ``SORT_KEYS``,
    zstd, row groups of ``ROW_GROUP_ROWS`` (not synced: ``write_batch`` does that; bench/pipeline.py writes its
    synthetic events through here so that the analytics job reads what an export holds)."""
    pq.write_table(table.sort_by(SORT_KEYS), path, compression="zstd", row_group_size=ROW_GROUP_ROWS)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_events(directory: str | Path) -> pa.Table:
    """Every exported event (for tests and small tools; the analytics job reads with Spark)."""
    root = Path(directory)
    files = sorted(p for p in root.glob("date=*/*.parquet"))
    if not files:
        return SCHEMA.empty_table()
    return pa.concat_tables([pq.read_table(p, schema=SCHEMA) for p in files])


#: The columns the task timeline shows, read from each file (older files lack ``lease`` and ``started_ms``).
TIMELINE_COLUMNS = ("stream_id", "stream_ms", "stream_seq", "queue", "task_id", "type", "from_state", "to_state",
                    "at_ms", "worker", "error", "lease", "started_ms")  # fmt: skip


def task_events(
    directory: str | Path, queue: str, task_id: str, window: tuple[int, int] | None = None
) -> list[dict[str, Any]]:
    """One task's exported events, oldest first: the part of its history its queue's stream no longer holds (the
    console's task timeline). ``window`` (epoch ms, ``taskq.queues.engine.timeline.event_window``) is when its events
    happened; without it every file of the queue is read.

    What keeps it from growing with the export: only the queue's own files (their names begin with the queue's
    digest), only the date folders of the window; of those, only the files whose ``at_ms`` range meets the window,
    found by bisection (a queue's files, in the order of their names, hold consecutive stretches of its stream,
    so their event times rise from file to file), which opens about 2 log2(n) footers; in each such file only
    the row groups whose ``at_ms`` and ``task_id`` statistics admit the task, and only the timeline's columns."""
    files = _queue_files(Path(directory), queue, window)
    if window is not None:
        files = _files_meeting(files, window)
    rows: list[dict[str, Any]] = []
    for path in files:
        rows += _task_rows(path, queue, task_id, window)
    return sorted(rows, key=lambda row: (row["at_ms"], row["stream_ms"], row["stream_seq"]))


def _queue_files(root: Path, queue: str, window: tuple[int, int] | None) -> list[Path]:
    """The queue's files, in stream order: by the first stream id of their batch (in their name), then date."""
    first, last = (utc_date(window[0]), utc_date(window[1])) if window else ("", "~")
    prefix = batch_file_name(queue, "")[: -len(".parquet")]
    found = []
    for folder in root.glob("date=*"):
        if first <= folder.name[len("date=") :] <= last:
            found += [(_batch_start(p.name, prefix), folder.name, p) for p in folder.glob(f"{prefix}*.parquet")]
    return [path for *_, path in sorted(found)]


def _batch_start(name: str, prefix: str) -> tuple[int, int]:
    try:
        return parse_stream_id(name[len(prefix) : -len(".parquet")])
    except ValueError:
        return (0, 0)  # not a name the exporter writes: read it, first


def _files_meeting(files: list[Path], window: tuple[int, int]) -> list[Path]:
    """The run of ``files`` whose event times can meet ``window``: from the first whose latest event is not
    before it to the last whose earliest is not after it."""
    spans: dict[int, tuple[int, int]] = {}

    def span(index: int) -> tuple[int, int]:
        if index not in spans:
            spans[index] = _at_span(pq.ParquetFile(files[index]).metadata)
        return spans[index]

    start = bisect_left(range(len(files)), window[0], key=lambda i: span(i)[1])
    end = bisect_right(range(len(files)), window[1], lo=start, key=lambda i: span(i)[0])
    return files[start:end]


def _at_span(meta: pq.FileMetaData) -> tuple[int, int]:
    """The earliest and latest ``at_ms`` of a file, from its row groups' statistics (its whole possible range
    when a row group has none)."""
    lows, highs = [], []
    column = meta.schema.names.index("at_ms")
    for group in range(meta.num_row_groups):
        stats = meta.row_group(group).column(column).statistics
        if stats is None or not stats.has_min_max:
            return (-(2**63), 2**63 - 1)
        lows.append(stats.min)
        highs.append(stats.max)
    return (min(lows, default=0), max(highs, default=0))


def _task_rows(path: Path, queue: str, task_id: str, window: tuple[int, int] | None) -> list[dict[str, Any]]:
    """The task's rows of one file, reading only the row groups whose statistics admit it."""
    parquet = pq.ParquetFile(path)
    names = parquet.schema_arrow.names
    columns = [name for name in TIMELINE_COLUMNS if name in names]
    wanted = {"task_id": task_id, **({"at_ms": window} if window else {})}
    groups = [g for g in range(parquet.num_row_groups) if _admits(parquet.metadata.row_group(g), names, wanted)]
    # The ids alone first: a row group the statistics could not rule out (files from before they were sorted)
    # seldom holds the task, and its other columns are most of its bytes.
    groups = [g for g in groups if pc.any(pc.equal(parquet.read_row_group(g, columns=["task_id"])[0], task_id)).as_py()]
    if not groups:
        return []
    table = parquet.read_row_groups(groups, columns=columns)
    table = table.filter(pc.and_(pc.equal(table["task_id"], task_id), pc.equal(table["queue"], queue)))
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def _admits(group: Any, names: list[str], wanted: dict[str, Any]) -> bool:
    """Whether a row group's min/max statistics allow a row with ``task_id`` (a value) and ``at_ms`` (a range)."""
    for name, value in wanted.items():
        stats = group.column(names.index(name)).statistics
        if stats is None or not stats.has_min_max:
            continue
        low, high = value if isinstance(value, tuple) else (value, value)
        if high < stats.min or low > stats.max:
            return False
    return True
