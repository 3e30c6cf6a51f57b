"""What a process's producers use when they name nothing: the Redis (URL and key prefix) a ``Client()`` or
``AsyncClient()`` built without a URL connects to, and the client ``Handler.enqueue`` uses when given none.

The Redis is, first to last:

1. the process default registered with ``register`` (``taskq.queues.engine.configure`` registers it, and the Django
   app calls that at start-up with ``settings.REDIS_URL`` and ``settings.TASKS_KEY_PREFIX``, so a bare
   ``Client()`` in ``manage.py shell`` or a view writes where that process's worker command and console read);
2. the ``REDIS_URL`` and ``TASKS_KEY_PREFIX`` environment variables (unset or empty: not given, as in
   ``TaskqSettings.from_env``);
3. ``redis://127.0.0.1:6379/0`` and the prefix ``tq``.

The engine imports no Django, so Django tells it (1) rather than the engine asking Django. Without (1) and (2), a
bare ``Client()`` in a shell whose ``REDIS_URL`` names database 4 would write to database 0, where the console,
reading database 4, finds nothing.

The default client lives here too, not in ``client``: ``handlers`` needs it for ``Handler.enqueue`` and ``client``
imports ``handlers``, so a slot that both import keeps the two out of an import cycle. ``client`` installs the
function that builds the client on first use (``install_default_client``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .keys import DEFAULT_PREFIX
from .message import TaskInfo
from .settings import TaskqSettings


@dataclass(frozen=True)
class Registered:
    redis_url: str
    prefix: str


_registered: Registered | None = None


def register(redis_url: str, prefix: str = DEFAULT_PREFIX) -> None:
    """Make ``redis_url`` and ``prefix`` this process's default Redis (the Django app does, from its settings)."""
    global _registered
    _registered = Registered(redis_url, prefix)


def unregister() -> None:
    """Forget the registered default: the environment decides again."""
    global _registered
    _registered = None


#: The settings this module answers for, and so the only environment variables it reads.
_OWN = ("REDIS_URL", "TASKS_KEY_PREFIX")


def _environment() -> TaskqSettings:
    # Only this module's own variables: a malformed TASKS_* setting that a client never uses must not stop one from
    # being built (the worker and the console report those at their start).
    return TaskqSettings.from_env({name: os.environ[name] for name in _OWN if name in os.environ})


def redis_url() -> str:
    """The URL a client given none connects to (see the module docstring for the order)."""
    if _registered is not None:
        return _registered.redis_url
    return _environment().redis_url


def key_prefix() -> str:
    """The key prefix a client given none uses."""
    if _registered is not None:
        return _registered.prefix
    return _environment().key_prefix


class Enqueuer(Protocol):
    """What ``Handler.enqueue`` needs of a client: ``Client`` is one."""

    def enqueue(self, type: str, payload: Any = b"", **options: Any) -> TaskInfo: ...


_client: Enqueuer | None = None
_build: Callable[[], Enqueuer] | None = None
_deferred: Callable[[], Enqueuer] | None = None
_client_lock = threading.Lock()


def install_default_client(build: Callable[[], Enqueuer]) -> None:
    """How the default client is built when none was set (``client`` installs it when it loads)."""
    global _build
    _build = build


def set_default_client(client: Enqueuer) -> None:
    global _client, _deferred
    with _client_lock:
        _client, _deferred = client, None


def defer_default_client(build: Callable[[], Enqueuer]) -> None:
    """Forget the default client and have ``build`` make the next one, on first use rather than now: the Django
    app registers this at start-up, so a process whose settings name a malformed Redis URL still starts (its
    system checks say what is wrong) and only its first enqueue meets the error."""
    global _client, _deferred
    with _client_lock:
        _client, _deferred = None, build


def default_enqueuer() -> Enqueuer:
    """The default client: the one set, or one built on first use (by the deferred builder, if one is
    registered, else by the one ``client`` installs)."""
    global _client
    with _client_lock:
        if _client is None:
            build = _deferred or _build
            if build is None:  # pragma: no cover - taskq.queues.engine always loads client with handlers
                raise RuntimeError("no default client: pass client=, or import taskq.queues.engine.client")
            _client = build()
        return _client
