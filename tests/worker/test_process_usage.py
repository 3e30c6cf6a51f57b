"""What a worker's heartbeat says of the process (issue 27): its RSS, its CPU share since the last heartbeat, and
its interval, which the console needs to tell a late heartbeat."""

from __future__ import annotations

import os

from taskq.queues.engine import Inspector
from tests.waiting import wait_for
from taskq.worker.process_usage import ProcessUsage, resident_bytes


def test_the_cpu_share_is_cpu_seconds_over_wall_seconds_since_the_last_sample():
    cpu, wall = [10.0], [100.0]
    usage = ProcessUsage(cpu=lambda: cpu[0], wall=lambda: wall[0])
    cpu[0], wall[0] = 11.5, 103.0  # 1.5 CPU seconds in 3 s
    assert usage.sample()["cpu"] == 0.5
    cpu[0], wall[0] = 13.5, 104.0  # two threads busy for the next second
    assert usage.sample()["cpu"] == 2.0
    assert usage.sample()["cpu"] == 0.0  # no wall time passed: no share, not a division by zero


def test_the_rss_is_the_process_resident_set_now():
    with open(f"/proc/{os.getpid()}/status", encoding="ascii") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    before = resident_bytes()
    assert abs(before - kib * 1024) < 8 * 1024 * 1024  # the same figure, give or take what moved in between
    ballast = bytearray(64 * 1024 * 1024)
    ballast[::4096] = b"x" * len(ballast[::4096])  # touch every page so it is resident
    assert resident_bytes() - before > 60 * 1024 * 1024
    del ballast


def test_a_running_server_publishes_its_usage_and_its_interval(make_server, redis_url, clock):
    server = make_server()
    with Inspector(redis_url, clock=clock) as inspector:
        (info,) = wait_for(inspector.servers, what="the first heartbeat written")
    assert info.rss is not None and info.rss > 10 * 1024 * 1024  # a Python process with Django loaded
    assert info.cpu is not None and info.cpu >= 0
    assert info.heartbeat_every == server.config.heartbeat_every
