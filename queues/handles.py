"""The one registry of engine handles a process shares: the clients, inspectors and remote consumers the Django
side builds from its settings (``taskq.queues.conf``, the HTTP API). Each is made once per distinct configuration and
reused, so every request does not open a new connection pool.

Tests change settings (``REDIS_URL``, the key prefix...) between tests and call ``reset()`` so the next lookup
builds handles for the new ones.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

#: Distinct configurations kept at once (the least recently used is forgotten past it): one per URL and prefix (an
#: inspector acting for an operator is a view of its configuration's, not a handle of its own), and tests change
#: them often, so the number must stay bounded.
MAX_HANDLES = 32

_handles: OrderedDict[Hashable, Any] = OrderedDict()
_lock = threading.Lock()


def shared(key: Hashable, make: Callable[[], T]) -> T:
    """The handle registered under ``key``, made by ``make()`` on first use."""
    with _lock:
        handle = _handles.get(key)
        if handle is None:
            handle = _handles[key] = make()
            while len(_handles) > MAX_HANDLES:
                _handles.popitem(last=False)
        else:
            _handles.move_to_end(key)
        return handle


def reset() -> None:
    """Forget every handle; the next lookups build new ones from the settings of that moment."""
    with _lock:
        _handles.clear()
