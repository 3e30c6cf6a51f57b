"""Which Redis deployment a URL names: one server, a Sentinel-watched master, or a Redis Cluster.

    redis://[[user]:password@]host[:port][/db]             one server (rediss:// for TLS, unix:// for a socket)
    redis+sentinel://[[user]:password@]host:port[,host:port...]/service[/db][?sentinel_password=...]
    redis+cluster://[[user]:password@]host:port[,host:port...]

``rediss+sentinel://`` and ``rediss+cluster://`` speak TLS to the data nodes. The user and password are those of
the data nodes (master, replicas, cluster nodes); sentinels that require their own take ``sentinel_username`` and
``sentinel_password`` in the query. A cluster has only database 0, so a cluster URL names no database.

A sentinel URL may also ask producers to wait for replication: with ``wait_replicas=N`` (and ``wait_timeout``, in
ms, default 1000) an enqueue is acknowledged only once N replicas have it (Redis ``WAIT``), see ``Client``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

from redis.connection import parse_url

from ..errors import ValidationError
from ..quoting import shown

SINGLE_SCHEMES = ("redis", "rediss", "unix")
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
DEFAULT_PORTS = {"sentinel": 26379, "cluster": 6379}
#: Query options of a sentinel or cluster URL; anything else is refused rather than silently ignored.
KNOWN_OPTIONS = {"sentinel_username", "sentinel_password", "wait_replicas", "wait_timeout"}
DEFAULT_WAIT_TIMEOUT_MS = 1000

Kind = Literal["single", "sentinel", "cluster"]


@dataclass(frozen=True)
class Topology:
    """A parsed Redis URL: its kind, the nodes to ask first, and what the data connections need."""

    kind: Kind
    url: str
    nodes: tuple[tuple[str, int], ...] = ()
    service: str = ""  # the master's name, as the sentinels know it
    db: int = 0
    username: str | None = None
    password: str | None = None
    tls: bool = False
    options: dict[str, str] = field(default_factory=dict)

    def credentials(self) -> dict[str, str]:
        """``username`` / ``password`` keyword arguments of the data connections (only those given)."""
        found = {"username": self.username, "password": self.password}
        return {k: v for k, v in found.items() if v is not None}

    @property
    def wait_replicas(self) -> int:
        """How many replicas must confirm a producer's write before it is acknowledged (0: do not wait)."""
        return int(self.options.get("wait_replicas", 0))

    @property
    def wait_timeout_ms(self) -> int:
        return int(self.options.get("wait_timeout", DEFAULT_WAIT_TIMEOUT_MS))

    def sentinel_credentials(self) -> dict[str, str]:
        found = {"username": self.options.get("sentinel_username"), "password": self.options.get("sentinel_password")}
        return {k: v for k, v in found.items() if v is not None}


def redact(url: str) -> str:
    """The URL with its password replaced, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def validate(url: str) -> Topology:
    """``parse``, and for one server also what redis-py refuses only when a client is built (a scheme it does not
    speak, a port that is no number, a query option of the wrong type) or silently ignores (a database that is no
    number, read as database 0). Connects to nothing: a process checks its URL with it before anything connects,
    so a bad one is named as a setting's error rather than met as a traceback at start-up.

    Raises ValidationError naming the URL (password left out) and what is wrong with it.
    """
    where = parse(url)
    if where.kind == "single":
        _check_single(url)
    return where


def _check_single(url: str) -> None:
    scheme, has_scheme, _ = url.partition("://")
    if not has_scheme or scheme not in SINGLE_SCHEMES:
        known = ", ".join(f"{name}://" for name in SINGLE_SCHEMES + SENTINEL_SCHEMES + CLUSTER_SCHEMES)
        raise _bad(url, f"it must start with one of {known}")
    try:
        options = parse_url(url)  # type: ignore[no-untyped-call]
    except ValueError as exc:  # redis-py's reason: a port that is no number, a query option of the wrong type
        raise _bad(url, str(exc)) from None
    database = urlsplit(url).path.replace("/", "")
    if scheme != "unix" and "db" not in options and database:
        _db(url, database)


def _bad(url: str, why: str) -> ValidationError:
    return ValidationError(f"bad Redis URL {shown(redact(url))}: {why}", op="connect")


def _nodes(url: str, hosts: str, default_port: int) -> tuple[tuple[str, int], ...]:
    nodes = []
    for part in hosts.split(","):
        part = part.strip()
        if not part:
            raise _bad(url, "an empty host in the host list")
        host, port = part, str(default_port)
        if part.startswith("["):  # [::1]:26379
            host, _, rest = part[1:].partition("]")
            port = rest.removeprefix(":") or port
        elif part.count(":") == 1:
            host, port = part.split(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise _bad(url, f"{shown(part)} is not host:port")
        nodes.append((host, int(port)))
    return tuple(nodes)


def _db(url: str, text: str) -> int:
    if not text.isdigit():
        raise _bad(url, f"database {shown(text)} is not a number")
    return int(text)


def parse(url: str) -> Topology:
    """The topology a URL names; a plain ``redis://`` (or any other scheme redis-py reads) is ``single``.

    Raises ValidationError for a sentinel or cluster URL it cannot read: no host, no service name, a database on a
    cluster, an unknown option.
    """
    scheme = url.partition("://")[0].lower()
    if scheme not in SENTINEL_SCHEMES + CLUSTER_SCHEMES:
        return Topology("single", url)
    kind: Kind = "sentinel" if scheme in SENTINEL_SCHEMES else "cluster"
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    if not hosts:
        raise _bad(url, "no host:port given")
    username = password = None
    if userinfo:
        user, has_password, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if has_password else None
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    unknown = sorted(set(query) - KNOWN_OPTIONS)
    if unknown:
        raise _bad(url, f"unknown option(s) {', '.join(unknown)}")
    for name in ("wait_replicas", "wait_timeout"):
        if name in query and not query[name].isdigit():
            raise _bad(url, f"{name} takes a whole number")
    path = [p for p in parts.path.split("/") if p]
    service, db = "", 0
    if kind == "sentinel":
        if not path or len(path) > 2:
            raise _bad(url, "a sentinel URL ends with /<service name> or /<service name>/<db>")
        service = unquote(path[0])
        db = _db(url, path[1]) if len(path) == 2 else 0
    elif path and path != ["0"]:
        raise _bad(url, "a Redis Cluster has only database 0; leave the database out")
    return Topology(
        kind,
        url,
        _nodes(url, hosts, DEFAULT_PORTS[kind]),
        service,
        db,
        username,
        password,
        scheme.startswith("rediss"),
        query,
    )
