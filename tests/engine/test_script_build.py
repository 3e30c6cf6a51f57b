"""Each transition script is built with only the helpers of ``lua/_lib.lua`` it needs (scripts.py)."""

from __future__ import annotations

import re

import pytest
import redis

from taskq.queues.engine.scripts import LUA_DIR, all_script_names, helpers, needed_helpers, script


def defined(source: str) -> list[str]:
    return re.findall(r"^(?:local function (\w+)|local (\w+)\b|(\w+) = function)", source, re.M)


def test_the_cut_keeps_every_line_of_the_library_in_order():
    assert "".join(text for _, text in helpers()) == (LUA_DIR / "_lib.lua").read_text()


def test_the_cut_names_each_definition():
    names = [name for name, _ in helpers()]
    assert names[0] == "new_context"
    assert {"fence", "moved", "finish", "TRIM_BATCH", "after_success"} <= set(names)
    # the forward declaration and the assignment that completes it are two parts of one name
    assert names.count("after_failure") == 2


def test_a_script_gets_what_it_calls_and_what_those_call():
    needed = needed_helpers(
        "local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])\nfinish(ctx)"
    )
    assert needed == {"new_context", "finish"}
    # moved emits an event, and emit trims the stream
    assert {"moved", "emit", "trimming"} <= needed_helpers("moved(ctx, key, id, t, 'a', 'b')")


def test_names_in_comments_pull_nothing_in():
    assert needed_helpers("-- after_failure would be called here\nreturn 1") == set()


def test_a_small_script_carries_no_unrelated_helper():
    source = script("drop_lease").source
    assert "after_failure" not in source
    assert "local function moved" not in source


def test_the_forward_declaration_comes_before_its_assignment():
    source = script("archive").source
    assert source.index("local after_failure\n") < source.index("after_failure = function")


@pytest.mark.parametrize("name", all_script_names())
def test_every_script_defines_each_helper_it_uses_once_and_compiles(name: str, r: redis.Redis):
    source = script(name).source
    names = [next(g for g in found if g) for found in defined(source)]
    helper_names = {n for n, _ in helpers()}
    code = re.sub(r"--[^\n]*", "", source)
    # every helper called (not a method or field of the same name), and the one constant
    used = (set(re.findall(r"(?<![.:\w])(\w+)\(", code)) | set(re.findall(r"\bTRIM_BATCH\b", code))) & helper_names
    assert used <= set(names), f"{name} uses helpers it does not define: {used - set(names)}"
    assert len([n for n in names if n != "after_failure"]) == len({n for n in names if n != "after_failure"})
    assert r.script_load(source) == script(name).sha
