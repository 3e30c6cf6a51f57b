"""Who may scrape ``/metrics``: the rule of ``METRICS_TOKEN``, ``METRICS_ALLOW`` and DEBUG, in one place.

A scrape that presents a bearer token (``Authorization: Bearer ...``, the header only) while ``METRICS_TOKEN`` is
set is judged by that token alone, compared in constant time: the right one is answered from anywhere, a wrong one
is refused from anywhere, loopback and DEBUG included. A wrong token is a misconfigured scraper, and it should be
told so (401) rather than be let in by its address. A scrape without a token is answered with DEBUG on
(the demo needs no setup), or when it comes straight from loopback or from a network of ``METRICS_ALLOW``. A
request relayed by a proxy (it carries ``X-Forwarded-For`` or ``Forwarded``) counts by its token alone: behind a
reverse proxy on the same host every request would otherwise come from loopback, and the address a proxy reports
can be forged.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from dataclasses import dataclass
from functools import lru_cache

from django.http import HttpRequest

from taskq.queues.engine.quoting import shown

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
log = logging.getLogger("taskq.metrics.scrape_access")

#: Headers a proxy adds to the requests it relays.
FORWARDING_HEADERS = ("X-Forwarded-For", "Forwarded")


@dataclass(frozen=True)
class MetricsAccess:
    debug: bool
    token: str
    allow: tuple[str, ...]

    @property
    def networks(self) -> tuple[Network, ...]:
        return parse_networks(self.allow)

    def allows(self, request: HttpRequest) -> bool:
        """Whether to answer this scrape; the rule is the module's docstring."""
        presented = bearer_token(request)
        if self.token and presented is not None:
            return hmac.compare_digest(presented.encode(), self.token.encode())
        if self.debug:
            return True
        if any(header in request.headers for header in FORWARDING_HEADERS):
            return False
        try:
            address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", "").split("%")[0])
        except ValueError:
            return False  # no address (a Unix socket) or a malformed one: not provably local
        if address.is_loopback:
            return True
        try:
            networks = self.networks
        except ValueError as exc:  # set in Python, not the environment (that fails at start); check says taskq.E201
            log.error("%s: refusing every scrape that needs it", exc)
            return False
        return any(address in network for network in networks)


def bearer_token(request: HttpRequest) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (``""`` for a bare ``Bearer``), or None when the
    request presents no bearer token (no header, or another scheme such as Basic)."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return given.strip() if scheme.lower() == "bearer" else None


@lru_cache(maxsize=8)
def parse_networks(values: tuple[str, ...]) -> tuple[Network, ...]:
    """``METRICS_ALLOW``'s CIDRs (``10.0.0.0/8``, ``fd00::/8``; a bare address is its own /32 or /128).

    Raises:
        ValueError: an entry is no address or network; the message names it.
    """
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            raise ValueError(f"METRICS_ALLOW: {shown(value)} is not a network (CIDR such as 10.0.0.0/8)") from None
    return tuple(networks)
