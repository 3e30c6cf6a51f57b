"""The protobuf messages asynq stores in Redis, encoded and decoded without a protobuf library.

asynq (v0.25-0.26) writes proto3 messages (``internal/proto/asynq.proto``): a task's ``msg``, a server's info, a
worker's entry, a scheduler's entries and its enqueue events. Five small messages of strings, bytes, ints, one map
and a ``google.protobuf.Timestamp`` do not warrant a code generator and a runtime dependency, so the wire format
is written here:

- a field is a varint key (``number << 3 | wire type``), then a varint (ints, bools) or a length and bytes
  (strings, bytes, maps, nested messages);
- proto3 leaves out scalars at their zero value; a nested message (a timestamp) is written whenever it is set,
  empty or not;
- Go's ``proto.Marshal`` writes fields in field-number order and map entries in no fixed order; ``encode`` writes
  field-number order and map entries sorted by key, so a message without a map (every task asynq's client
  writes without headers) comes out byte for byte as Go writes it;
- a negative int32 or int64 is a ten-byte varint of its two's complement.

Fields this code does not know (a newer asynq) are kept as they came and written back after the known ones, as
Go does, so a task that passes through taskq loses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Self

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_MASK64 = (1 << 64) - 1


class WireError(ValueError):
    """Bytes that are not a message of the expected kind (cut short, a field of the wrong wire type)."""


def _varint(value: int) -> bytes:
    value &= _MASK64  # negative numbers: their 64-bit two's complement, ten bytes
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise WireError("a varint runs past the end of the message")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _key(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _length_delimited(number: int, data: bytes) -> bytes:
    return _key(number, _LEN) + _varint(len(data)) + data


def _fields(data: bytes) -> list[tuple[int, int, Any, bytes]]:
    """(number, wire type, value, the field's raw bytes) of each field, in order. A LEN value is its bytes."""
    out = []
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = _read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        value: int | bytes
        if wire_type == _VARINT:
            value, pos = _read_varint(data, pos)
        elif wire_type == _LEN:
            size, pos = _read_varint(data, pos)
            if pos + size > len(data):
                raise WireError("a field runs past the end of the message")
            value, pos = data[pos : pos + size], pos + size
        elif wire_type in (_I64, _I32):
            width = 8 if wire_type == _I64 else 4
            if pos + width > len(data):
                raise WireError("a field runs past the end of the message")
            value, pos = int.from_bytes(data[pos : pos + width], "little"), pos + width
        else:
            raise WireError(f"wire type {wire_type} is not one proto3 writes")
        if number == 0:
            raise WireError("field number 0")
        out.append((number, wire_type, value, data[start:pos]))
    return out


# What each field kind is written as, and read back from.
_STRING, _BYTES, _INT32, _INT64, _BOOL, _TIME, _STR_MAP, _INT_MAP, _STRINGS = range(9)


@dataclass(frozen=True)
class Timestamp:
    """``google.protobuf.Timestamp``: seconds and nanoseconds since the Unix epoch, kept exactly."""

    seconds: int = 0
    nanos: int = 0

    #: Go's zero ``time.Time`` (year 1), which asynq writes for an unset time (a worker without a deadline).
    GO_ZERO_SECONDS: ClassVar[int] = -62135596800

    @classmethod
    def of(cls, when: datetime) -> Timestamp:
        since = when.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)
        seconds = since.days * 86400 + since.seconds
        return cls(seconds, since.microseconds * 1000)

    @classmethod
    def of_ns(cls, ns: int) -> Timestamp:
        return cls(ns // 1_000_000_000, ns % 1_000_000_000)

    @property
    def is_go_zero(self) -> bool:
        return self.seconds == self.GO_ZERO_SECONDS and not self.nanos

    def datetime(self) -> datetime | None:
        """The time, to the microsecond; None for Go's zero time."""
        if self.is_go_zero:
            return None
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=self.seconds, microseconds=self.nanos // 1000)

    def encode(self) -> bytes:
        out = b""
        if self.seconds:
            out += _key(1, _VARINT) + _varint(self.seconds)
        if self.nanos:
            out += _key(2, _VARINT) + _varint(self.nanos)
        return out

    @classmethod
    def decode(cls, data: bytes) -> Timestamp:
        seconds = nanos = 0
        for number, wire_type, value, _ in _fields(data):
            if wire_type != _VARINT:
                continue
            if number == 1:
                seconds = _signed(value, 64)
            elif number == 2:
                nanos = _signed(value, 32)
        return cls(seconds, nanos)


GO_ZERO_TIME = Timestamp(Timestamp.GO_ZERO_SECONDS, 0)


def _encode_value(number: int, kind: int, value: Any) -> bytes:
    if kind == _STRING:
        return _length_delimited(number, value.encode()) if value else b""
    if kind == _BYTES:
        return _length_delimited(number, bytes(value)) if value else b""
    if kind in (_INT32, _INT64, _BOOL):
        return _key(number, _VARINT) + _varint(int(value)) if value else b""
    if kind == _TIME:
        return b"" if value is None else _length_delimited(number, value.encode())
    if kind == _STRINGS:
        return b"".join(_length_delimited(number, item.encode()) for item in value)
    # A map is a repeated entry message of key (1) and value (2); sorted, so equal maps encode equally.
    value_kind = _STRING if kind == _STR_MAP else _INT32
    return b"".join(
        _length_delimited(number, _encode_value(1, _STRING, k) + _encode_value(2, value_kind, v))
        for k, v in sorted(value.items())
    )


def _decode_value(kind: int, wire_type: int, value: Any, current: Any) -> Any:
    expected = _LEN if kind in (_STRING, _BYTES, _TIME, _STR_MAP, _INT_MAP, _STRINGS) else _VARINT
    if wire_type != expected:
        raise WireError(f"wire type {wire_type} where {expected} belongs")
    if kind == _STRING:
        return value.decode("utf-8", "replace")
    if kind == _BYTES:
        return bytes(value)
    if kind == _INT32:
        return _signed(value, 32)
    if kind == _INT64:
        return _signed(value, 64)
    if kind == _BOOL:
        return bool(value)
    if kind == _TIME:
        return Timestamp.decode(value)
    if kind == _STRINGS:
        return [*current, value.decode("utf-8", "replace")]
    entry = {1: "", 2: "" if kind == _STR_MAP else 0}
    for number, entry_wire, entry_value, _ in _fields(value):
        if number == 1:
            entry[1] = _decode_value(_STRING, entry_wire, entry_value, None)
        elif number == 2:
            entry[2] = _decode_value(_STRING if kind == _STR_MAP else _INT32, entry_wire, entry_value, None)
    return {**current, entry[1]: entry[2]}


class _Message:
    """A message whose dataclass fields carry their number and kind in ``metadata``; see the classes below."""

    unknown: bytes

    def encode(self) -> bytes:
        return (
            b"".join(_encode_value(number, kind, getattr(self, name)) for number, name, kind in _numbered(type(self)))
            + self.unknown
        )

    @classmethod
    def decode(cls, data: bytes) -> Self:
        by_number = _by_number(cls)
        values: dict[str, Any] = {}
        unknown = b""
        for number, wire_type, value, raw in _fields(bytes(data)):
            known = by_number.get(number)
            if known is None:
                unknown += raw
                continue
            name, kind = known
            current = values.get(name, [] if kind == _STRINGS else {})
            values[name] = _decode_value(kind, wire_type, value, current)
        return cls(**values, unknown=unknown)  # type: ignore[call-arg]  # each subclass is a dataclass


#: Per message class: (number, name, kind) of each field, in field-number order, worked out once (every task a
#: worker runs is decoded, and ``dataclasses.fields`` is not cheap); and field number -> (name, kind).
_NUMBERED: dict[type, tuple[tuple[int, str, int], ...]] = {}
_BY_NUMBER: dict[type, dict[int, tuple[str, int]]] = {}


def _numbered(cls: type) -> tuple[tuple[int, str, int], ...]:
    """What ``encode`` writes, in order."""
    known = _NUMBERED.get(cls)
    if known is None:
        known = _NUMBERED[cls] = tuple(
            sorted((f.metadata["number"], f.name, f.metadata["kind"]) for f in fields(cls) if "number" in f.metadata)
        )
    return known


def _by_number(cls: type) -> dict[int, tuple[str, int]]:
    """What ``decode`` looks each field up in."""
    known = _BY_NUMBER.get(cls)
    if known is None:
        known = _BY_NUMBER[cls] = {number: (name, kind) for number, name, kind in _numbered(cls)}
    return known


def _field(number: int, kind: int, default: Any = None) -> Any:
    metadata = {"number": number, "kind": kind}
    if kind in (_STR_MAP, _INT_MAP):
        return field(default_factory=dict, metadata=metadata)
    if kind == _STRINGS:
        return field(default_factory=list, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class WireTask(_Message):
    """asynq's ``TaskMessage``: the ``msg`` field of a task hash. Times are Unix seconds; ``timeout`` and
    ``retention`` are seconds; 0 means unset."""

    type: str = _field(1, _STRING, "")
    payload: bytes = _field(2, _BYTES, b"")
    headers: dict[str, str] = _field(15, _STR_MAP)
    id: str = _field(3, _STRING, "")
    queue: str = _field(4, _STRING, "")
    retry: int = _field(5, _INT32, 0)
    retried: int = _field(6, _INT32, 0)
    error_msg: str = _field(7, _STRING, "")
    last_failed_at: int = _field(11, _INT64, 0)
    timeout: int = _field(8, _INT64, 0)
    deadline: int = _field(9, _INT64, 0)
    unique_key: str = _field(10, _STRING, "")
    group_key: str = _field(14, _STRING, "")
    retention: int = _field(12, _INT64, 0)
    completed_at: int = _field(13, _INT64, 0)
    unknown: bytes = b""


@dataclass
class WireServer(_Message):
    """asynq's ``ServerInfo``: ``asynq:servers:{host:pid:id}``, rewritten by each heartbeat."""

    host: str = _field(1, _STRING, "")
    pid: int = _field(2, _INT32, 0)
    server_id: str = _field(3, _STRING, "")
    concurrency: int = _field(4, _INT32, 0)
    queues: dict[str, int] = _field(5, _INT_MAP)
    strict_priority: bool = _field(6, _BOOL, False)
    status: str = _field(7, _STRING, "")
    start_time: Timestamp | None = _field(8, _TIME)
    active_worker_count: int = _field(9, _INT32, 0)
    unknown: bytes = b""


@dataclass
class WireWorker(_Message):
    """asynq's ``WorkerInfo``: one running task, a value of the hash ``asynq:workers:{host:pid:id}``."""

    host: str = _field(1, _STRING, "")
    pid: int = _field(2, _INT32, 0)
    server_id: str = _field(3, _STRING, "")
    task_id: str = _field(4, _STRING, "")
    task_type: str = _field(5, _STRING, "")
    task_payload: bytes = _field(6, _BYTES, b"")
    queue: str = _field(7, _STRING, "")
    start_time: Timestamp | None = _field(8, _TIME)
    deadline: Timestamp | None = _field(9, _TIME)
    unknown: bytes = b""


@dataclass
class WireSchedulerEntry(_Message):
    """asynq's ``SchedulerEntry``: one periodic task, an item of the list ``asynq:schedulers:{id}``."""

    id: str = _field(1, _STRING, "")
    spec: str = _field(2, _STRING, "")
    task_type: str = _field(3, _STRING, "")
    task_payload: bytes = _field(4, _BYTES, b"")
    enqueue_options: list[str] = _field(5, _STRINGS)
    next_enqueue_time: Timestamp | None = _field(6, _TIME)
    prev_enqueue_time: Timestamp | None = _field(7, _TIME)
    unknown: bytes = b""


@dataclass
class WireEnqueueEvent(_Message):
    """asynq's ``SchedulerEnqueueEvent``: a member of ``asynq:scheduler_history:<entry id>``."""

    task_id: str = _field(1, _STRING, "")
    enqueue_time: Timestamp | None = _field(2, _TIME)
    unknown: bytes = b""
