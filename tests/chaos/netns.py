"""Hosts made of Linux network namespaces, for the multi-host chaos tests (tests/chaos/test_hosts.py).

``HostNetwork`` makes one namespace for the Redis host and one per worker host, and joins each worker host to the
Redis host by its own veth pair (a /24 of its own). Addresses exist only inside those namespaces, so nothing the
test does is visible to the machine's own network. What a test can do to one worker host:

- ``cut(host)`` / ``restore(host)``: take its link down and up again (a host dropping off the network: no RST,
  its TCP connections hang and retransmit, and what they held is delivered late when the link returns);
- ``lose(host, percent)``: drop that share of its packets, both ways, with nftables (real packet loss: TCP
  retransmits). This kernel has no ``netem`` qdisc, so latency comes from the chaos proxy, run inside the Redis
  host's namespace (``enter``).

The processes of a host run under ``ip netns exec`` (``exec_prefix``). A thread of the test process may move
itself into a namespace (``enter``): setns(2) for the network namespace changes the calling thread only, and the
sockets it opens stay in that namespace.

Needs root and iproute2 (nftables for ``lose``): ``unavailable()`` says why not, for a skip with a reason.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from dataclasses import dataclass

CLONE_NEWNET = 0x40000000
SUBNET = "10.213"  # 10.213.<n>.0/24 per worker host; private, and only ever inside these namespaces


def unavailable() -> str | None:
    """Why this machine cannot make network namespaces, or None when it can."""
    if os.geteuid() != 0:
        return "making network namespaces needs root (ip netns add)"
    if shutil.which("ip") is None:
        return "iproute2 is not installed (scripts/ensure-netns.sh installs it)"
    probe = f"tqprobe{os.getpid() % 100000}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _run(*args: str, stdin: str | None = None) -> None:
    done = subprocess.run(list(args), input=stdin, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}")


def enter(namespace: str) -> None:
    """Move the calling thread into ``namespace`` (the network namespace only)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/var/run/netns/{namespace}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns into {namespace}: {os.strerror(errno)}")
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Host:
    """One worker host: its namespace, its end of the veth, its address and the Redis host's address facing it."""

    namespace: str
    link: str
    address: str
    redis_address: str


class HostNetwork:
    """A Redis host and worker hosts, each its own network namespace, joined by one veth pair per worker host."""

    def __init__(self, workers: list[str]) -> None:
        tag = f"tq{os.getpid() % 100000}"  # namespaces and links of this process, so parallel runs never meet
        self.redis_namespace = f"{tag}r"
        self.hosts = {
            name: Host(f"{tag}{name}", f"{tag}{name}", f"{SUBNET}.{n}.2", f"{SUBNET}.{n}.1")
            for n, name in enumerate(workers, start=1)
        }
        self._made: list[str] = []

    def create(self) -> None:
        for namespace in [self.redis_namespace, *(h.namespace for h in self.hosts.values())]:
            _run("ip", "netns", "add", namespace)
            self._made.append(namespace)
            _run("ip", "-n", namespace, "link", "set", "lo", "up")
        for host in self.hosts.values():
            redis_end = f"{host.link}r"
            _run("ip", "link", "add", host.link, "type", "veth", "peer", "name", redis_end)
            _run("ip", "link", "set", host.link, "netns", host.namespace)
            _run("ip", "link", "set", redis_end, "netns", self.redis_namespace)
            _run("ip", "-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", host.link)
            _run("ip", "-n", self.redis_namespace, "addr", "add", f"{host.redis_address}/24", "dev", redis_end)
            _run("ip", "-n", host.namespace, "link", "set", host.link, "up")
            _run("ip", "-n", self.redis_namespace, "link", "set", redis_end, "up")

    def destroy(self) -> None:
        """Delete the namespaces (and with them their veths). Their processes must have been stopped first."""
        for namespace in reversed(self._made):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        self._made.clear()

    def redis_addresses(self) -> list[str]:
        return [host.redis_address for host in self.hosts.values()]

    def exec_prefix(self, namespace: str) -> list[str]:
        return ["ip", "netns", "exec", namespace]

    def cut(self, host: Host) -> None:
        _run("ip", "-n", host.namespace, "link", "set", host.link, "down")

    def restore(self, host: Host) -> None:
        _run("ip", "-n", host.namespace, "link", "set", host.link, "up")

    def lose(self, host: Host, percent: int) -> None:
        """Drop ``percent`` % of the host's packets on its link, in each direction."""
        drop = f"numgen random mod 100 < {percent} drop"
        rules = (
            "table inet chaos {\n"
            f"  chain inbound {{ type filter hook input priority 0; iifname {host.link} {drop}; }}\n"
            f"  chain outbound {{ type filter hook output priority 0; oifname {host.link} {drop}; }}\n"
            "}\n"
        )
        _run("ip", "netns", "exec", host.namespace, "nft", "-f", "-", stdin=rules)
