"""benchmarks/ab_builds.py: a small run of one build against itself, and the
report of builds whose ids differ.

    python -m pytest benchmarks/test_ab_builds.py

The runs check that the script works and what it prints, not how fast anything is.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ab_builds  # noqa: E402

ROOT = HERE.parent


@pytest.mark.parametrize("mode", ab_builds.MODES)
def test_a_build_against_itself(capsys, mode):
    rc = ab_builds.main([str(ROOT), str(ROOT), "--mb", "0.05", "--slices", "3", "--passes", "2", "--mode", mode])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0, out
    assert out[0].startswith(f"en_botchan.txt, {mode}, 3 slices, 2 pass(es)")
    rows = [line.split() for line in out[2:]]
    assert [row[0] for row in rows] == ["0", "1"]
    for row in rows:
        assert float(row[1]) > 0 and float(row[2]) > 0
        assert row[4].startswith("(") and float(row[3]) > 0  # median ratio, then (total)


def test_the_cache_capacity_is_set_in_both_workers(capsys):
    """--cache 0: both tokenizers merge every chunk (the header gives what
    each worker's tokenizer holds); a capacity below 0 is refused."""
    rc = ab_builds.main([str(ROOT), str(ROOT), "--mb", "0.02", "--slices", "2", "--passes", "1", "--cache", "0"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0 and out[0].startswith("en_botchan.txt, line, cache 0/0, 2 slices")
    args = ab_builds.parse([str(ROOT), str(ROOT), "--mb", "0.01", "--cache", "0"])
    for cache, reported in ((0, "0"), (1000, "1536"), (None, "98304")):
        args.cache = cache
        proc = ab_builds.start(str(ROOT), args)
        assert proc.cache_capacity == reported
        proc.stdin.close()
        proc.wait()
    with pytest.raises(SystemExit):
        ab_builds.main([str(ROOT), str(ROOT), "--cache", "-1"])


@pytest.mark.parametrize("mode", ["line", "batch1"])
def test_a_special_policy_is_timed_through_encode(tmp_path, capsys, mode):
    """--special P: encode(line, special=P) per line (encode_batch's special=
    in batch).  Lines that spell a control token of a GGUF (which reads them
    with special="all") encode with "all" and with encode_ordinary, and make
    a worker stop with "raise", which is named."""
    lines = tmp_path / "lines.txt"
    lines.write_text("plain text\na </s> b\nmore text\n", encoding="utf-8")
    base = [str(ROOT), str(ROOT), "--file", str(lines), "--model", str(ROOT / "tests" / "data" / "ggml-vocab-llama-spm.gguf"),
            "--slices", "1", "--passes", "1", "--mode", mode]
    assert ab_builds.main(base + ["--special", "all"]) == 0
    assert capsys.readouterr().out.startswith(f"lines.txt, {mode}, special=all, 1 slices")
    assert ab_builds.main(base) == 0
    assert capsys.readouterr().out.startswith(f"lines.txt, {mode}, 1 slices")
    with pytest.raises(SystemExit, match="a worker stopped at slice 0"):
        ab_builds.main(base + ["--special", "raise"])


def test_builds_whose_ids_differ_are_reported(monkeypatch, capsys):
    """The workers' CRCs of each slice's ids are compared: a slice where
    they differ is named and the exit status is 1."""

    class Worker:
        def __init__(self, crc_of):
            self.crc_of = crc_of
            self.stdin = None

        def wait(self):
            return 0

    def fake_start(tree, args):
        return Worker((lambda j: 7) if tree == "before" else (lambda j: 7 + (j % args.slices == 1)))

    monkeypatch.setattr(ab_builds, "start", fake_start)
    monkeypatch.setattr(ab_builds, "turn", lambda proc, j: (0.01, 1000, proc.crc_of(j)))
    assert ab_builds.main(["before", "after", "--slices", "3", "--passes", "2"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "ids differ between the builds on slice(s) [1]"
    monkeypatch.setattr(ab_builds, "turn", lambda proc, j: (0.01, 1000, 7))
    assert ab_builds.main(["before", "after", "--slices", "3", "--passes", "1"]) == 0


def test_a_directory_without_a_build_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="spmbpe"):
        ab_builds.main([str(tmp_path), str(ROOT), "--mb", "0.01", "--slices", "1", "--passes", "1"])


def test_a_relative_file_is_read_from_the_callers_directory(capsys, monkeypatch):
    """The workers run from the root directory; a relative --file is the
    caller's."""
    monkeypatch.chdir(ROOT)
    rc = ab_builds.main([str(ROOT), str(ROOT), "--file", "tests/data/corpus/multi_ja.txt", "--mb", "0.02",
                         "--slices", "2", "--passes", "1"])
    assert rc == 0 and capsys.readouterr().out.startswith("multi_ja.txt, line, 2 slices")
    with pytest.raises(SystemExit):
        ab_builds.main([str(ROOT), str(ROOT), "--file", "no-such-file.txt"])
