"""How the ``Inspector`` facade forwards to its parts: each of its methods is a ``Forward`` that names the part's
method and the facade's attribute holding the part, typed as the part's method is (without ``self``, and for an
action without the actor the facade hands it). One line per method; the signature and docstring are written once,
on the part.

``inspector.queue_info`` is the method of that name of the inspector's part, looked up on the part (so a part for
another key layout, asynq's, serves the same facade method); ``Inspector.queue_info(inspector, q)`` calls it the
same way, as a method of the class would.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, cast, overload

P = ParamSpec("P")
R = TypeVar("R")


class Forward(Generic[P, R]):
    """A method of the facade that is ``method`` of the part in attribute ``part``; with ``acting``, the facade's
    ``actor`` is handed to it first (the actor its action records)."""

    def __init__(self, method: Callable[..., R], part: str, acting: bool) -> None:
        self.method = method
        self.part = part
        self.acting = acting
        self.__doc__ = method.__doc__
        self.__name__ = method.__name__
        # What ``inspect.signature(Inspector.x)`` shows: the part's method as the facade takes it (``self``, then
        # the arguments after the part's own ``self`` and, for an action, the actor).
        own, *rest = inspect.signature(method).parameters.values()
        self.__signature__ = inspect.Signature([own, *rest[1 if acting else 0 :]])

    @overload
    def __get__(self, facade: None, owner: type) -> Self: ...
    @overload
    def __get__(self, facade: object, owner: type) -> Callable[P, R]: ...
    def __get__(self, facade: object | None, owner: type) -> Self | Callable[P, R]:
        if facade is None:
            return self
        return self._bound(facade)

    def __call__(self, facade: object, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._bound(facade)(*args, **kwargs)

    def _bound(self, facade: Any) -> Callable[P, R]:
        method = getattr(getattr(facade, self.part), self.__name__)
        if self.acting:
            return partial(method, facade.actor)
        return cast("Callable[P, R]", method)

    def __repr__(self) -> str:
        return f"<forward to {self.part}.{self.__name__}>"


def forward(method: Callable[Concatenate[Any, P], R], part: str) -> Forward[P, R]:
    """The facade's method that is the part's ``method`` as it is."""
    return Forward(method, part, acting=False)


def acting(method: Callable[Concatenate[Any, str, P], R], part: str) -> Forward[P, R]:
    """The facade's method that is the part's ``method`` (an action), handed the facade's actor first."""
    return Forward(method, part, acting=True)
