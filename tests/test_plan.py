"""The typed plan (spmbpe._core.Plan): what the planners fill and the core
reads.  Its malformed parts are refused in tests/test_untrusted.py; here,
what it holds and gives back, and that the core reads it as the planners
mean it (the ids of every reference are the goldens' business)."""

import threading

import pytest

import spmbpe
from spmbpe._core import Plan

from conftest import DATA_DIR, LLAMA_SPM_GGUF


def _plan(*parts):
    """A Plan from the tuples parts() gives back."""
    plan = Plan()
    for part in parts:
        if isinstance(part[0], str):
            plan.add_text(*part[:5], alignment=part[5] if len(part) > 5 else None)
        else:
            plan.add_token(*part)
    return plan


def test_parts_round_trip():
    parts = [(1, 0, 3), ("Hello world", True, 0, 3, 0), ("", True, 0, 0, 0), (7, 14, 14),
             ("▁x", False, 2, 14, 1), ("ab", False, 0, 0, 0, [20, 21, 23])]
    plan = _plan(*parts)
    assert len(plan) == 6 and plan.parts() == parts
    assert repr(plan) == f"Plan({parts!r})"
    assert [plan.is_text(i) for i in range(6)] == [False, True, True, False, True, True]
    assert plan.size == len("Hello world") + 2 + 2 + 2
    assert Plan().parts() == [] and len(Plan()) == 0 and not Plan()
    assert repr(Plan()) == "Plan([])"


def test_add_defaults():
    plan = Plan()
    plan.add_token(5)
    plan.add_text("a", 1)
    assert plan.parts() == [(5, 0, 0), ("a", True, 0, 0, 0)]


def test_extend_and_set_skip():
    a = _plan((1, 0, 3), ("x y", True, 0, 3, 0))
    b = _plan(("ab", False, 0, 0, 0, [5, 6, 7]), (2, 7, 8))
    a.extend(b)
    assert a.parts() == [(1, 0, 3), ("x y", True, 0, 3, 0), ("ab", False, 0, 0, 0, [5, 6, 7]), (2, 7, 8)]
    assert b.parts() == [("ab", False, 0, 0, 0, [5, 6, 7]), (2, 7, 8)]  # (unchanged)
    a.extend(a)
    assert a.parts() == 2 * [(1, 0, 3), ("x y", True, 0, 3, 0), ("ab", False, 0, 0, 0, [5, 6, 7]), (2, 7, 8)]
    a.set_skip(5, 3)
    assert a.parts()[5] == ("x y", True, 3, 3, 0)
    assert a.parts()[1] == ("x y", True, 0, 3, 0)


def test_grows_past_its_first_capacity():
    plan = Plan()
    for i in range(1000):
        plan.add_text(str(i), False, 0, i, 0) if i % 2 else plan.add_token(i, i, i + 1)
    assert len(plan) == 1000
    assert plan.parts()[998:] == [(998, 998, 999), ("999", False, 0, 999, 0)]


def test_alignment_is_copied():
    align = [4, 5, 6]
    plan = _plan(("ab", False, 0, 0, 0, align))
    align.clear()  # (the plan must not read a list that changed)
    assert plan.parts()[0][5] == [4, 5, 6]


def test_core_reads_plans_as_the_tuples_said():
    """The ids and offsets of hand-made plans (as the tuple plans of earlier
    versions gave them)."""
    tok = spmbpe.load(LLAMA_SPM_GGUF)
    core = tok._core
    hello = core.encode("Hello world", True)
    assert core.encode_parts(_plan((1, 0, 3), ("Hello world", True, 0, 3, 0))) == [1] + hello
    # skip: the first ids left out when the segment has that many.
    assert core.encode_parts(_plan(("Hello world", True, 1, 0, 0))) == hello[1:]
    assert core.encode_parts(_plan(("Hello world", True, 99, 0, 0))) == hello
    ids, starts, ends = core.encode_parts_offsets(_plan((1, 0, 3), ("Hello world", True, 0, 3, 0)))
    assert (ids, list(zip(starts, ends))) == tok.encode_with_offsets("<s>Hello world", special="all")
    # origin and lead: the first `lead` characters are zero-width.
    ids, starts, ends = core.encode_parts_offsets(_plan(("xyHello", False, 0, 10, 2)))
    assert ids == core.encode("xyHello", False) and starts[-1] >= 10 and ends[-1] == 15
    # An alignment replaces origin and lead.
    ids, starts, ends = core.encode_parts_offsets(_plan(("ab", False, 0, 0, 0, [10, 12, 15])))
    assert ids == core.encode("ab", False) and starts[0] == 10 and ends[-1] == 15
    # A batch: a str is one text part with the batch's prefix.
    plans = [_plan((1, 0, 3), ("Hello world", True, 0, 3, 0)), "Hello world", "", Plan()]
    assert core.encode_parts_batch(plans) == [[1] + hello, hello, [], []]


@pytest.mark.parametrize("path", [LLAMA_SPM_GGUF, DATA_DIR / "mistral-v1.tokenizer.json"])
def test_planners_return_plans(path):
    tok = spmbpe.load(path)
    text = "<s>Hello <s> world</s>"
    plan = tok._plan(text, True, None)
    assert type(plan) is Plan and not plan.is_text(0)
    assert tok._core.encode_parts(plan) == tok.encode(text, special="all")
    assert tok._plan("", True, None).parts() == []


def test_a_plan_being_read_does_not_change():
    """encode_parts reads a long plan without the GIL: meanwhile another
    thread may not add to it (its array would move) -- it gets a
    RuntimeError, or adds after the read."""
    tok = spmbpe.load(LLAMA_SPM_GGUF)
    plan = _plan(("Hello world " * 20000, True, 0, 0, 0))
    want = tok._core.encode_parts(plan)
    stop = threading.Event()
    refused = []

    def add():
        while not stop.is_set():
            try:
                plan.set_skip(0, 0)
            except RuntimeError:
                refused.append(1)

    thread = threading.Thread(target=add)
    thread.start()
    try:
        for _ in range(20):
            assert tok._core.encode_parts(plan) == want
    finally:
        stop.set()
        thread.join()
