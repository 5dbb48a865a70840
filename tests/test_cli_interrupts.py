"""Ctrl-C at any moment of any command, its start-up included, ends the
program with status 130 and one short line at most: never a traceback
(docs/cli.md; issue 48, item 4).

The program (its console script or ``python -m spmbpe``) runs under an
audit hook that sends it SIGINT as it imports its N-th module, counted
from the moment its entry point, spmbpe/__main__.py, starts: the first
milliseconds of the program's own code (N = 1), the middle of its imports,
and the imports of the tokenizer; and at timed moments of a command
reading its input (sent from here).  Before spmbpe/__main__.py starts, the
interpreter's own start-up (site, the environment's .pth files) is
CPython's, whose KeyboardInterrupt no program can catch.

The runs go in parallel, a few at a time: each is a fresh interpreter."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent

_CHILD = r"""
import os, runpy, signal, sys

entry, at, ready, argv = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
MAIN = os.path.join("spmbpe", "__main__.py")
state = {"started": False, "imports": 0}


def hook(event, args):
    if event == "exec" and not state["started"]:
        state["started"] = getattr(args[0], "co_filename", "").endswith(MAIN)
    elif event == "import" and state["started"]:
        state["imports"] += 1
        if state["imports"] == 1 and ready >= 0:
            os.write(ready, b"r")  # the program's own code runs: the timed moments count from here
        if state["imports"] == at:
            os.kill(os.getpid(), signal.SIGINT)


sys.addaudithook(hook)
if entry == "-m":  # python -m spmbpe
    sys.argv = ["spmbpe", *argv]
    runpy.run_module("spmbpe", run_name="__main__", alter_sys=True)
else:  # the console script, as its interpreter runs it
    sys.argv = [entry, *argv]
    runpy.run_path(entry, run_name="__main__")
"""

# Each command reads standard input (kept open: the command waits for
# more), but info, which reads a model and ends.
COMMANDS = {
    "encode": (["encode"], b"Hello world\n"),
    "count": (["count"], b"Hello world\n"),
    "decode": (["decode"], b"22557 1526\n"),
    "info": (["info"], None),
}


def _run(entry, args, stdin, at=0, after=None):
    """The program under the audit hook: SIGINT at its `at`-th import, or
    `after` seconds after its own code started (None: not at all)."""
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(entry), str(at), str(write_end), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
            pass_fds=(write_end,),
        )
    finally:
        os.close(write_end)
    try:
        if stdin is not None:
            proc.stdin.write(stdin)
            proc.stdin.flush()
        if after is not None:
            ready, _, _ = select.select([read_end], [], [], 120)
            assert ready and os.read(read_end, 1) == b"r", "the program did not start"
            time.sleep(after)
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=120)  # standard input still open: it ends by the signal, or not at all
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(read_end)
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err.decode("utf-8", "replace")


def _runs():
    """(command, entry, at, after) of every run: the first import in both
    entry points, later imports and timed moments in one or the other."""
    runs = []
    for n, command in enumerate(COMMANDS):
        runs += [(command, "script", 1, None), (command, "-m", 1, None)]
        for k, at in enumerate((12, 50)):
            runs.append((command, ("script", "-m")[(n + k) % 2], at, None))
        if COMMANDS[command][1] is not None:
            for k, after in enumerate((0.0, 0.3)):
                runs.append((command, ("-m", "script")[(n + k) % 2], 0, after))
    # And no signal: the runs above end by theirs, not by the harness.
    return runs + [("encode", "script", 0, None), ("info", "-m", 0, None)]


@pytest.fixture(scope="module")
def results(console_script):
    def one(run):
        command, entry, at, after = run
        args, stdin = COMMANDS[command]
        return run, _run(console_script if entry == "script" else "-m", args, stdin, at, after)

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(one, _runs()))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_interrupt_at_any_moment_is_one_line_and_status_130(results, command):
    checked = 0
    for (name, entry, at, after), (code, out, err) in results:
        if name != command or (at, after) == (0, None):
            continue
        where = f"{command} ({entry}), SIGINT at " + (f"import {at}" if at else f"{after} s")
        assert "Traceback" not in err and "Exception ignored" not in err, f"{where}:\n{err}"
        assert code == 130, f"{where}: exit status {code}\n{err}"
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("spmbpe: interrupted"), f"{where}: {err!r}"
        checked += 1
    assert checked >= 4


def test_without_a_signal_the_same_runs_end_normally(results):
    quiet = {name: (code, out, err) for (name, _, at, after), (code, out, err) in results if (at, after) == (0, None)}
    assert quiet["encode"] == (0, b"22557 1526\n", "")
    code, out, err = quiet["info"]
    assert code == 0 and b"mistral-v1" in out and err == "", err
