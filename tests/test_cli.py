"""The command line (`spmbpe encode`, `python -m spmbpe encode`) and the
bundled default vocabulary, run as subprocesses."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import spmbpe

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent


def run(args, stdin=b""):
    return subprocess.run(
        [sys.executable, "-m", "spmbpe", *args], input=stdin, capture_output=True, cwd=ROOT, timeout=300
    )


def test_bundled_mistral_v1_is_the_fixture_model():
    bundled = spmbpe.load("mistral-v1")
    fixture = spmbpe.load(DATA / "mistral-v1.model")
    assert bundled.vocab_size == fixture.vocab_size == 32000
    # Reference row (sentencepiece, fixtures README): "Hello, world!".
    assert bundled.encode("Hello, world!") == [22557, 28725, 1526, 28808]
    text = (DATA / "corpus" / "en_botchan.txt").read_text(encoding="utf-8")[:20000]
    assert bundled.encode(text) == fixture.encode(text)


def test_the_bundled_model_ships_its_licence_notice():
    notice = Path(spmbpe.__file__).parent / "data" / "NOTICE-mistral-v1.txt"
    assert "Apache License, Version 2.0" in notice.read_text(encoding="utf-8")


def test_encode_stdin_prints_ids_per_line():
    result = run(["encode"], b"Hello world\n\nHello, world!\r\n")
    assert result.returncode == 0, result.stderr
    # sentencepiece's ids for these lines (the second is empty).
    assert result.stdout.decode().splitlines() == ["22557 1526", "", "22557 28725 1526 28808"]


def test_console_script_matches_python_m():
    script = shutil.which("spmbpe")
    assert script is not None, "the spmbpe console script is not installed"
    result = subprocess.run([script, "encode"], input=b"Hello world\n", capture_output=True, timeout=300)
    assert result.returncode == 0 and result.stdout == b"22557 1526\n"


@pytest.mark.parametrize("name", ["en_botchan.txt", "multi_ja.txt"])
def test_encode_files_equals_the_api(name):
    path = DATA / "corpus" / name
    result = run(["encode", "--model", str(DATA / "mistral-v3.model"), str(path)])
    assert result.returncode == 0, result.stderr
    tok = spmbpe.load(DATA / "mistral-v3.model")
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    expected = [" ".join(map(str, tok.encode(line, special="none"))) for line in lines]
    assert result.stdout.decode().split("\n")[:-1] == expected


def test_special_tokens_are_text_unless_asked():
    gguf = str(DATA / "ggml-vocab-llama-spm.gguf")
    plain = run(["encode", "--model", gguf], b"a</s>b\n")
    special = run(["encode", "--model", gguf, "--special", "all", "--add-special-tokens"], b"a</s>b\n")
    # llama.cpp golden rows for "a</s>b" (special=False / special=True, BOS).
    assert plain.stdout == b"263 829 29879 29958 29890\n"
    assert special.stdout == b"1 263 2 289\n"


def test_a_missing_model_is_a_one_line_error():
    result = run(["encode", "--model", "no/such/model.gguf"], b"x\n")
    assert result.returncode == 2
    assert result.stderr.decode().count("\n") == 1 and "no/such/model.gguf" in result.stderr.decode()


def test_invalid_utf8_names_the_input_and_line():
    result = run(["encode"], b"fine\n\xff\xfe\n")
    assert result.returncode == 1
    assert "line 2" in result.stderr.decode() and "Traceback" not in result.stderr.decode()


def test_a_missing_input_file_is_a_one_line_error(tmp_path):
    result = run(["encode", str(tmp_path / "nope.txt")])
    assert result.returncode == 1 and "nope.txt" in result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()
