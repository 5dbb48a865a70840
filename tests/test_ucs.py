"""The core's conversion of a str, read as CPython stores it (PEP 393: one,
two or four bytes a character), to UTF-8 (csrc/spm_ucs.h): Python's own
encoder is the reference, for every storage kind, every slice, runs of
ASCII of every length around the widths read at once (4, 8, 16, 32), and a
surrogate, which UTF-8 cannot hold, named at its index."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spmbpe import _testing

from long_run import examples

# Characters of each storage kind: a str takes the widest kind of any of
# its characters.
_ASCII = "abc XYZ.\n\t~0"
_KIND1 = "\xe9\xdf\xa0\xff\x80"              # Latin-1: 1 byte a character, 2 in UTF-8
_KIND2 = "\u0436\u044f\u3042\u6f22\u2581\uffff\u0800\u07ff"  # 2 bytes a character
_KIND4 = "\U0001f600\U00010000\U0010ffff"    # 4 bytes a character
_SURROGATES = "\ud800\udfff\udbff"


def _expected(text: str, start: int, end: int):
    for i in range(start, end):
        if "\ud800" <= text[i] <= "\udfff":
            return -1 - i
    return text[start:end].encode("utf-8")


def _texts(seed: int, others: str, count: int):
    """Texts of ASCII runs of 0-70 characters between runs of 0-6 other
    characters."""
    rng = random.Random(seed)
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 8)):
            parts.append("".join(rng.choice(_ASCII) for _ in range(rng.choice([0, 1, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 70]))))
            parts.append("".join(rng.choice(others) for _ in range(rng.randint(0, 6))))
        yield "".join(parts)


@pytest.mark.parametrize(
    "others", [_KIND1, _KIND2, _KIND1 + _KIND2, _KIND4, _KIND1 + _KIND4, _KIND2 + _SURROGATES, _KIND4 + _SURROGATES],
    ids=["latin1", "ucs2", "latin1+ucs2", "ucs4", "latin1+ucs4", "ucs2+surrogates", "ucs4+surrogates"],
)
def test_every_slice_converts_as_python_encodes(others):
    rng = random.Random(len(others))
    seen = 0
    for text in _texts(7, others, 400):
        for _ in range(6):
            start = rng.randint(0, len(text))
            end = rng.randint(start, len(text))
            assert _testing.str_to_utf8(text, start, end) == _expected(text, start, end), (text, start, end)
            seen += 1
        assert _testing.str_to_utf8(text, 0, len(text)) == _expected(text, 0, len(text)), text
    assert seen == 2400


@pytest.mark.parametrize("run", [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65])
@pytest.mark.parametrize("other", ["\xe9", "\u0436", "\u6f22", "\U0001f600", "\ud800"])
def test_an_ascii_run_of_each_length_beside_another_character(run, other):
    """A character after, before and between ASCII runs of each length (the
    widths read at once end there): the bytes, or the surrogate's index."""
    ascii_run = "".join(_ASCII[i % len(_ASCII)] for i in range(run))
    for text in (ascii_run + other, other + ascii_run, ascii_run + other + ascii_run, other * 3 + ascii_run + other):
        for start in (0, 1):
            start = min(start, len(text))
            assert _testing.str_to_utf8(text, start, len(text)) == _expected(text, start, len(text)), text


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=()), max_size=80), st.data())
def test_any_text_converts_as_python_encodes(text, data):
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert _testing.str_to_utf8(text, start, end) == _expected(text, start, end)
