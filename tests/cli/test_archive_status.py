"""``tasks archive status``: the archiver's lease holder, each attached queue's committed offset against its event
stream, and the gaps, as ``Inspector.archive_status`` reads them."""

from __future__ import annotations

from queues.engine.archive_store import ArchiveStore, Gap


def test_archive_status_with_no_archiver(cli, seed):
    seed.pending()
    result = cli("archive", "status")
    assert result.code == 0
    assert "Archiver: none" in result.out and "Gaps detected: 0" in result.out
    doc = cli("archive", "status", "--json").json()
    assert (doc["holder"], doc["gaps"]) == (None, 0)
    [queue] = doc["queues"]  # not attached: its stream is trimmed by length only, and none of it is archived
    assert (queue["queue"], queue["committed"], queue["length"], queue["behind"]) == ("default", None, 1, True)


def test_archive_status_shows_the_holder_offsets_and_the_last_gap(cli, seed):
    seed.pending()
    seed.pending(queue="critical")
    store = ArchiveStore(seed.broker)
    assert store.acquire("worker-7", 30)
    store.attach("default", 500)
    [last] = seed.broker.conn.xrevrange("tq:{default}:events", count=1)
    store.commit("default", last[0].decode())
    store.attach("critical", 500)
    store.record_gap(Gap("critical", "0-1", "5-0", 1_800_000_000_000))

    doc = cli("archive", "status", "--json").json()
    assert (doc["holder"], doc["gaps"]) == ("worker-7", 1)
    by_queue = {q["queue"]: q for q in doc["queues"]}
    assert set(by_queue) == {"critical", "default"}
    default, critical = by_queue["default"], by_queue["critical"]
    assert default["committed"] == default["last_id"] == last[0].decode() and default["behind"] is False
    assert (default["cap"], default["length"], default["last_gap"]) == (500, 1, None)
    assert critical["behind"] is True and critical["last_gap"]["first_id"] == "5-0"

    text = cli("archive", "status").out
    assert "Archiver: worker-7" in text and "Gaps detected: 1" in text
    assert "critical" in text and "5-0" in text


def test_archive_status_takes_no_arguments(cli):
    result = cli("archive", "status", "extra")
    assert result.code != 0 and "unrecognized arguments" in result.err
