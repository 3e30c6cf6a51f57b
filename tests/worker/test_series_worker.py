"""A real worker writes its attempts to the time series with its acknowledgements (successes, failures that
retry, failures that archive, each with its run and wait time), and one worker a minute samples every queue's
size and latency. Time is the shared FakeClock; nothing is timed."""

from __future__ import annotations

from worker_support import wait_for

from taskq.queues.engine import Keys, Task, handler
from taskq.queues.engine.broker.commands import run_command
from taskq.queues.engine.sans_io import drive
from taskq.queues.engine.series import point, read_flow
from taskq.worker.series_sampler import SeriesSampler

Q = "default"


def minute_of(r, clock, queue: str = Q) -> dict[str, int]:
    key = Keys().queue(queue).series("m", point(clock.now(), "m"))
    return {k.decode(): int(v) for k, v in r.hgetall(key).items()}


def test_a_worker_writes_each_outcome_once_with_its_run_and_wait_time(make_server, registry, client, r, clock):
    @handler("ok", registry=registry)
    def ok(task: Task) -> None:
        return None

    @handler("boom", registry=registry)
    def boom(task: Task) -> None:
        raise RuntimeError("no")

    client.enqueue_many([("ok", b"")] * 5)
    client.enqueue("boom", max_retry=1)  # fails once into retry (the retry waits: the clock does not move)
    client.enqueue("boom", max_retry=0)  # fails into the archive
    server = make_server()
    wait_for(lambda: minute_of(r, clock).get("ok|ok") == 5, what="the five successes in the series")
    wait_for(lambda: minute_of(r, clock).get("fail|boom") == 2, what="the two failures in the series")
    server.stop()
    fields = minute_of(r, clock)
    assert fields["retry|boom"] == 1 and "retry|ok" not in fields and "fail|ok" not in fields
    runs = sum(v for k, v in fields.items() if k.startswith("r") and k.endswith("|ok") and k[1:-3].isdigit())
    waits = sum(v for k, v in fields.items() if k.startswith("w") and k.endswith("|ok"))
    assert runs == 5 and waits == 5  # each success once in a run bucket and once in a wait bucket
    assert fields["w0|ok"] == 5  # enqueued and started at the same (fake) instant: no wait
    total = r.hgetall(Keys().series("m", point(clock.now(), "m")))
    assert total[b"ok|default"] == b"5" and total[b"fail|default"] == b"2"
    (only,) = drive(read_flow(Keys(), Q, "h", clock.now(), clock.now()), lambda req: run_command(r, req))
    assert only.total("ok") == 5 and only.total("fail") == 2
    # Each attempt's end tells the timeline when its handler started, and its start names its lease token.
    events = [fields for _id, fields in r.xrange(Keys().queue(Q).events)]
    ends = [e for e in events if e[b"from"] == b"active"]
    assert len(ends) == 7 and all(e[b"started"].isdigit() for e in ends)
    assert all(e[b"lease"] for e in events if e[b"to"] == b"active")


def test_one_sampler_a_minute_records_every_queues_size_and_latency(broker, client, r, clock, inspector):
    client.enqueue("a", b"", queue="mail")
    client.enqueue("b", b"", queue="mail", process_in=60)
    clock.advance(2.5)  # the pending task has waited 2.5 s
    first, second = SeriesSampler(broker, inspector), SeriesSampler(broker, inspector)
    first.run_once()
    second.run_once()  # the minute is taken: it writes nothing
    assert minute_of(r, clock, "mail") == {"size": 2, "latency_ms": 2500}
    r.delete(Keys().queue("mail").series("m", point(clock.now(), "m")))
    first.run_once()  # once per minute per worker too
    assert minute_of(r, clock, "mail") == {}
    clock.advance(60)
    second.run_once()
    assert minute_of(r, clock, "mail")["size"] == 2
