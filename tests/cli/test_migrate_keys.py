"""``tasks migrate-keys``: dry run, real run, a second run that changes nothing, and a newer keyspace refused."""

from __future__ import annotations

from taskq.queues.engine import Keys

LAYOUT = Keys().layout


def keyspace(r) -> dict[bytes, bytes]:
    return {key: r.dump(key) for key in sorted(r.keys("*"))}


def test_dry_run_then_real_then_again(cli, seed, redis_client):
    r = redis_client
    seed.pending()
    r.delete(LAYOUT)  # a keyspace written before the stamp existed
    before = keyspace(r)

    dry = cli("migrate-keys", "--dry-run")
    assert dry.code == 0, dry.err
    assert dry.out.splitlines() == [
        "Dry run: keyspace unstamped; would bring it to layout 1:",
        "  stamp layout 1 (the keyspace holds taskq keys from before the stamp)",
        "Nothing was changed.",
    ]
    assert keyspace(r) == before

    real = cli("--json", "migrate-keys")
    assert real.json() == {
        "before": None,
        "after": 1,
        "dry_run": False,
        "changes": ["stamp layout 1 (the keyspace holds taskq keys from before the stamp)"],
    }
    assert r.get(LAYOUT) == b"1"
    after = keyspace(r)
    assert {k: v for k, v in after.items() if k != LAYOUT.encode()} == before

    again = cli("migrate-keys")
    assert (again.code, again.out) == (0, "Keyspace already at key layout 1; nothing to change.\n")
    assert keyspace(r) == after


def test_a_newer_keyspace_is_refused_and_left_alone(cli, redis_client):
    redis_client.set(LAYOUT, "2")
    for argv in (["migrate-keys"], ["migrate-keys", "--dry-run"]):
        result = cli(*argv)
        assert result.code == 1 and result.out == ""
        assert "key layout 2, but this taskq reads and writes layout 1" in result.err
    assert redis_client.keys("*") == [LAYOUT.encode()]
