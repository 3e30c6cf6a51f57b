"""``tasks export status``: the exporter's lease holder, each attached queue's committed offset against its event
stream, and the gaps, as ``Inspector.export_status`` reads them."""

from __future__ import annotations

from taskq.queues.engine.export_store import ExportStore, Gap


def test_export_status_with_no_exporter(cli, seed):
    seed.pending()
    result = cli("export", "status")
    assert result.code == 0
    assert "Exporter: none" in result.out and "Gaps detected: 0" in result.out
    doc = cli("export", "status", "--json").json()
    assert (doc["holder"], doc["gaps"]) == (None, 0)
    [queue] = doc["queues"]  # not attached: its stream is trimmed by length only, and none of it is exported
    assert (queue["queue"], queue["committed"], queue["length"], queue["behind"]) == ("default", None, 1, True)


def test_export_status_shows_the_holder_offsets_and_the_last_gap(cli, seed):
    seed.pending()
    seed.pending(queue="critical")
    store = ExportStore(seed.broker)
    assert store.acquire("worker-7", 30)
    store.attach("default", 500)
    [last] = seed.broker.conn.xrevrange("tq:{default}:events", count=1)
    store.commit("default", last[0].decode())
    store.attach("critical", 500)
    store.record_gap(Gap("critical", "0-1", "5-0", 1_800_000_000_000))

    doc = cli("export", "status", "--json").json()
    assert (doc["holder"], doc["gaps"]) == ("worker-7", 1)
    by_queue = {q["queue"]: q for q in doc["queues"]}
    assert set(by_queue) == {"critical", "default"}
    default, critical = by_queue["default"], by_queue["critical"]
    assert default["committed"] == default["last_id"] == last[0].decode() and default["behind"] is False
    assert (default["cap"], default["length"], default["last_gap"]) == (500, 1, None)
    assert critical["behind"] is True and critical["last_gap"]["first_id"] == "5-0"

    text = cli("export", "status").out
    assert "Exporter: worker-7" in text and "Gaps detected: 1" in text
    assert "critical" in text and "5-0" in text


def test_export_status_takes_no_arguments(cli):
    result = cli("export", "status", "extra")
    assert result.code != 0 and "unrecognized arguments" in result.err
