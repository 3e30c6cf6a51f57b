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
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from queues.engine.export_store import StreamEntry, parse_stream_id

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
        pq.write_table(pa.Table.from_pydict(columns, schema=SCHEMA), temp, compression="zstd")
        with open(temp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temp, final)
        _fsync_dir(folder)
        written.append(final)
    return written


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


def task_events(directory: str | Path, queue: str, task_id: str, since: str = "") -> list[dict[str, Any]]:
    """One task's exported events, oldest first, from the files of ``since`` (a UTC date) on: the part of its
    history its queue's stream no longer holds (the console's task timeline)."""
    import pyarrow.dataset as ds

    files = sorted(p for p in Path(directory).glob("date=*/*.parquet") if p.parent.name >= f"date={since}")
    if not files:
        return []
    dataset = ds.dataset([str(p) for p in files], schema=SCHEMA, format="parquet")
    table = dataset.to_table(filter=(ds.field("queue") == queue) & (ds.field("task_id") == task_id))
    rows = table.to_pylist()
    return sorted(rows, key=lambda row: (row["at_ms"], row["stream_ms"], row["stream_seq"]))
