"""The bytes of the command line's outputs, made by the compiled kernels of
core/arrays.pyx without NumPy: little-endian integers of the layouts that
spmbpe/_arrays.py documents (the byte-for-byte checks against megatron-core's
and datatrove's own files are in test_cli_formats.py), and the text outputs'
lines.  Here: each kernel against struct's packing of the same numbers, or
Python's own formatting, on random input, and the errors an output that
cannot hold its ids raises."""

from __future__ import annotations

import json
import struct
import sys
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spmbpe._arrays import INT32, UINT16, UINT32, ArrayOutput, as_id_buffers
from spmbpe._atomic import OutputError
from spmbpe._core import (
    counting_le64, ends_le64, format_ids, ids_around, ids_le, join_flat, lengths_le32, megatron_pointers,
)

from long_run import examples

ids_st = st.lists(st.integers(0, (1 << 32) - 1), max_size=200)


def _offsets(draw_lengths):
    offsets = [0]
    for n in draw_lengths:
        offsets.append(offsets[-1] + n)
    return offsets


@settings(max_examples=examples(200), deadline=None)
@given(ids=ids_st, wide=st.booleans())
def test_ids_as_little_endian_integers_of_the_output_type(ids, wide):
    itemsize, limit, code = (4, (1 << 32) - 1, "I") if wide else (2, (1 << 16) - 1, "H")
    fitting = [i for i in ids if i <= limit]
    given = array("I", fitting)
    got = ids_le(given, itemsize, limit)
    assert bytes(got) == struct.pack(f"<{len(fitting)}{code}", *fitting)
    if wide and sys.byteorder == "little":
        assert memoryview(got).obj is given  # their own bytes, not a copy
    over = [i for i in ids if i > limit]
    if over:
        with pytest.raises(OverflowError) as e:
            ids_le(array("I", ids), itemsize, limit)
        assert e.value.args == (over[0],)  # the first that does not fit


@settings(max_examples=examples(200), deadline=None)
@given(lengths=st.lists(st.integers(0, 5000), max_size=100), base=st.integers(0, 1 << 40),
       skip=st.integers(0, 3))
def test_document_lengths_and_ends(lengths, base, skip):
    offsets = array("q", _offsets(lengths))
    part = memoryview(offsets)[min(skip, len(lengths)):]  # a batch's slice: offsets[0] != 0
    n = len(part) - 1
    assert bytes(lengths_le32(part)) == struct.pack(f"<{n}i", *[part[i + 1] - part[i] for i in range(n)])
    assert bytes(ends_le64(part, base)) == struct.pack(f"<{n}q", *[part[i + 1] - part[0] + base for i in range(n)])


@settings(max_examples=examples(200), deadline=None)
@given(lengths=st.lists(st.integers(0, (1 << 31) - 1), max_size=100), itemsize=st.sampled_from([2, 4]),
       pointer=st.integers(0, 1 << 40))
def test_megatron_pointers_run_on_from_the_pointer_given(lengths, itemsize, pointer):
    got, after = megatron_pointers(struct.pack(f"<{len(lengths)}i", *lengths), itemsize, pointer)
    starts = [pointer + itemsize * sum(lengths[:i]) for i in range(len(lengths))]
    assert bytes(got) == struct.pack(f"<{len(lengths)}q", *starts)
    assert after == pointer + itemsize * sum(lengths)


def test_megatron_document_index_counts_up():
    assert bytes(counting_le64(7, 4)) == struct.pack("<4q", 7, 8, 9, 10)
    assert bytes(counting_le64(0, 0)) == b""


@settings(max_examples=examples(200), deadline=None)
@given(docs=st.lists(st.lists(st.integers(0, 1 << 20), max_size=8), max_size=30),
       bos=st.sampled_from([-1, 1]), eos=st.sampled_from([-1, 2]))
def test_bos_and_eos_around_each_document(docs, bos, eos):
    flat = array("I", [i for d in docs for i in d])
    offsets = array("q", _offsets(map(len, docs)))
    head, tail = [bos] if bos >= 0 else [], [eos] if eos >= 0 else []
    expected = [head + d + tail for d in docs]
    ids, starts = as_id_buffers(*ids_around(flat, offsets, bos, eos))
    assert list(ids) == [i for d in expected for i in d]
    assert list(starts) == _offsets(map(len, expected))


@st.composite
def _batch_results(draw):
    """(documents, groups' results, owners or None): each document cut in
    units (an empty one may have none), the units in order split into
    groups, as encode_batch's jobs return them."""
    docs = draw(st.lists(st.lists(st.integers(0, (1 << 32) - 1), max_size=8), max_size=30))
    whole = draw(st.booleans())
    units, unit_owner = [], []
    for index, doc in enumerate(docs):
        if whole:
            cuts = [0, len(doc)]
        else:
            inner = sorted(draw(st.lists(st.integers(0, len(doc)), max_size=3)))
            cuts = [0, *inner, len(doc)] if doc or draw(st.booleans()) else []
        for a, b in zip(cuts, cuts[1:]):
            units.append(doc[a:b])
            unit_owner.append(index)
    bounds = sorted(draw(st.lists(st.integers(0, len(units)), max_size=4)))
    bounds = [0, *bounds, len(units)]
    results, owners = [], []
    for a, b in zip(bounds, bounds[1:]):
        group = units[a:b]
        results.append((bytearray(array("I", [i for u in group for i in u])),
                        bytearray(array("q", _offsets(map(len, group))))))
        owners.append(unit_owner[a:b])
    return docs, results, None if whole else owners


@settings(max_examples=examples(300), deadline=None)
@given(batch=_batch_results(), bos=st.sampled_from([-1, 1]), eos=st.sampled_from([-1, 2]))
def test_a_batch_joined_from_its_groups(batch, bos, eos):
    # encode_batch's flat result: each text's units, in order, whatever
    # group they ran in, with BOS/EOS around the whole text.
    docs, results, owners = batch
    head, tail = [bos] if bos >= 0 else [], [eos] if eos >= 0 else []
    expected = [head + d + tail for d in docs]
    ids, starts = as_id_buffers(*join_flat(results, owners, len(docs), bos, eos))
    assert list(ids) == [i for d in expected for i in d]
    assert list(starts) == _offsets(map(len, expected))


def test_a_malformed_batch_result_is_refused():
    good = (bytearray(array("I", [5, 6])), bytearray(array("q", [0, 1, 2])))
    cases = [
        ([good], None, 3, "2 units for 3 texts"),
        ([good], [[0]], 2, "has 2 units, its owners 1"),
        ([good], [[0, 2]], 2, "belongs to text 2 of 2"),
        ([good], [[0, 1], [1]], 2, "2 owner lists for 1 results"),
        ([(bytearray(array("I", [5])), bytearray(array("q", [0, 2])))], None, 1, "not a stretch"),
        ([(bytearray(b"\x00" * 3), bytearray(array("q", [0])))], None, 0, "whole uint32 ids"),
    ]
    for results, owners, n, message in cases:
        with pytest.raises(ValueError, match=message):
            join_flat(results, owners, n, 1, -1)


def test_malformed_offsets_are_refused():
    ids = array("I", [5, 6, 7])
    for bad in ([0, 4], [2, 1], [-1, 2], []):
        with pytest.raises(ValueError):
            ids_around(ids, array("q", bad), 1, 2)
    with pytest.raises(ValueError):
        megatron_pointers(b"\x01\x00\x00", 2, 0)  # not whole int32s
    with pytest.raises(OverflowError):
        lengths_le32(array("q", [0, 1 << 31]))
    for kernel in (lengths_le32, lambda offsets: ends_le64(offsets, 0)):
        with pytest.raises(ValueError, match="at least the end"):
            kernel(array("q"))
    with pytest.raises(ValueError):
        counting_le64(0, -1)


def test_output_types_of_the_formats():
    assert (UINT16.name, UINT16.descr, UINT16.itemsize, UINT16.limit) == ("uint16", "<u2", 2, 65535)
    assert (UINT32.name, UINT32.descr, UINT32.itemsize, UINT32.limit) == ("uint32", "<u4", 4, (1 << 32) - 1)
    assert (INT32.name, INT32.descr, INT32.itemsize, INT32.limit) == ("int32", "<i4", 4, (1 << 31) - 1)


@pytest.mark.parametrize("fmt", ["npy", "bin", "ds"])
def test_an_id_the_output_cannot_hold_is_an_error_naming_it_and_leaves_nothing(tmp_path, fmt):
    out = ArrayOutput(str(tmp_path / f"o.{fmt}"), fmt, UINT16, None, {"format": fmt})
    try:
        with pytest.raises(OutputError, match="token id 70000 does not fit uint16"):
            out.write(array("I", [1, 2, 70000]), array("q", [0, 2, 3]), [1, 2], 2)
    finally:
        out.discard()
    assert list(tmp_path.iterdir()) == []


def test_a_document_past_megatrons_int32_lengths_is_an_error(tmp_path):
    out = ArrayOutput(str(tmp_path / "o.bin"), "bin", UINT16, None, {"format": "bin"})
    try:
        # Offsets that say 2^31 ids (the ids buffer itself is short: the
        # length is refused first).
        with pytest.raises(OutputError, match="more than 2.31-1 tokens"):
            out.write(array("I", [1]), array("q", [0, 1 << 31]), [1], 1)
    finally:
        out.discard()
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=examples(300), deadline=None)
@given(docs=st.lists(st.lists(st.integers(0, (1 << 32) - 1), max_size=8), max_size=30), skip=st.integers(0, 3))
def test_text_lines_of_decimal_ids(docs, skip):
    # What the txt and jsonl outputs wrote with str() and join, a line a document.
    flat = array("I", [i for d in docs for i in d])
    offsets = memoryview(array("q", _offsets(map(len, docs))))[min(skip, len(docs)):]
    kept = docs[min(skip, len(docs)):]
    assert bytes(format_ids(flat, offsets, False)) == "".join(" ".join(map(str, d)) + "\n" for d in kept).encode()
    assert bytes(format_ids(flat, offsets, True)) == "".join(
        json.dumps(d, separators=(",", ":")) + "\n" for d in kept
    ).encode()


def test_text_lines_refuse_malformed_offsets():
    with pytest.raises(ValueError, match="at least the end"):
        format_ids(array("I"), array("q"), False)
    with pytest.raises(ValueError, match="not a stretch"):
        format_ids(array("I", [1, 2]), array("q", [0, 3]), True)
