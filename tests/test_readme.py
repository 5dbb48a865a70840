"""README.md as a newcomer runs it after ``pip install .`` alone (issue 48,
item 2): every line of its Python examples and every ``$ spmbpe`` line of
its command-line example runs where NumPy cannot be imported, but the lines
whose comment says they need NumPy; those run here, with NumPy.  A result
the README shows (a comment that starts with a Python literal, the lines
under a ``$`` command) is the result.  (The install and development
commands are the set-up this suite itself runs in.)"""

from __future__ import annotations

import ast
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"
README = (ROOT / "README.md").read_text(encoding="utf-8")
NEEDS_NUMPY = re.compile(r"needs NumPy")

# A folder on PYTHONPATH whose "numpy" cannot be imported: the base install.
_BLOCKER = 'raise ImportError("NumPy is not installed (tests/test_readme.py)")\n'


def _blocks(language):
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.S | re.M)


def _statements(block):
    """(source, comment on its last line, needs NumPy) of each statement."""
    comments = {}
    for token in tokenize.generate_tokens(io.StringIO(block).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string[1:].strip()
    for node in ast.parse(block).body:
        comment = comments.get(node.end_lineno, "")
        yield ast.get_source_segment(block, node), comment, bool(NEEDS_NUMPY.search(comment))


def _shown(comment):
    """The value a comment shows, as its text: the comment's longest prefix
    that is a Python literal (``[1, 22557, 1526]   (BOS, as the model
    says)``), or None."""
    for end in range(len(comment), 0, -1):
        try:
            ast.literal_eval(comment[:end])
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        return comment[:end]
    return None


def _python_examples():
    """The README's Python lines as one program that runs them in order and
    checks each shown result; `numpy`: whether the lines that need it run."""
    steps = []
    for block in _blocks("python"):
        for source, comment, needs_numpy in _statements(block):
            steps.append((source, comment, needs_numpy))
    assert sum(1 for *_, n in steps if n) >= 2 and len(steps) >= 10, steps
    return steps


_RUN_STEPS = """
import ast, json, sys
steps, with_numpy = json.loads(sys.argv[1]), sys.argv[2] == "1"
space, ran = {}, 0
for source, shown in steps:
    node = ast.parse(source).body[0]
    if isinstance(node, ast.Expr):
        value = eval(compile(ast.Expression(node.value), "README.md", "eval"), space)
        if shown is not None:
            assert value == ast.literal_eval(shown), f"README.md: {source} gives {value!r}, not {shown}"
    else:
        exec(compile(source, "README.md", "exec"), space)
    ran += 1
print(ran)
"""


def _run_python(steps, with_numpy, env):
    encoded = json.dumps([(source, _shown(comment)) for source, comment, _ in steps])
    result = subprocess.run([sys.executable, "-c", _RUN_STEPS, encoded, "1" if with_numpy else "0"],
                            capture_output=True, env=env, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    return int(result.stdout)


def _without_numpy(tmp_path):
    blocker = tmp_path / "no-numpy"
    (blocker / "numpy").mkdir(parents=True)
    (blocker / "numpy" / "__init__.py").write_text(_BLOCKER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(blocker), os.environ.get("PYTHONPATH")])))
    check = subprocess.run([sys.executable, "-c", "import numpy"], env=env, capture_output=True, timeout=60)
    assert check.returncode != 0 and b"NumPy is not installed" in check.stderr
    return env


def test_the_python_examples_run_without_numpy_but_the_lines_that_say_they_need_it(tmp_path):
    steps = _python_examples()
    env = _without_numpy(tmp_path)
    base = [s for s in steps if not s[2]]
    assert _run_python(base, False, env) == len(base)


def test_the_lines_that_need_numpy_run_with_it():
    steps = _python_examples()
    assert _run_python(steps, True, dict(os.environ)) == len(steps)


def test_the_command_line_example_runs_without_numpy(tmp_path, console_script):
    """Each ``$`` line of the example, run by /bin/sh in a folder holding
    the files it names, with the installed program first on PATH (found
    beside this interpreter, not on the caller's PATH)."""
    (block,) = [b for b in _blocks("sh") if "$ spmbpe" in b]
    commands = []  # (command, the output the README shows under it)
    for line in block.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        else:
            commands[-1][1].append(line)
    assert len(commands) >= 6, commands

    work = tmp_path / "work"
    (work / "big").mkdir(parents=True)
    shutil.copyfile(DATA / "mistral-v3.model", work / "tokenizer.model")  # not the default mistral-v1
    shutil.copyfile(DATA / "ggml-vocab-llama-spm.gguf", work / "llama.gguf")
    lines = (DATA / "corpus" / "en_botchan.txt").read_text(encoding="utf-8").splitlines()
    docs, more = lines[:40], lines[40:60] + ["", "a </s> b"]
    (work / "docs.txt").write_text("\n".join(docs) + "\n", encoding="utf-8")
    (work / "more.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps({"text": t}) + "\n" for t in more).encode()))
    for name, part in (("a.jsonl", lines[60:90]), ("b.jsonl", lines[90:100])):
        (work / "big" / name).write_text("".join(json.dumps({"text": t}) + "\n" for t in part), encoding="utf-8")

    env = _without_numpy(tmp_path)
    env["PATH"] = str(console_script.parent)
    printed = {}  # each spmbpe command's standard output
    for command, shown in commands:
        result = subprocess.run(["/bin/sh", "-c", command], capture_output=True, cwd=work, env=env, timeout=120)
        assert result.returncode == 0, (command, result.stderr.decode())
        assert "Traceback" not in result.stderr.decode()
        if shown:
            assert result.stdout.decode().splitlines() == shown, command
        printed[command.split("spmbpe ", 1)[1].split()[0]] = result.stdout.decode()

    # What the lines did: the arrays decode to the documents (with the model
    # they were written with), the sharded output is in data/, count counted.
    assert printed["decode"].split("\n")[:-1] == docs + more
    assert sorted(p.name for p in (work / "data").iterdir()) == [
        "train-00000.bin", "train-00000.idx", "train.bin.meta.json"]
    assert json.loads((work / "data" / "train.bin.meta.json").read_text())["documents"] == 40
    count = printed["count"].split("\n")[1].split()
    assert count[1:] == [str(len(docs)), str(sum(len(t.encode()) for t in docs)), "docs.txt"]
    assert "llama" in printed["info"]
