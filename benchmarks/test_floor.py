"""benchmarks/floor.py and floor.c: the chunking, the id check, and one small run.

    python -m pytest benchmarks/test_floor.py

The run times spmbpe and the floor on 50 KB of the small corpus: it checks that
the program compiles, finds every chunk in its table and gives spmbpe's ids, not
how fast anything is.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import floor  # noqa: E402
from _common import MODEL, word_chunks  # noqa: E402

CORPUS = HERE.parent / "tests" / "data" / "corpus"


def test_a_chunk_starts_at_the_line_and_at_a_space_after_a_non_space():
    assert word_chunks("hello world") == [(True, "hello"), (False, " world")]
    assert word_chunks("  a  b c  ") == [(True, "  a"), (False, "  b"), (False, " c"), (False, "  ")]
    assert word_chunks("x\ty") == [(True, "x\ty")]


def test_the_table_gives_each_chunk_its_ids_with_the_dummy_prefix(tmp_path):
    spmbpe = pytest.importorskip("spmbpe")
    tok = spmbpe.load(MODEL)
    lines = ["a  b ", "b a"]
    keys = list(floor.chunk_table(lines))
    assert keys == [(True, "a"), (False, "  b"), (False, " "), (True, "b"), (False, " a")]
    floor.write_table(tmp_path / "t.bin", tok, keys)
    raw = (tmp_path / "t.bin").read_bytes()
    assert raw[:8] == b"SPMFLR01" and int.from_bytes(raw[8:12], "little") == len(keys)
    # The chunks' ids, concatenated per line, are the lines' ids.
    assert tok.encode_ordinary("a") + tok.encode_ordinary(" b") + [tok.piece_to_id("\u2581")] == \
        tok.encode_ordinary("a  b ")


def test_differing_lines_are_found_whatever_their_lengths():
    np = pytest.importorskip("numpy")
    a_ids, a_starts = np.array([1, 2, 3, 4, 5]), np.array([0, 2, 2, 5])
    assert floor.differing_lines(a_ids, a_starts, a_ids.copy(), a_starts.copy()) == []
    assert floor.differing_lines(a_ids, a_starts, np.array([1, 2, 3, 5, 4]), a_starts) == [2]
    assert floor.differing_lines(a_ids, a_starts, np.array([1, 2, 9, 3, 4, 5]), np.array([0, 3, 3, 6])) == [0]
    assert floor.differing_lines(a_ids, a_starts, np.array([2, 1, 3, 4, 5]), a_starts) == [0]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_a_small_run_end_to_end():
    pytest.importorskip("numpy")
    spmbpe = pytest.importorskip("spmbpe")
    r = floor.measure(CORPUS / "en_botchan.txt", lambda: spmbpe.load(MODEL), mb=0.05, repeat=1)
    assert r["misses"] == 0
    assert r["differing_lines"] == 0, r["example"]
    assert 45_000 < r["bytes"] <= 50_000 and r["floor_mbs"] > 0 and r["spmbpe_mbs"] > 0
    assert r["ratio"] == pytest.approx(r["spmbpe_mbs"] / r["floor_mbs"])
