"""benchmarks/make_cold_corpus.py: its sampling, interleaving and rarity figures,
and a run over a small tree laid out like the packages' files.

    python -m pytest benchmarks/test_make_cold_corpus.py
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_cold_corpus as mcc  # noqa: E402


def test_only_newline_breaks_lines():
    assert mcc.clean("a\r\nb\rc\x0cd\u2028e\n\n\n\nf") == "a\nb\nc\nd\ne\n\nf"
    assert mcc.clean("x\x00y").splitlines() == ["xy"]


def test_blocks_end_at_line_ends_and_keep_every_character():
    text = "".join(f"line {i}\n" for i in range(1000))
    parts = mcc.blocks(text, 100)
    assert "".join(parts) == text
    assert all(p.endswith("\n") for p in parts)


def test_a_large_text_is_sampled_evenly_and_a_small_one_kept_whole():
    big = "".join(f"{i:06d} word\n" for i in range(100_000))  # 1.2 MB
    small = "tiny\n"
    out = mcc.sample([big, small], 120_000)
    assert small in out
    size = sum(len(b) for b in out)
    assert 100_000 < size < 200_000
    firsts = [int(b[:6]) for b in out if b != small]
    assert firsts[0] < 40_000 and firsts[-1] > 60_000  # spread over the whole text


def test_budgets_give_a_short_kinds_leftover_to_the_others():
    texts = {k: ["x" * 10] for k in mcc.KINDS}
    texts["definitions"] = ["d" * 10_000]
    texts["code"] = ["c" * 10_000]
    shares = dict(zip(texts, mcc.budgets(texts, 1000)))
    assert shares["quotations"] == shares["wordlists"] == shares["names"] == 10
    assert shares["definitions"] + shares["code"] >= 960
    assert shares["definitions"] > shares["code"]


def test_interleaving_spreads_every_kind_over_the_file():
    kinds = {"a": [f"a{i}\n" for i in range(100)], "b": [f"b{i}\n" for i in range(10)]}
    text = mcc.interleave(kinds)
    assert sorted(text.splitlines()) == sorted(x.strip() for bs in kinds.values() for x in bs)
    half = text[:len(text) // 2]
    assert 3 <= half.count("b") <= 7


def test_rarity_counts_first_sightings_in_reading_order():
    r = mcc.rarity("the cat\nthe dog\nthe cat\n")
    # chunks: (first, "the") x3, " cat" x2, " dog": 3 new of 6
    assert r["chunks"] == 6 and abs(r["new_chunks"] - 0.5) < 1e-9
    assert abs(r["new_words"] - 0.5) < 1e-9


def test_a_run_over_a_small_tree(tmp_path, capsys):
    root = tmp_path / "root"
    (root / "usr/share/dictd").mkdir(parents=True)
    (root / "usr/share/dictd/wn.dict.dz").write_bytes(gzip.compress(b"cat\n  n 1: a feline\n" * 50))
    (root / "usr/share/dict").mkdir(parents=True)
    (root / "usr/share/dict/words").write_text("".join(f"w{i}\n" for i in range(500)), encoding="utf-8")
    (root / "usr/share/games/fortunes/de").mkdir(parents=True)
    (root / "usr/share/games/fortunes/de/zitate").write_text("Ein Satz.\n%\nNoch einer.\n", encoding="utf-8")
    (root / "usr/share/games/fortunes/de/zitate.dat").write_bytes(b"\x00\x01")
    (root / "usr/include").mkdir(parents=True)
    (root / "usr/include/x.h").write_text("#define X 1\n", encoding="utf-8")
    out = tmp_path / "out"
    assert mcc.main([str(out), "--root", str(root), "--mb", "0.01"]) == 0
    text = (out / "cold.txt").read_text(encoding="utf-8")
    assert "w0\n" in text and "a feline" in text and "Ein Satz." in text and "#define X 1" in text
    assert "\x00\x01" not in text
    report = json.loads((out / "cold.json").read_text(encoding="utf-8"))
    assert set(report["kinds"]) == set(mcc.KINDS)
    assert report["cold"]["chunks"] > 0
    assert "cold.txt" in capsys.readouterr().out
