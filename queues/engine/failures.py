"""What a failed attempt leaves for an operator: its traceback, and the error group it belongs to.

A ``Failure`` is captured where the exception is caught (the worker, or a handler process) and written with the
attempt's retry or archive transition (``lua/retry.lua``, ``lua/archive.lua``), in the same script call:

- the traceback, bounded to ``MAX_TRACEBACK`` characters (the end is kept: it names the raising frame), and with
  the exception messages masked as ``TASKS_REDACT`` masks payloads (``redacted``), goes into the task's hash;
- the failure's *fingerprint* groups identical errors: the exception's class, its message with numbers, hex and
  uuid-like ids masked (``mask_message``), and the innermost frame in the handler's own module. Per queue, each
  group keeps its count, first and last seen, and its latest task (see ``lua/_lib.lua``, ``record_failure``).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import traceback
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

from .redaction import Redaction
from .validation import encodable

MAX_TRACEBACK = 16 * 1024  # characters kept of a traceback: its end
MAX_ERROR_LENGTH = 4096  # characters kept of a last error (class and message)
MAX_LABEL_MESSAGE = 200  # characters kept of a group's masked message
FINGERPRINT_LENGTH = 16  # hex digits
FINGERPRINT = re.compile(rf"[0-9a-f]{{{FINGERPRINT_LENGTH}}}")
CUT = "[... {} characters cut ...]\n"

# Most specific first: a uuid holds hex runs, and hex runs hold digits.
_MASKS = (
    (re.compile(r"\b[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\b"), "<id>"),
    (re.compile(r"\b0[xX][0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b"), "<hex>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
)


def mask_message(message: str) -> str:
    """``message`` with the parts that differ between occurrences of one error masked: uuid-like ids, hex
    numbers and long hex ids (``<id>``, ``<hex>``), and every other number (``<n>``)."""
    for pattern, mask in _MASKS:
        message = pattern.sub(mask, message)
    return message


def bounded(text: str, limit: int = MAX_TRACEBACK) -> str:
    """``text`` cut to at most ``limit`` characters by dropping its start, which says so."""
    if len(text) <= limit:
        return text
    keep = limit - len(CUT.format(len(text)))
    return CUT.format(len(text) - keep) + text[-keep:]


def fingerprint(kind: str, masked: str, frame: str) -> str:
    """The group of a failure: a digest of its exception class, masked message and handler frame."""
    digest = hashlib.sha1(f"{kind}\n{masked}\n{frame}".encode(), usedforsecurity=False)
    return digest.hexdigest()[:FINGERPRINT_LENGTH]


@dataclass(frozen=True)
class Failure:
    """One failed attempt, as captured: the exception's class name and message, the frame that names where in
    the handler it failed (``module:function``, "" when unknown), the formatted traceback (whole: the transition
    that stores it keeps its end, see ``bounded``), and the message part of every exception in its chain
    (``redacted`` masks those inside the traceback)."""

    kind: str
    message: str
    frame: str = ""
    traceback: str = ""
    messages: tuple[str, ...] = ()

    @property
    def error(self) -> str:
        """The task's last error: class and message (see ``taskq.worker.attempt.describe``)."""
        return (f"{self.kind}: {self.message}" if self.message else self.kind)[:MAX_ERROR_LENGTH]

    @property
    def masked(self) -> str:
        return mask_message(self.message)[:MAX_LABEL_MESSAGE]

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.kind, self.masked, self.frame)

    @property
    def label(self) -> str:
        """How the group reads: JSON of the class, the masked message and the frame (see ``ErrorGroup``)."""
        return json.dumps({"kind": self.kind, "message": self.masked, "frame": self.frame}, separators=(",", ":"))

    def redacted(self, redaction: Redaction, task_type: str, payload: bytes) -> Failure:
        """This failure as a person may see it: its messages, inside the traceback too, masked by ``redaction``
        the way the task's payload is (see ``Redaction.mask_text``). Frames are left: they hold code, not data."""
        if not redaction:
            return self
        text = self.traceback
        for part in self.messages:  # "<class>: <message>": a class name holds no ": ", so the first one ends it
            head, colon, message = part.partition(": ")
            if colon:
                text = text.replace(part, head + colon + redaction.mask_text(task_type, payload, message))
        # Patterns match wherever they are: in a source line or a local's repr the traceback quotes, too.
        text = redaction.mask_string(text)
        return replace(
            self,
            message=redaction.mask_text(task_type, payload, self.message),
            traceback=text,
            messages=(),
        )


def capture(exc: BaseException, handler: Any = None) -> Failure:
    """The failure ``exc`` describes; ``handler`` (the handler's function) decides the frame reported."""
    te = traceback.TracebackException.from_exception(exc)
    messages = []
    chained: traceback.TracebackException | None = te
    while chained is not None:
        messages.append("".join(chained.format_exception_only()))
        chained = chained.__cause__ or (None if chained.__suppress_context__ else chained.__context__)
    # Stored, not refused: what UTF-8 cannot encode (a message cut inside an emoji) is replaced, so the failure
    # can still be written (``validation.encodable``).
    return Failure(
        kind=type(exc).__name__,
        message=encodable(str(exc)),
        frame=handler_frame(exc.__traceback__, handler),
        # An exception never raised (a timeout or cancel the worker decided on) has no frames: no traceback.
        # Whole here: redaction must see every message before the cut (``bounded``, when it is written).
        traceback=encodable("".join(te.format())) if exc.__traceback__ is not None else "",
        messages=tuple(encodable(m) for m in messages if m.strip()),
    )


def handler_frame(tb: TracebackType | None, handler: Any = None) -> str:
    """``module:function`` of the innermost frame in the handler's module (the module of ``handler``'s code),
    else of the innermost frame; "" without a traceback.

    A handler that wraps another function (``__wrapped__``, as ``functools.wraps`` sets it) stands for that
    function: its home is the wrapped function's module, and a failure its own code raised after or around the
    call (the Django tasks runner refusing a return value) is the wrapped function's, so the group names the
    user's code, never the wrapper's."""
    func = getattr(handler, "func", handler)  # a Handler, or a plain function
    try:
        target = inspect.unwrap(func) if callable(func) else func
    except ValueError:  # a chain of __wrapped__ that loops: the failure is still recorded, under the handler
        target = func
    code = getattr(target, "__code__", None)
    home = code.co_filename if code is not None else None
    innermost = in_home = None
    for frame, _line in traceback.walk_tb(tb):
        innermost = frame
        if frame.f_code.co_filename == home:
            in_home = frame
    if in_home is None and innermost is not None and target is not func and code is not None:
        return f"{getattr(target, '__module__', '?')}:{code.co_qualname}"
    chosen = in_home or innermost
    if chosen is None:
        return ""
    return f"{chosen.f_globals.get('__name__', '?')}:{chosen.f_code.co_qualname}"
