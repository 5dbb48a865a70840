"""The package's layers point one way (docs/architecture.md, "Layers").

* Every module imports on its own, in a fresh interpreter (no module works
  only because another one happened to be imported first).
* The import graph between spmbpe's modules has no cycle.  Every import
  counts: at module level, inside a function (a lazy import is still a
  dependency) and under ``TYPE_CHECKING`` (a type-only cycle is still two
  modules that cannot be read apart).
* No module imports another module's private (``_``-prefixed) names, nor
  reads another's private attributes: ``x._name``, where x is not ``self``
  or ``cls`` and no code of the module itself defines ``_name`` (an
  attribute the module sets, a function, class or variable it defines; a
  Protocol's stubs describe another module's object and define nothing),
  is a read of another module's private (``.py`` files by their syntax
  tree, ``.pyx``/``.pxd`` by a pattern).
"""

from __future__ import annotations

import ast
import re
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
}


def _module_name(path: pathlib.Path) -> str:
    """A module's dotted name below spmbpe ("tokenizer", "references.base",
    "references" for a subpackage; "__init__" for spmbpe itself)."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _modules() -> List[str]:
    return sorted(_module_name(p) for p in PACKAGE.rglob("*.py"))


def _path(name: str) -> pathlib.Path:
    path = PACKAGE.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _imports() -> Tuple[Dict[str, Set[str]], List[Tuple[str, str, str]]]:
    """Each module's imports of spmbpe modules, and every private name one
    imports from another: (importer, module, name)."""
    known = set(_modules()) | {p.name.split(".")[0] for p in PACKAGE.glob("*.pyx")}
    graph: Dict[str, Set[str]] = {name: set() for name in _modules()}
    private = []
    for name in _modules():
        path = _path(name)
        package = name if path.name == "__init__.py" and name != "__init__" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found = [(alias.name.partition(".")[2] or "__init__", []) for alias in node.names
                         if alias.name.split(".")[0] == "spmbpe"]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if package else []
                    module = ".".join([*base, *(node.module.split(".") if node.module else [])])
                elif (node.module or "").split(".")[0] == "spmbpe":
                    module = node.module.partition(".")[2]  # type: ignore[union-attr]
                else:
                    continue
                found = [
                    (f"{module}.{alias.name}" if module else alias.name, [])
                    if (f"{module}.{alias.name}" if module else alias.name) in known
                    else (module or "__init__", [alias.name])
                    for alias in node.names
                ]
            else:
                continue
            for target, names in found:
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
    assert "gguf" in graph["loading"]  # and the ones inside functions
    assert {"references.base", "_decoding"} <= graph["references.llamacpp"]  # and in subpackages
    assert _cycles(graph) == []


def test_no_module_imports_private_names_of_another():
    _, private = _imports()
    assert sorted(set(private) - KNOWN_PRIVATE_IMPORTS) == []
    assert KNOWN_PRIVATE_IMPORTS <= set(private)  # none stale


# Private attributes read across modules: none (kept as a set, each entry
# naming who reads what and why, should one ever be unavoidable).
KNOWN_PRIVATE_ATTRIBUTES: Set[Tuple[str, str]] = set()


def _defined(tree: ast.AST) -> Set[str]:
    """Every name a module's own code defines (Protocol stubs aside)."""
    protocols = [
        node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
        and any(getattr(b, "id", getattr(b, "attr", None)) == "Protocol" for b in node.bases)
    ]
    stubs = {id(n) for p in protocols for n in ast.walk(p) if n is not p}
    out: Set[str] = set()
    for node in ast.walk(tree):
        if id(node) in stubs:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            out.add(node.value)  # __slots__ entries, setattr names
    return out


_PYX_DEFINES = re.compile(
    r"(?:\b(?:def|class|cdef|cpdef)\b[^(:=\n]*?\b(_\w+)\s*[(:=\[])"
    r"|(?:^\s*(?:cdef\s+)?(?:public\s+|readonly\s+)?[\w\[\]\*, .]*?\b(_\w+)\s*(?:=|$))|self\.(_\w+)\s*=",
    re.M,
)
_PYX_READS = re.compile(r"\b(\w+)\.(_[A-Za-z]\w*)")


def _python_reads(tree: ast.AST) -> List[Tuple[int, str]]:
    """(line, attribute) of each private attribute a module reads on
    something other than self or cls: ``x._name`` and ``getattr(x, "_name")``."""
    def outside(value: ast.AST) -> bool:
        return not (isinstance(value, ast.Name) and value.id in ("self", "cls"))

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and outside(node.value):
            found.append((node.lineno, node.attr))
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr")
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and outside(node.args[0])):
            found.append((node.lineno, node.args[1].value))
    return [(line, name) for line, name in found if name.startswith("_") and not name.startswith("__")]


def _private_attribute_reads() -> List[Tuple[str, int, str, Set[str]]]:
    """(file, line, attribute, the files that define it) for each read of a
    private attribute that its own file does not define but another does."""
    defined: Dict[str, Set[str]] = {}
    reads: Dict[str, List[Tuple[int, str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(PACKAGE))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined[name] = _defined(tree)
        reads[name] = _python_reads(tree)
    for path in sorted([*PACKAGE.rglob("*.pyx"), *PACKAGE.rglob("*.pxd")]):
        name = str(path.relative_to(PACKAGE))
        text = path.read_text(encoding="utf-8")
        defined[name] = {g for m in _PYX_DEFINES.finditer(text) for g in m.groups() if g}
        reads[name] = [
            (text.count("\n", 0, m.start()) + 1, m.group(2)) for m in _PYX_READS.finditer(text)
            if m.group(1) not in ("self", "cls", "spmbpe") and not m.group(2).startswith("__")
        ]
    owners: Dict[str, Set[str]] = {}
    for name, names in defined.items():
        for attribute in names:
            owners.setdefault(attribute, set()).add(name)
    return [
        (name, line, attribute, owners[attribute])
        for name, found in reads.items() for line, attribute in found
        if attribute not in defined[name] and attribute in owners
    ]


def test_no_module_reads_private_attributes_of_another():
    reads = _private_attribute_reads()
    assert sorted({(name, attribute) for name, _, attribute, _ in reads} - KNOWN_PRIVATE_ATTRIBUTES) == [], reads
    assert KNOWN_PRIVATE_ATTRIBUTES <= {(name, attribute) for name, _, attribute, _ in reads}  # none stale


def test_the_attribute_check_sees_a_read_through(tmp_path):
    tree = ast.parse("class P(Protocol):\n    def _core(self): ...\ndef f(tok):\n    return tok._core, self._x\n")
    assert "_core" not in _defined(tree) and "f" in _defined(tree)
    assert "_own" in _defined(ast.parse("class A:\n    def __init__(self):\n        self._own = 1\n"))
    reads = _python_reads(ast.parse("def f(tok, self):\n    return tok._core, getattr(tok, '_plan', None), self._x\n"))
    assert reads == [(2, "_core"), (2, "_plan")], reads


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
    from spmbpe.references import REFERENCES
    from spmbpe.tokenizer import tokenizer_from_spec

    spec = read_spec(DATA / name)
    assert spec.reference == reference and reference in REFERENCES
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.add_bos = not spec.add_bos  # type: ignore[misc]
    tok = tokenizer_from_spec(spec)
    loaded = spmbpe.load(DATA / name)
    assert tok.reference == loaded.reference == reference
    assert tok.fingerprint == loaded.fingerprint
    assert tok.encode("Hello <s> world", add_special_tokens=True, special="all") == loaded.encode(
        "Hello <s> world", add_special_tokens=True
    , special="all")
