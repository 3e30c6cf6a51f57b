"""``taskq.queues.handles``: one handle per configuration, shared until ``reset``, and a bounded number of them."""

from __future__ import annotations

from taskq.queues import conf, handles


def test_one_handle_per_configuration_until_reset(settings, redis_url):
    settings.REDIS_URL = redis_url
    handles.reset()
    first = conf.get_inspector("ops")
    # One inspector (one broker, one pool) for the configuration, whoever acts through it.
    assert conf.get_inspector("ops").broker is first.broker is conf.get_inspector("other").broker
    assert (conf.get_inspector("ops").actor, conf.get_inspector("other").actor) == ("ops", "other")
    handles.reset()
    assert conf.get_inspector("ops").broker is not first.broker


def test_the_least_recently_used_handle_goes_past_the_bound():
    handles.reset()
    kept = handles.shared("kept", object)
    for n in range(handles.MAX_HANDLES):
        handles.shared(("filler", n), object)
        handles.shared("kept", object)  # used again: stays
    assert handles.shared("kept", object) is kept
    assert handles.shared(("filler", 0), object) is not None and len(handles._handles) == handles.MAX_HANDLES
    handles.reset()
