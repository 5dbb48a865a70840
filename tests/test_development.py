"""The developers' commands: README.md's Development section gives the quick
run and the long run of the suite, docs/development.md gives the same
commands, CI (.ci/run) runs each of them, and the long run is the one
option and marker that conftest.py and pyproject.toml define."""

from __future__ import annotations

import pathlib
import re
import shlex
import sys

import pytest

import long_run

ROOT = pathlib.Path(__file__).resolve().parent.parent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")


def _sh_block(markdown: str, heading: str) -> list:
    """The commands of the first ```sh block under `heading`, comments cut."""
    section = markdown.split(heading, 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


def _ci_commands() -> list:
    """The commands .ci/run runs (its lines that are not comments, echo or set-up)."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith(("#", "echo", "set ", "cd "))]


README_COMMANDS = _sh_block((ROOT / "README.md").read_text(encoding="utf-8"), "## Development")


def test_the_readme_gives_the_quick_run_and_the_long_run():
    tests = [c for c in README_COMMANDS if c.startswith("python -m pytest")]
    assert tests == ["python -m pytest", "python -m pytest --long"], README_COMMANDS


def test_ci_runs_every_command_of_the_readme():
    ci = _ci_commands()
    for command in README_COMMANDS:
        assert command in ci, (command, ci)


def test_docs_development_gives_the_readmes_commands():
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    assert _sh_block(text, "## Set-up") == README_COMMANDS


def test_the_long_marker_is_registered_in_pyproject():
    with open(ROOT / "pyproject.toml", "rb") as f:
        options = tomllib.load(f)["tool"]["pytest"]["ini_options"]
    assert any(m.split(":")[0].strip() == "long" for m in options["markers"]), options
    # The quick run is the default: nothing in addopts selects otherwise.
    assert "-m" not in shlex.split(options.get("addopts", "")), options


def test_the_long_option_sets_the_run(pytestconfig):
    assert pytestconfig.getoption("long") is long_run.LONG
    from hypothesis import settings

    assert settings.default.max_examples == (100 if long_run.LONG else 10)


def test_the_quick_run_leaves_out_the_long_marked_tests(pytestconfig):
    import test_packaging

    assert test_packaging.pytestmark.name == "long"
    if not long_run.LONG:
        assert long_run.examples(300) == 30 and long_run.examples(60, quick=3) == 3
    else:
        assert long_run.examples(300) == 300 and long_run.examples(60, quick=3) == 60


def test_sample_keeps_every_kind_and_the_ends():
    rows = [(kind, i) for kind in "abc" for i in range(50)] + [("d", 0)]
    picked = long_run.sample(rows, 10, kind=lambda r: r[0])
    if long_run.LONG:
        assert picked == rows
        return
    assert {r[0] for r in picked} == set("abcd")
    assert rows[0] in picked and rows[-1] in picked and ("a", 49) in picked
    assert picked == sorted(picked, key=rows.index) and len(picked) <= 13
    assert picked == long_run.sample(rows, 10, kind=lambda r: r[0])


def test_combinations_give_every_value_of_every_dimension():
    dims = (["x", "y", "z", "w"], [1, 2, 3, 4], list("abcdefgh"))
    rows = long_run.combinations(*dims)
    if long_run.LONG:
        assert len(rows) == 4 * 4 * 8
    else:
        assert len(rows) == 8
        assert len(set((r[0], r[1]) for r in rows)) == 8  # not the same pairs twice
    for d, dim in enumerate(dims):
        assert {r[d] for r in rows} == set(dim)
