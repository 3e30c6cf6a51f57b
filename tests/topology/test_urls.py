"""Reading sentinel and cluster URLs (no server needed): what each part means, and a clear error for bad ones."""

from __future__ import annotations

import pytest

from taskq.console.channel_layers import IN_PROCESS_LAYER, REDIS_LAYER, channel_layers
from taskq.queues.engine import RedisUnavailableError, ValidationError, connect
from taskq.queues.engine.broker.topology import Topology, parse, validate


@pytest.mark.parametrize(
    "url, expected",
    [
        ("redis://127.0.0.1:6379/3", Topology("single", "redis://127.0.0.1:6379/3")),
        (
            "redis+sentinel://h1:26379,h2:26380/mymaster",
            Topology("sentinel", "", (("h1", 26379), ("h2", 26380)), "mymaster"),
        ),
        (
            "redis+sentinel://:s%40cret@h1,[::1]:26381/mymaster/4?sentinel_password=sp",
            Topology(
                "sentinel",
                "",
                (("h1", 26379), ("::1", 26381)),
                "mymaster",
                4,
                None,
                "s@cret",
                options={"sentinel_password": "sp"},
            ),
        ),
        (
            "rediss+sentinel://ada:pw@h1:5000/svc",
            Topology("sentinel", "", (("h1", 5000),), "svc", 0, "ada", "pw", True),
        ),
        ("redis+cluster://10.0.0.1:7000,10.0.0.2", Topology("cluster", "", (("10.0.0.1", 7000), ("10.0.0.2", 6379)))),
        ("rediss+cluster://:pw@h:7000/0", Topology("cluster", "", (("h", 7000),), password="pw", tls=True)),
    ],
)
def test_parse(url: str, expected: Topology):
    found = parse(url)
    assert found == Topology(**{**expected.__dict__, "url": url})


@pytest.mark.parametrize(
    "url, why",
    [
        ("redis+sentinel://h1:26379", "/<service name>"),
        ("redis+sentinel://h1:26379/svc/x", 'database "x" is not a number'),
        ("redis+sentinel://h1:26379/svc/1/extra", "/<service name>"),
        ("redis+sentinel:///svc", "no host:port"),
        ("redis+sentinel://h1:port/svc", '"h1:port" is not host:port'),
        ("redis+sentinel://h1:99999/svc", '"h1:99999" is not host:port'),
        ("redis+sentinel://h1,,h2/svc", "an empty host"),
        ("redis+cluster://h1:7000/3", "only database 0"),
        ("redis+cluster://h1:7000?timeout=3", "unknown option(s) timeout"),
        ("redis+cluster://h1:7000?wait_replicas=x", "wait_replicas takes a whole number"),
        ("redis+sentinel://h1/svc?wait_replicas=one", "wait_replicas takes a whole number"),
        ("redis+sentinel://h1/svc?wait_timeout=-5", "wait_timeout takes a whole number"),
    ],
)
def test_bad_urls_are_refused_by_name(url: str, why: str):
    with pytest.raises(ValidationError, match="bad Redis URL") as refused:
        parse(url)
    assert why in str(refused.value)


@pytest.mark.parametrize(
    "url, why",
    [
        ("redis://:::bad", "Port could not be cast to integer value as '::bad'"),
        ("redis://host:notaport/0", "Port could not be cast to integer value as 'notaport'"),
        ("redis://host:99999/0", "Port out of range"),
        ("http://x", "it must start with one of redis://, rediss://, unix://, redis+sentinel://"),
        ("localhost:6379", "it must start with one of"),
        ("", "it must start with one of"),
        ("redis://host/three", 'database "three" is not a number'),  # redis-py would quietly use database 0
        ("redis://host/0?socket_timeout=soon", "Invalid value for 'socket_timeout'"),
        ("redis+cluster://h1:7000/3", "only database 0"),  # and everything parse refuses
    ],
)
def test_validate_refuses_what_a_client_would_refuse_later(url: str, why: str):
    """``parse`` reads only sentinel and cluster URLs; ``validate`` also reads one server's as redis-py will,
    without connecting, so a setting can be checked at start-up (taskq.E103)."""
    with pytest.raises(ValidationError, match="bad Redis URL") as refused:
        validate(url)
    assert why in refused.value.message


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:1/3",  # nothing listens there: validate connects to nothing
        "rediss://ada:pw@cache.example:6380/2",
        "redis://host/3?db=4",
        "unix:///run/redis.sock?db=2",
        "redis+sentinel://h1:26379/svc/1",
        "redis+cluster://h1:7000",
    ],
)
def test_validate_accepts_well_formed_urls(url: str):
    assert validate(url) == parse(url)


def test_validate_leaves_the_password_out():
    with pytest.raises(ValidationError) as refused:
        validate("redis://ada:s3cret@host:notaport/0")
    assert "s3cret" not in refused.value.message and "ada:***@host" in refused.value.message


def test_wait_replicas_is_read_from_a_sentinel_url():
    where = parse("redis+sentinel://h1/svc/2?wait_replicas=1&wait_timeout=250")
    assert (where.wait_replicas, where.wait_timeout_ms, where.db) == (1, 250, 2)


def test_wait_replicas_is_read_from_a_cluster_url():
    where = parse("redis+cluster://h1:7000,h2:7001?wait_replicas=1&wait_timeout=250")
    assert (where.kind, where.wait_replicas, where.wait_timeout_ms) == ("cluster", 1, 250)
    assert (parse("redis+sentinel://h1/svc").wait_replicas, parse("redis+sentinel://h1/svc").wait_timeout_ms) == (
        0,
        1000,
    )
    assert parse("redis://h1/2").wait_replicas == 0


def test_a_password_never_appears_in_the_error():
    with pytest.raises(ValidationError) as refused:
        parse("redis+cluster://:hunter2@h1:7000/5")
    assert "hunter2" not in str(refused.value) and "***" in str(refused.value)


def test_connect_reports_a_bad_url_and_an_unreachable_cluster_as_unavailable():
    with pytest.raises(RedisUnavailableError, match="a sentinel URL ends with"):
        connect("redis+sentinel://127.0.0.1:26381")
    # A cluster client reads the slot map at once: nobody on this port (one of ours, idle outside the tests).
    with pytest.raises(RedisUnavailableError, match="unreachable"):
        connect("redis+cluster://127.0.0.1:7306", socket_connect_timeout=0.5)


def test_channel_layers_follow_the_topology():
    assert channel_layers("redis://127.0.0.1:6379/2") == {
        "default": {
            "BACKEND": REDIS_LAYER,
            "CONFIG": {"hosts": [{"address": "redis://127.0.0.1:6379/2", "socket_timeout": 15.0}]},
        }
    }
    assert channel_layers("redis+sentinel://:pw@h1:26379,h2:26379/svc/2?sentinel_password=sp") == {
        "default": {
            "BACKEND": REDIS_LAYER,
            "CONFIG": {
                "hosts": [
                    {
                        "sentinels": [("h1", 26379), ("h2", 26379)],
                        "master_name": "svc",
                        "db": 2,
                        "socket_timeout": 15.0,
                        "password": "pw",
                        "sentinel_kwargs": {"password": "sp"},
                    }
                ]
            },
        }
    }
    assert channel_layers("redis+cluster://h1:7000") == {"default": {"BACKEND": IN_PROCESS_LAYER}}
