"""benchmarks/cli_ab.py: a small run of one build against itself, and the
report of builds whose outputs differ.

    python -m pytest benchmarks/test_cli_ab.py

The runs check that the script works and what it prints, not how fast anything is.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cli_ab  # noqa: E402

ROOT = HERE.parent


@pytest.mark.parametrize("fmt", cli_ab.FORMATS)
def test_a_build_against_itself(capsys, fmt):
    rc = cli_ab.main([str(ROOT), str(ROOT), "--runs", "2", "--format", fmt])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0, out
    assert out[0].startswith(f"en_botchan.txt (") and out[0].endswith(f"-> .{fmt}, 2 thread(s), 2 runs of each")
    for line, name in zip(out[2:4], ("before", "after")):
        assert line.startswith(name)
        best, median = map(float, line.split()[-2:])
        assert 0 < best <= median
    assert out[4].startswith("before/after, median of the rounds: ")


def test_builds_whose_outputs_differ_are_not_timed(tmp_path, capsys):
    # A "build" whose command writes other bytes under the output's name.
    fake = tmp_path / "fake" / "spmbpe"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text(
        "import sys\nout = sys.argv[sys.argv.index('-o') + 1]\nopen(out, 'wb').write(b'not ids')\n"
    )
    rc = cli_ab.main([str(ROOT), str(tmp_path / "fake"), "--runs", "1"])
    assert rc == 1
    assert capsys.readouterr().out.strip() == "en_botchan.txt: the two builds wrote different outputs; not timed"


def test_bad_arguments_are_refused(tmp_path):
    for argv in ([str(ROOT), str(ROOT), "--runs", "0"], [str(ROOT), str(ROOT), "--file", str(tmp_path / "none.txt")]):
        with pytest.raises(SystemExit):
            cli_ab.main(argv)
