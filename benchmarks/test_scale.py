"""benchmarks/scale.py: its slicing and id check, and one small run end to end.

    python -m pytest benchmarks/test_scale.py

The end-to-end run times spmbpe and sentencepiece on 50 KB of the small
corpus: it checks that the script works, not how fast anything is.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scale  # noqa: E402

CORPUS = HERE.parent / "tests" / "data" / "corpus"


def test_read_slice_cuts_at_a_line_end(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("first line\nsecond line\nthird\n", encoding="utf-8")
    assert scale.read_slice(str(path), 0) == "first line\nsecond line\nthird\n"
    assert scale.read_slice(str(path), 15) == "first line\n"
    assert scale.read_slice(str(path), 23) == "first line\nsecond line\n"


def test_read_slice_never_splits_a_character(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("\u00e9\u00e9\u00e9", encoding="utf-8")  # no line end: cut inside the text
    assert scale.read_slice(str(path), 3) == "\u00e9"


def test_sample_spreads_over_the_file():
    lines = [str(i) for i in range(100)]
    assert scale.sample_of(lines, 4) == ["0", "25", "50", "75"]
    assert scale.sample_of(lines[:3], 4) == ["0", "1", "2"]


def test_first_difference_names_the_text_and_leaves_out_spellings():
    texts = ["a", "b </s>", "c"]
    ref = [[1], [2, 3], [4]]
    assert scale._first_difference(texts, [[1], [2, 3], [4]], ref, ()) == (0, 0, "")
    differing, left_out, example = scale._first_difference(texts, [[1], [2, 9], [5]], ref, ())
    assert (differing, left_out) == (2, 0)
    assert example.startswith("text 2, token 1: [9] vs reference [3]")
    # A text holding a spelling the call reads as a special token is left out.
    assert scale._first_difference(texts, [[1], [2, 9], [4]], ref, ("</s>",)) == (0, 1, "")
    assert scale._first_difference(texts, [[1]], ref, ())[0] == 1  # a result missing


def _small_run(tmp_path, capsys, *args):
    """scale.main over the head of en_botchan.txt: (its JSON report, what it printed)."""
    out = tmp_path / "scale.json"
    status = scale.main(["--corpus", str(CORPUS), "--files", "en_botchan.txt", *args, "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    return json.loads(out.read_text(encoding="utf-8")), printed


def test_a_small_run_end_to_end(tmp_path, capsys):
    pytest.importorskip("sentencepiece")
    pytest.importorskip("numpy")
    report, printed = _small_run(tmp_path, capsys, "--limit-mb", "0.05", "--modes", "line,numpy,cli",
                                 "--columns", "sentencepiece", "--sample-lines", "200")
    fr = report["files"]["en_botchan.txt"]
    assert 45_000 < fr["bytes"] <= 50_000
    sp = next(k for k in report["columns"] if k.startswith("sentencepiece "))
    assert report["references"]["spm"] == sp
    # spmbpe agrees with sentencepiece in every mode, through the CLI too,
    # and is then timed; sentencepiece has no flat batch call.
    checks = fr["checks"]["spmbpe model"]
    assert set(checks) == {"line", "numpy", "cli"}
    assert all(c["differing"] == 0 and c["total"] >= 1 for c in checks.values()), checks
    assert set(fr["checks"][sp]) == {"line"}
    for key, mode in (("spmbpe model", "line"), ("spmbpe model", "numpy"), ("spmbpe model", "cli"), (sp, "line")):
        runs = fr["runs"][f"{key}|{mode}"]
        assert len(runs) == 1 and runs[0]["seconds"] > 0 and runs[0]["peak"] > 0
    assert fr["memory"]["spmbpe model"]["loaded"] > 0
    assert "per line: spmbpe model / fastest agreeing peer" in printed


def test_every_formats_memory_is_held_against_sentencepieces(tmp_path, capsys):
    pytest.importorskip("sentencepiece")
    report, _ = _small_run(tmp_path, capsys, "--limit-mb", "0.02", "--modes", "line",
                           "--columns", "sentencepiece,json", "--sample-lines", "100")
    sp = report["references"]["spm"]
    memory_rows = [row[1] for row in report["summary"] if row[1].startswith("memory loaded: ")]
    assert memory_rows == [f"memory loaded: spmbpe model / {sp}", f"memory loaded: spmbpe json / {sp}"]


def test_a_call_that_reads_special_tokens_is_checked_on_the_other_lines(tmp_path, capsys):
    # A call that reads special tokens (encode(special="all")) may read
    # "</s>" as the control piece where sentencepiece reads four characters:
    # that line is left out and counted, every other line must agree.
    pytest.importorskip("sentencepiece")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = ["plain text, the first line", "a line with </s> in it", "and a last line"]
    (corpus / "spec.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "scale.json"
    status = scale.main(["--corpus", str(corpus), "--modes", "line", "--columns", "model all",
                         "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    fr = json.loads(out.read_text(encoding="utf-8"))["files"]["spec.txt"]
    assert fr["checks"]["spmbpe model"]["line"]["left_out"] == 0
    check = fr["checks"]["spmbpe model all"]["line"]
    assert (check["differing"], check["left_out"], check["total"]) == (0, 1, 3)
    assert "1 text(s) holding <unk>/<s>/</s> left out" in printed
    assert fr["runs"]["spmbpe model all|line"][0]["seconds"] > 0


def test_a_columns_loop_gives_its_line_calls_ids():
    """Column.loop, the per-line loop scale.py and compare.py time, encodes
    as the column's own line call: with keep=True the same ids, text by
    text, for spmbpe's special="all" and every peer that has one installed
    (tokenizers, tokie)."""
    import _peers

    texts = [x for x in (CORPUS / "multi_ja.txt").read_text(encoding="utf-8").splitlines()[:40] if x.strip()]
    texts += ["  Hello world", "a <s> b"]
    peers, _ = _peers.peer_columns()
    cols = [c for c in peers if c.loop is not None]
    cols.append(_peers.spmbpe_column("json", "all", str(_peers.JSON)))
    for col in cols:
        tok = col.make()
        expected = [list(col.modes["line"](tok, x)) for x in texts]
        assert [list(ids) for ids in col.loop(tok, keep=True)(texts)] == expected, col.key
        assert col.loop(tok)(texts) is None, col.key
