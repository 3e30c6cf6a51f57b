"""Names as single URL path segments, the one scheme of the console's URLs and the HTTP API's.

Queue names, task ids and task types may hold any character the engine accepts, and a path segment cannot carry
all of them as they are:

* ``/`` ends the segment, and ``%2F`` does not help: servers decode it before routing. So ``/`` is written ``~2F``,
  and ``~`` itself ``~7E``.
* A segment that is exactly ``.`` or ``..`` is a step of the path: browsers and clients remove it (``%2E`` too)
  before the request leaves, so ``/queues/../`` reaches the dashboard. So a segment that is only dots is written
  with ``~2E`` per dot (``~2E~2E``); a dot inside a longer name stays a dot.

``~2E`` reads as ``.`` anywhere in a segment. Every other character is left to percent-encoding.
"""

from __future__ import annotations

import re

_ESCAPES = {"7E": "~", "2F": "/", "2E": "."}
_ESCAPE = re.compile(r"~(7E|2F|2E)")
_DOT_SEGMENTS = frozenset({".", ".."})


def escape_segment(value: str) -> str:
    """``value`` written as one path segment: ``~`` as ``~7E``, ``/`` as ``~2F``, and ``.`` or ``..`` as
    ``~2E`` per dot."""
    if value in _DOT_SEGMENTS:
        return "~2E" * len(value)
    return value.replace("~", "~7E").replace("/", "~2F")


def unescape_segment(value: str) -> str:
    """The name a segment written by ``escape_segment`` holds. Raises ValueError for a ``~`` that starts none of
    the escapes."""
    if "~" in _ESCAPE.sub("", value):
        raise ValueError("a '~' in a path segment must be '~7E' ('~2F' is '/', '~2E' is '.')")
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(1)], value)
