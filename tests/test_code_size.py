"""No class in spmbpe/ is over 300 lines, and no function over 80.

A unit's lines run from its ``class``/``def`` line (decorators left out) to
the last line of its last statement (comments after it left out): what
``ast`` gives for the ``.py`` modules.  The Cython sources (``.pyx``, and the
``.pxd`` declarations, ``.pxi`` includes) are measured by their indentation, read the way
Python's tokenizer reads it: a line inside brackets, a string or after a
backslash continues its logical line whatever its indentation; a header
(``class``, ``cdef class``, ``def``, ``cdef``/``cpdef`` functions, over as
many lines as its signature takes) has a body only when it ends with
``:``, so a declaration without one (``cdef int f(int) nogil`` in a
``.pxd``) is no unit; ``cdef extern``/``struct``/``enum`` blocks are not
classes.  Generated C is not read.  The parser must agree with ``ast`` on
every ``.py`` module of the package (the test below), so that it cannot
drift from the rule the ``.py`` files are held to.
"""

from __future__ import annotations

import ast
import pathlib
import re
from typing import Dict, Iterator, List, Optional, Tuple

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "spmbpe"
ROOT = PACKAGE.parent
CLASS_MAX, FUNCTION_MAX = 300, 80

# A unit: (kind "class" or "def", qualified name, first line, line count).
Unit = Tuple[str, str, int, int]


def python_units(source: str) -> List[Unit]:
    """The classes and functions of Python source, by ast."""
    units: List[Unit] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                kind = "class" if isinstance(child, ast.ClassDef) else "def"
                name = prefix + child.name
                assert child.end_lineno is not None
                units.append((kind, name, child.lineno, child.end_lineno - child.lineno + 1))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return units


# ------------------------------------------------------------ Cython sources

_STRING_START = re.compile(r"""(?i)(?:[rbfuc]{0,2})('''|\"\"\"|'|")""")


class _Logical:
    """A logical line: its first and last physical lines (1-based), its
    indentation and its code (strings blanked, comments cut)."""

    __slots__ = ("first", "last", "indent", "code")

    def __init__(self, first: int, last: int, indent: int, code: str) -> None:
        self.first, self.last, self.indent, self.code = first, last, indent, code


def logical_lines(source: str) -> Iterator[_Logical]:
    """The code lines of Python-like source (blank and comment-only lines
    left out), each with the physical lines it spans."""
    lines = source.split("\n")
    i = 0
    while i < len(lines):
        first = i
        indent = len(lines[i]) - len(lines[i].lstrip(" \t"))
        code: List[str] = []
        depth = 0
        quote: Optional[str] = None  # the open string's delimiter
        while True:
            line = lines[i]
            k = 0
            comment = False
            while k < len(line):
                if quote is not None:
                    if line[k] == "\\":
                        k += 2
                        continue
                    if line.startswith(quote, k):
                        k += len(quote)
                        quote = None
                        code.append('""')
                        continue
                    k += 1
                    continue
                c = line[k]
                if c == "#":
                    comment = True
                    break
                match = _STRING_START.match(line, k) if c.isalpha() or c in "'\"" else None
                if match and (k == 0 or not (line[k - 1].isalnum() or line[k - 1] == "_")):
                    quote = match.group(1)
                    k = match.end()
                    continue
                if c.isalnum() or c == "_":  # a whole name (so that "rb" in "verb" starts no string)
                    end = k
                    while end < len(line) and (line[end].isalnum() or line[end] == "_"):
                        end += 1
                    code.append(line[k:end])
                    k = end
                    continue
                depth += c in "([{"
                depth -= c in ")]}"
                code.append(c)
                k += 1
            continued = not comment and quote is None and line.rstrip().endswith("\\")
            if quote is not None and len(quote) == 1:
                quote = None  # an unterminated one-line string ends with its line
            if (quote is None and depth <= 0 and not continued) or i + 1 >= len(lines):
                break
            code.append(" ")
            i += 1
        text = "".join(code).strip()
        if text:
            yield _Logical(first + 1, i + 1, indent, text)
        i += 1


_CLASS = re.compile(r"(?:(?:cdef|cpdef)\s+(?:public\s+|api\s+|final\s+)*)?class\s+(\w+)")
_DEF = re.compile(r"(?:async\s+)?def\s+(\w+)")
_NOT_UNITS = re.compile(r"(?:cdef|ctypedef)\b\s*(?:extern|struct|union|enum|packed|fused|cppclass|:|$)|ctypedef\b")
_KEYWORDS = {"cdef", "cpdef", "inline", "except", "with", "nogil", "noexcept", "gil", "public", "api", "const"}


def _cdef_name(code: str) -> Optional[str]:
    """The name of the function a ``cdef``/``cpdef`` header defines: the
    name before its last top-level bracket group (the parameters; a ctuple
    return type comes before them)."""
    name = None
    depth = 0
    previous = ""
    for match in re.finditer(r"\w+|\(|\)|\S", code):
        token = match.group()
        if token == "(":
            if depth == 0 and previous not in _KEYWORDS and re.fullmatch(r"[A-Za-z_]\w*", previous):
                name = previous
            depth += 1
        elif token == ")":
            depth -= 1
        previous = token
    return name


def cython_units(source: str) -> List[Unit]:
    """The classes and functions of Cython source, by indentation."""
    lines = list(logical_lines(source))
    units: List[Unit] = []
    open_units: List[Tuple[int, str]] = []  # (indent, qualified name) of the enclosing units
    for index, line in enumerate(lines):
        while open_units and line.indent <= open_units[-1][0]:
            open_units.pop()
        code = line.code
        if _NOT_UNITS.match(code):
            continue
        match = _CLASS.match(code) or _DEF.match(code)
        kind = "class" if match and match.re is _CLASS else "def"
        if match:
            name: Optional[str] = match.group(1)
        elif re.match(r"cp?def\b", code) and code.endswith(":"):  # (else a declaration)
            name = _cdef_name(code)
        else:
            continue
        if name is None:
            continue
        last = line.last
        for body in lines[index + 1 :] if code.endswith(":") else ():  # (else a one-line unit)
            if body.indent <= line.indent:
                break
            last = body.last
        prefix = open_units[-1][1] + "." if open_units else ""
        units.append((kind, prefix + name, line.first, last - line.first + 1))
        open_units.append((line.indent, prefix + name))
    return units


def package_units(root: pathlib.Path = PACKAGE) -> Dict[str, Tuple[str, int, int]]:
    """"path:name" -> (kind, first line, lines) for every unit of the package."""
    out: Dict[str, Tuple[str, int, int]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix == ".py":
            units = python_units(path.read_text(encoding="utf-8"))
        elif path.suffix in (".pyx", ".pxd", ".pxi"):
            units = cython_units(path.read_text(encoding="utf-8"))
        else:
            continue  # generated C, stubs (.pyi: declarations), data
        for kind, name, first, count in units:
            out[f"{path.relative_to(root.parent).as_posix()}:{name}"] = (kind, first, count)
    return out


def _over(units: Dict[str, Tuple[str, int, int]]) -> Dict[str, str]:
    return {
        key: f"{key} (line {first}): {kind} of {count} lines (max {CLASS_MAX if kind == 'class' else FUNCTION_MAX})"
        for key, (kind, first, count) in units.items()
        if count > (CLASS_MAX if kind == "class" else FUNCTION_MAX)
    }


# --------------------------------------------------------------------- tests


def test_no_class_over_300_lines_and_no_function_over_80():
    over = _over(package_units())
    assert not over, "split these (a class by concern, a function into steps):\n" + "\n".join(
        sorted(over.values()))


def test_the_indentation_parser_agrees_with_ast_on_every_module():
    # The .py modules are Python, which the Cython parser reads too: it
    # must find the units ast finds, with the same lines.
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        assert cython_units(source) == python_units(source), path


def test_the_indentation_parser_reads_cython():
    source = '''\
cdef extern from "spm_vocab.h" nogil:
    ctypedef struct SpmVocab:
        int size
    int spm_find(const SpmVocab *v,
                 const char *s)

cdef struct Pair:
    int left

cdef enum:
    LIMIT = 4

cdef int declared(int a) nogil
cdef (int, int) pair_of(
        int a,
        int b) noexcept nogil:
    """A docstring
with a dedented line: # not a comment, and def f(): not a unit
"""
    cdef:
        int x = (a +
    b)  # a bracket continues a line, whatever its indentation
    return a, \\
b

@cython.boundscheck(False)
cdef inline Py_ssize_t longest(const uint8_t[::1] buf, object (*callback)(int)) except -1 nogil:
    return 0

cdef public class Table [object TableObject, type TableType]:
    cdef readonly int size
    cdef int helper(self, int k) except? -1
    def __cinit__(self):
        self.size = 0

    # a comment at the end is not the body's

    cpdef str name(self):
        s = "class X: ' def y(): (("
        return s
# trailing comment
def after(): pass
'''
    units = {name: (kind, first, count) for kind, name, first, count in cython_units(source)}
    assert units == {
        "pair_of": ("def", 14, 11),
        "longest": ("def", 27, 2),
        "Table": ("class", 30, 11),
        "Table.__cinit__": ("def", 33, 2),
        "Table.name": ("def", 38, 3),
        "after": ("def", 42, 1),
    }, units


def test_the_limits_catch_a_long_class_and_a_long_function(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    body = "\n".join(f"        x{i} = {i}" for i in range(79))
    (package / "m.py").write_text(f"class Small:\n    def f(self):\n{body}\n", encoding="utf-8")
    long_body = body + "\n        x = 80"
    methods = "\n".join(f"    cdef int m{i}(self):\n        return {i}" for i in range(150))
    (package / "c.pyx").write_text(
        f"cdef class Big:\n{methods}\n\ndef g():\n{long_body.replace('        ', '    ')}\n", encoding="utf-8"
    )
    over = _over(package_units(package))
    assert set(over) == {"pkg/c.pyx:Big", "pkg/c.pyx:g"}, over
    assert package_units(package)["pkg/m.py:Small.f"] == ("def", 2, 80)


def test_the_model_reader_is_under_400_lines():
    # The .model reader is the generic wire reader plus the tables of the
    # fields spmbpe reads, small enough to read at once.
    files = [PACKAGE / "_protobuf.py", PACKAGE / "_spm_model.py"]
    assert sum(len(f.read_text(encoding="utf-8").splitlines()) for f in files) < 400
