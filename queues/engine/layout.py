"""The version of the Redis key and message layout, stamped in the keyspace as ``<prefix>:layout`` (an integer).

Why a stamp: a process of an older release that meets keys written in a newer layout would misread them and
write them back in its own, corrupting both. So the client (before its first request), the worker (before
it starts, then on every heartbeat) and the inspector (before an operator's action, reading only) read the stamp,
and refuse any layout but their own with ``LayoutVersionError``; ``python manage.py tasks migrate-keys`` moves a
keyspace from one layout to the next (see ``migration``). The first client or worker on an empty keyspace writes
the stamp.

Keys written before the stamp existed are layout 1 (``UNSTAMPED_LAYOUT``), which is today's layout, so an
unstamped keyspace is stamped on first use. Once the layout changes, an unstamped keyspace that holds our keys
is refused and left to migrate-keys: stamping it with the new version would claim a conversion nobody made.
"""

from __future__ import annotations

from .errors import LayoutVersionError
from .keys import Keys
from .quoting import shown
from .sans_io import Batch, Command, Flow

#: The layout this code reads and writes. Bump it together with a step in ``migration.STEPS``.
LAYOUT_VERSION = 1
#: The layout of a keyspace written before the stamp existed.
UNSTAMPED_LAYOUT = 1


def parse_stamp(raw: bytes | str | None) -> int | None:
    """The stamped version, None when unstamped. A stamp that is not a positive integer is refused: guessing
    would defeat the purpose."""
    if raw is None:
        return None
    text = raw.decode("ascii", "replace") if isinstance(raw, bytes) else raw
    if not text.isdigit() or int(text) < 1:
        raise LayoutVersionError(
            f"the key layout stamp {shown(text)} is not a version number; set it right by hand",
            found=0,
            expected=LAYOUT_VERSION,
        )
    return int(text)


def mismatch(found: int, expected: int, op: str) -> LayoutVersionError:
    """The error for a keyspace at layout ``found`` met by code that reads and writes ``expected``."""
    if found > expected:
        advice = "upgrade this process (nothing was written)"
    else:
        advice = "run `python manage.py tasks migrate-keys` with the newer release first (nothing was written)"
    return LayoutVersionError(
        f"the Redis keyspace has key layout {found}, but this taskq reads and writes layout {expected}: {advice}",
        found=found,
        expected=expected,
        op=op,
    )


def check_flow(keys: Keys, op: str, expected: int = LAYOUT_VERSION, stamp: bool = True) -> Flow:
    """Read the stamp, stamp an empty keyspace with ``expected``, and raise LayoutVersionError unless the keyspace
    is at ``expected``. Returns the version. ``expected`` is a parameter so tests can play a newer release.

    With ``stamp=False`` nothing is written: an unstamped keyspace that is not refused passes as it is (the
    inspector's check: an operator's action is no reason to claim a keyspace, and leaves it as it was)."""
    found = parse_stamp((yield Command("get", (keys.layout,))))
    if found is None:
        if expected != UNSTAMPED_LAYOUT and (yield Command("exists", (keys.queues,))):
            raise mismatch(UNSTAMPED_LAYOUT, expected, op)
        if not stamp:
            return expected
        # SET NX in the same MULTI as the read back: when two processes stamp at once, both read the winner's.
        _, raw = yield Batch([Command("set", (keys.layout, expected), {"nx": True}), Command("get", (keys.layout,))])
        found = parse_stamp(raw)
    if found != expected:
        raise mismatch(found or 0, expected, op)
    return found
