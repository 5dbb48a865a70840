"""benchmarks/line_floor.py: a small run, and the arithmetic of its summary.

    python -m pytest benchmarks/test_line_floor.py

The run checks that the script works and what it prints, not how fast anything is.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import line_floor  # noqa: E402
from _common import optional_import  # noqa: E402


def test_a_small_run(capsys):
    assert line_floor.main(["--mb", "0.02", "--repeat", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].startswith("# en_botchan.txt: ") and "best of 1, one thread" in out[2]
    names = [row.split("  ")[0].strip() for row in out[4:] if row and not row[0].isdigit()]
    expected = ["list", "spmbpe line", "spmbpe batch"]
    if optional_import("gigatoken") is not None:
        expected.append("gigatoken line")
    assert names[:len(expected)] == expected
    for row in out[4:4 + len(expected)]:
        assert float(row.split()[-1]) > 0 and float(row.split()[-2]) > 0


def test_the_budget_of_the_target():
    # 1000 ns a line for the peer: 5x leaves 200 ns, of which a 100 ns floor is half.
    rows = line_floor.report({"list": 100e-9, "spmbpe line": 400e-9, "spmbpe batch": 300e-9,
                              "gigatoken line": 1000e-9}, nbytes=500, n=10)
    assert rows[1].split() == ["list", "100", "500.0"]  # 50 bytes a line in 100 ns
    assert rows[-1] == ("5x gigatoken per line leaves 200 ns a line; the list floor alone is 100 ns (0.50 of it); "
                        "spmbpe per line takes 400 ns (2.50x gigatoken), in batch 300 ns")
    # Without the peer, no budget.
    assert len(line_floor.report({"list": 1e-7, "spmbpe line": 4e-7, "spmbpe batch": 3e-7}, 500, 10)) == 4
