"""The package's layers point one way (docs/architecture.md, "Layers").

* Every module imports on its own, in a fresh interpreter (no module works
  only because another one happened to be imported first).
* The import graph between spmbpe's modules has no cycle.  Every import
  counts: at module level, inside a function (a lazy import is still a
  dependency) and under ``TYPE_CHECKING`` (a type-only cycle is still two
  modules that cannot be read apart).
* No module imports another module's private (``_``-prefixed) names.
"""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys
from typing import Dict, List, Set, Tuple

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "spmbpe"

# Private names imported across modules that other work removes; each
# names who imports what, and why it is still here.
KNOWN_PRIVATE_IMPORTS = {
    # Normalizer.__reduce__'s reconstructor, which the state format needs to
    # rebuild a normalizer; the compiled module has no public name for it.
    ("_state", "_normalizer", "_rebuild"),
    # The CLI's array writing, which moves to a module ray and the CLI share
    # (issue 20, the CLI's part).
    ("ray", "cli", "_array_dtype"),
    ("ray", "cli", "_array_metadata"),
}


def _modules() -> List[str]:
    return sorted(p.stem for p in PACKAGE.glob("*.py"))


def _imports() -> Tuple[Dict[str, Set[str]], List[Tuple[str, str, str]]]:
    """Each module's imports of spmbpe modules, and every private name one
    imports from another: (importer, module, name)."""
    known = set(_modules()) | {p.name.split(".")[0] for p in PACKAGE.glob("*.pyx")}
    graph: Dict[str, Set[str]] = {name: set() for name in _modules()}
    private = []
    for name in _modules():
        tree = ast.parse((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                pairs = [
                    (alias.name.split(".")[1] if "." in alias.name else "__init__", [])
                    for alias in node.names if alias.name.split(".")[0] == "spmbpe"
                ]
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level == 1 and not module:
                    # from . import x: a module, or a name of the package
                    pairs = [
                        (alias.name, []) if alias.name in known else ("__init__", [alias.name])
                        for alias in node.names
                    ]
                elif node.level == 1 or module.split(".")[0] == "spmbpe":
                    parts = module.split(".")[1:] if node.level == 0 else module.split(".")
                    pairs = [(parts[0] if parts else "__init__", [alias.name for alias in node.names])]
                else:
                    continue
            else:
                continue
            for target, names in pairs:
                assert target in known, f"{name} imports an unknown spmbpe module {target!r}"
                if target != name:
                    graph[name].add(target)
                private += [(name, target, n) for n in names if n.startswith("_") and not n.startswith("__")]
    return graph, private


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_has_no_cycle():
    graph, _ = _imports()
    assert "tokenizer" in graph["loading"]  # the walk sees imports
    assert "_streaming" in graph["tokenizer"]  # and the ones inside functions
    assert _cycles(graph) == []


def test_no_module_imports_private_names_of_another():
    _, private = _imports()
    assert sorted(set(private) - KNOWN_PRIVATE_IMPORTS) == []


_MODULES = [m for m in _modules() if m not in ("__init__", "__main__")]

# Each module imported by a child forked from an interpreter that has
# imported nothing of spmbpe (no interpreter start-up per module); its
# traceback, if any, in a file of its own.
_IMPORT_EACH = r"""
import os, sys, traceback
folder, modules = sys.argv[1], sys.argv[2:]
for module in modules:
    pid = os.fork()
    if pid == 0:
        with open(os.path.join(folder, module), "w") as err:
            os.dup2(err.fileno(), 2)
        try:
            __import__("spmbpe." + module)
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    os.waitpid(pid, 0)
"""


@pytest.fixture(scope="module")
def imported_alone(tmp_path_factory):
    """module -> its traceback when imported alone ("" when it imports)."""
    folder = tmp_path_factory.mktemp("imports")
    if hasattr(os, "fork"):
        runs = [[sys.executable, "-c", _IMPORT_EACH, str(folder), *_MODULES]]
    else:  # a fresh interpreter for each
        runs = [[sys.executable, "-c", f"import spmbpe.{m}"] for m in _MODULES]
    errors = {}
    for run in runs:
        result = subprocess.run(run, cwd=PACKAGE.parent, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0 or len(runs) > 1, result.stderr
        if len(runs) > 1:
            errors[run[-1].split(".")[-1]] = result.stderr if result.returncode else ""
    if len(runs) == 1:
        errors = {m: (folder / m).read_text() if (folder / m).exists() else "not run" for m in _MODULES}
    return errors


@pytest.mark.parametrize("module", _MODULES)
def test_each_module_imports_in_a_fresh_interpreter(imported_alone, module):
    assert imported_alone[module] == "", imported_alone[module]


DATA = pathlib.Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize(
    "name, reference",
    [
        ("ggml-vocab-llama-spm.gguf", "llama.cpp"),
        ("mistral-v1.model", "sentencepiece"),
        ("mistral-v1.tokenizer.json", "tokenizers"),
    ],
)
def test_a_file_becomes_a_frozen_spec_then_a_tokenizer(name, reference):
    """file -> loader -> spec -> tokenizer: the spec says what the file says
    and cannot change; the tokenizer built from it is the one load gives."""
    import dataclasses

    import spmbpe
    from spmbpe.loading import read_spec
    from spmbpe.planners import PLANNERS
    from spmbpe.tokenizer import tokenizer_from_spec

    spec = read_spec(DATA / name)
    assert spec.reference == reference and reference in PLANNERS
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.add_bos = not spec.add_bos  # type: ignore[misc]
    tok = tokenizer_from_spec(spec)
    loaded = spmbpe.load(DATA / name)
    assert tok.reference == loaded.reference == reference
    assert tok.fingerprint == loaded.fingerprint
    assert tok.encode("Hello <s> world", add_special_tokens=True, special="all") == loaded.encode(
        "Hello <s> world", add_special_tokens=True
    , special="all")
