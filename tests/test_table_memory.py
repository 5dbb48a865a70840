"""The tables the core builds for merging are sized by what they hold.

Counted in slots (spmbpe._testing.table_sizes), not in resident memory,
which is noisy: the table of characters was once sized by the bytes of the
pieces (524,288 slots, 4 MB, for Mistral's 3,171 characters), and a
tokenizer.json's tokenizer kept its merge rules twice (the planner's spec).
"""

from __future__ import annotations

import gc
from array import array

import pytest

import spmbpe
from spmbpe import _testing
from conftest import DATA_DIR


@pytest.mark.parametrize("name", ["mistral-v1.model", "mistral-v1.tokenizer.json"])
def test_tables_are_at_most_four_slots_an_entry(name):
    tok = spmbpe.load(str(DATA_DIR / name))
    tok.encode("hello world")  # (a .model's tables are built by the first encode)
    sizes = _testing.table_sizes(tok._core)
    assert set(sizes) >= {"vocab", "chars", "pairs"}
    assert sizes["chars"][1] > 1000  # (Mistral's: characters of 2+ bytes)
    for table, (slots, entries) in sizes.items():
        assert slots <= 4 * entries + 64, (table, slots, entries)


def test_tokenizer_json_keeps_its_rules_once():
    # The core's pair table is the rules' copy (Tokenizer._build); no array
    # of the rules' length stays in Python.
    tok = spmbpe.load(str(DATA_DIR / "mistral-v1.tokenizer.json"))
    n_rules = len(tok._core.ranked_merges()[0])
    gc.collect()
    kept = [o for o in gc.get_objects()
            if isinstance(o, tuple) and any(isinstance(v, array) and len(v) == n_rules for v in o)]
    assert not kept
