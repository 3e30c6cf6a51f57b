"""Moving a keyspace from one key layout to the next: what ``python manage.py tasks migrate-keys`` runs.

A step converts layout N to N + 1 and is registered in ``STEPS`` under N. Today's layout is the first, so
there are no steps yet; the runner already stamps a keyspace written before the stamp existed (layout 1).

Steps run with every worker stopped (see docs/operations.md, "Key layout and rolling upgrades"), one after the
other, each followed by its new stamp. A step must be idempotent: when a run dies half-way, the stamp still names
the old layout and the next run repeats the step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .broker import Broker
from .errors import EngineError
from .layout import LAYOUT_VERSION, UNSTAMPED_LAYOUT, mismatch, parse_stamp

OP = "migrate-keys"
SCAN_COUNT = 1000  # keys one SCAN step looks at


@dataclass(frozen=True)
class Step:
    """Converts layout ``to - 1`` into ``to``. ``run(broker, dry_run)`` returns one line per change it made (or,
    with ``dry_run``, would make) and must change nothing when ``dry_run`` is true."""

    to: int
    description: str
    run: Callable[[Broker, bool], list[str]]


#: Layout N -> the step that converts it to N + 1.
STEPS: dict[int, Step] = {}


@dataclass
class MigrationReport:
    """What a run found and did. ``before`` is None for an unstamped keyspace."""

    before: int | None
    after: int
    dry_run: bool
    changes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def doc(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "dry_run": self.dry_run, "changes": self.changes}


def migrate_keys(
    broker: Broker, *, dry_run: bool = False, target: int = LAYOUT_VERSION, steps: dict[int, Step] | None = None
) -> MigrationReport:
    """Bring the keyspace to layout ``target``; with ``dry_run`` only report what would change. Running it again
    changes nothing. Raises LayoutVersionError for a keyspace newer than ``target``."""
    steps = STEPS if steps is None else steps
    before = parse_stamp(broker.send(OP, "get", broker.keys.layout))
    report = MigrationReport(before, before or UNSTAMPED_LAYOUT, dry_run)
    if before is None:
        what = "taskq keys from before the stamp" if _holds_keys(broker) else "no taskq keys"
        report.changes.append(f"stamp layout {UNSTAMPED_LAYOUT} (the keyspace holds {what})")
        if not dry_run:
            broker.send(OP, "set", broker.keys.layout, UNSTAMPED_LAYOUT, nx=True)
    if report.after > target:
        raise mismatch(report.after, target, OP)
    while report.after < target:
        step = steps.get(report.after)
        if step is None:
            raise EngineError(f"no migration from key layout {report.after} to {report.after + 1}", op=OP)
        report.changes.append(f"layout {report.after} -> {step.to}: {step.description}")
        report.changes.extend(f"  {line}" for line in step.run(broker, dry_run))
        if not dry_run:
            broker.send(OP, "set", broker.keys.layout, step.to)
        report.after = step.to
    return report


def _holds_keys(broker: Broker) -> bool:
    """Whether any key under our prefix exists (one SCAN pass stops at the first)."""
    pattern = f"{broker.keys.prefix}:*"
    if broker.cluster:
        return _cluster_holds_keys(broker, pattern)
    cursor = 0
    while True:
        cursor, found = broker.send(OP, "scan", cursor, match=pattern, count=SCAN_COUNT)
        if found:
            return True
        if not int(cursor):
            return False


def _cluster_holds_keys(broker: Broker, pattern: str) -> bool:
    """``_holds_keys`` on a Redis Cluster: the first SCAN asks every primary, and answers each one's cursor by
    node name; each primary whose cursor is not 0 is then asked again, on its own, until one finds a key."""
    cursors, found = broker.send(OP, "scan", 0, match=pattern, count=SCAN_COUNT)
    while not found:
        cursors = {name: cursor for name, cursor in cursors.items() if int(cursor)}
        if not cursors:
            return False
        for name, cursor in list(cursors.items()):
            node = broker.send(OP, "get_node", node_name=name)
            answered, keys = broker.send(OP, "scan", cursor, match=pattern, count=SCAN_COUNT, target_nodes=node)
            cursors[name] = answered[name]
            found += keys
    return True
