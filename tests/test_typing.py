"""The public API is typed: ``mypy --strict`` accepts tests/typing_example.py
(which also runs), reports each mistake in a wrong usage, and every public
function and method is fully annotated.  The package ships ``py.typed`` and
stubs for its compiled modules."""

from __future__ import annotations

import dataclasses
import inspect
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

import spmbpe
import spmbpe.ray  # imports Ray only when called

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "typing_example.py"


@pytest.fixture(scope="module")
def mypy_cache(request, tmp_path_factory):
    """One mypy cache for the runs of this module, kept in pytest's cache
    directory from one session to the next (mypy checks each entry against
    its file): the standard library's stubs are not read again each time."""
    cache = getattr(request.config, "cache", None)  # (None with -p no:cacheprovider)
    return cache.mkdir("mypy") if cache is not None else tmp_path_factory.mktemp("mypy-cache")


def _mypy(tmp_path, cache, *files):
    """mypy --strict as a user runs it on their code: errors inside spmbpe
    itself are not reported (as for an installed package), only how the
    code uses spmbpe's types."""
    env = dict(os.environ, MYPYPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
         "--cache-dir", str(cache), *map(str, files)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )


def test_the_example_type_checks_and_runs(tmp_path, mypy_cache):
    result = _mypy(tmp_path, mypy_cache, EXAMPLE)
    assert result.returncode == 0, result.stdout + result.stderr
    ran = subprocess.run([sys.executable, str(EXAMPLE), str(ROOT / "tests/data/ggml-vocab-llama-spm.gguf")],
                         capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr


@pytest.mark.long  # mypy on the whole package: the public API's types are checked above
def test_package_passes_mypy_strict(tmp_path):
    """spmbpe's own code passes ``mypy --strict``, wherever it is installed
    (this source tree, or site-packages from an sdist: the package is found
    by its import, and its .pyi stubs stand for the compiled modules)."""
    package = pathlib.Path(spmbpe.__file__).resolve().parent
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "mypy-cache"), str(package)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_model_proto_specs_declare_every_field():
    """TrainerSpec and NormalizerSpec annotate each field of their tables
    with the type it is decoded as (the values are set dynamically, so the
    annotations are all mypy sees)."""
    from spmbpe import _protobuf as pb
    from spmbpe import _spm_model as m

    python_type = {pb.INT32: "int", pb.ENUM: "int", pb.BOOL: "bool", pb.STRING: "str", pb.BYTES: "bytes"}
    for cls in (m.TrainerSpec, m.NormalizerSpec):
        expected = {spec.name: python_type[spec.kind] for spec in cls.FIELDS.values()}
        assert dict(cls.__annotations__) == expected, cls.__name__
        for name, value in dataclasses.asdict(cls()).items():  # the defaults
            assert type(value).__name__ == expected[name], name


def test_wrong_usage_is_reported(tmp_path, mypy_cache):
    wrong = tmp_path / "wrong.py"
    lines = {
        "tok.encode(123)": "arg-type",
        "ids: str = tok.encode('a')": "assignment",
        "tok.streaming_decoder().add_token('a')": "arg-type",
        "tok('a', max_length='5')": "arg-type",
        "n: int = tok.fingerprint": "assignment",
        "tok.decode(['a'])": "list-item",
        "tok.encode('a', special=3)": "arg-type",
        "spmbpe.load(5)": "arg-type",
    }
    body = "import spmbpe\ntok = spmbpe.load('mistral-v1')\n" + "\n".join(lines) + "\n"
    wrong.write_text(body)
    result = _mypy(tmp_path, mypy_cache, wrong)
    assert result.returncode == 1
    reported = {}
    for line in result.stdout.splitlines():
        m = re.match(r".*wrong\.py:(\d+): error: .*\[([\w-]+)\]$", line)
        if m:
            reported[int(m.group(1))] = m.group(2)
    expected = {number: code for number, code in enumerate(lines.values(), start=3)}
    assert reported == expected, result.stdout


def _public_callables():
    for name in spmbpe.__all__:
        value = getattr(spmbpe, name)
        if inspect.isclass(value):
            # With the methods of spmbpe's own base classes (SpmTokenizer's
            # encode is compiled, in _core.TokenizerBase).
            members = {}
            for cls in reversed(value.__mro__):
                if cls.__module__.startswith("spmbpe"):
                    members.update(vars(cls))
            for attr, member in members.items():
                if attr.startswith("_") and attr not in ("__init__", "__call__"):
                    continue
                if isinstance(member, property):
                    yield f"{name}.{attr}", member.fget
                elif (inspect.isfunction(member) or type(member).__name__ == "cython_function_or_method"
                      or isinstance(member, (classmethod, staticmethod))):
                    yield f"{name}.{attr}", getattr(member, "__func__", member)
        elif inspect.isfunction(value):
            yield name, value
    for name in spmbpe.ray.__all__:
        yield f"ray.{name}", getattr(spmbpe.ray, name)


def test_every_public_function_is_annotated():
    seen = []
    for name, function in _public_callables():
        if getattr(function, "__module__", "").startswith(("enum", "dataclasses", "builtins")):
            continue
        signature = inspect.signature(function)
        missing = [p.name for p in signature.parameters.values()
                   if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
        assert not missing, f"{name}: parameters {missing} have no annotation"
        assert signature.return_annotation is not inspect.Signature.empty, f"{name}: no return annotation"
        seen.append(name)
    for name in ("SpmTokenizer.encode", "SpmTokenizer.encode_ordinary", "SpmTokenizer.fingerprint", "SpmTokenizer.streaming_decoder",
                 "SpmTokenizer.__call__", "StreamingDecoder.add_token", "StreamingDecoder.flush",
                 "load", "ray.tokenize", "ray.write_arrays"):
        assert name in seen


def test_the_package_ships_its_typing_files():
    package = ROOT / "spmbpe"
    assert (package / "py.typed").is_file()
    compiled = {p.name.split(".")[0] for p in package.glob("*.so")} | {p.stem for p in package.glob("*.pyx")}
    assert compiled and all((package / f"{stem}.pyi").is_file() for stem in compiled), compiled
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'spmbpe = \[[^\]]*"py\.typed"[^\]]*"\*\.pyi"', pyproject)
