"""benchmarks/targets.py: its summary, and every section once on a tiny input.

    python -m pytest benchmarks/test_targets.py

The run checks that the command works end to end (this build against itself as
the base, 20 KB of each file), not how fast anything is.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import targets  # noqa: E402

ROOT = HERE.parent
CORPUS = ROOT / "tests" / "data" / "corpus"


def test_the_summary_marks_each_figure_against_its_goal(capsys):
    s = targets.Summary()
    s.add("a", "f", "x / y", 2.6, 2.5)
    s.add("b", "f", "x / y", 1.2, 1.0, at_least=False)
    s.add("c", "f", "x / y", None, 2.5, note="no --base given")
    s.add("d", "f", "x / y", 1.1, None)
    assert [r["met"] for r in s.rows] == [True, False, None, None]
    s.table(markdown=True)
    out = capsys.readouterr().out
    assert "| a | f | x / y | 2.60x | - | >= 2.5x | MET |" in out
    assert "| b | f | x / y | 1.20x | - | <= 1x | NOT MET |" in out
    assert "not measured" in out and "| d | f | x / y | 1.10x | - | - | - |" in out


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_every_section_on_a_tiny_input(tmp_path, capsys):
    pytest.importorskip("sentencepiece")
    pytest.importorskip("numpy")
    def head(name: str) -> bytes:  # about 40 KB, cut at a line end
        data = (CORPUS / name).read_bytes()
        return data[:data.rindex(b"\n", 0, 40_000) + 1]

    large = tmp_path / "large"
    large.mkdir()
    (large / "en_man.txt").write_bytes(head("en_botchan.txt"))
    (large / "code_stdlib.txt").write_bytes(head("code_py.txt"))
    cold = tmp_path / "cold.txt"
    cold.write_bytes(head("multi_de.txt"))
    out = tmp_path / "targets.json"
    status = targets.main(["--corpus", str(large), "--cold", str(cold), "--base", str(ROOT), "--repeat", "1",
                           "--limit-mb", "0.02", "--merge-slices", "2", "--columns", "sentencepiece",
                           "--markdown", "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    report = json.loads(out.read_text(encoding="utf-8"))
    targets_seen = {r["target"] for r in report["summary"]}
    assert {"merge alone (cache 0, numpy 1t)", "warm numpy 1t / C floor (CPU time)",
            "per line 1t / fastest agreeing peer", "batch 2t / 1t" if report["header"]["threads"] == 2 else
            f"batch {report['header']['threads']}t / 1t", "main job: CLI / in-process read+numpy+write",
            "memory loaded / sentencepiece's"} <= targets_seen
    floors = [r for r in report["summary"] if r["target"].startswith("warm numpy")]
    assert [r["file"] for r in floors] == ["en_man.txt", "code_stdlib.txt", "cold.txt"]
    assert all(r["ratio"] > 0 for r in floors)
    assert all(f["misses"] == 0 for f in report["floor"].values())
    assert report["job"]["concatenated_bytes"] == len(head("en_botchan.txt")) + len(head("code_py.txt"))
    assert "commit" in report["header"]["spmbpe"] and report["header"]["base"]
    assert "Issue 49's targets" in printed
