"""Lines of text input encoded from the bytes read (the command line's way).

``spmbpe encode`` reads a text file as bytes; a run of whole lines that is
all UTF-8 goes to the merge as those bytes (SpmTokenizer.encode_line_block
over BatchJob.start_lines), with no str per line.  Its ids must be exactly
encode_batch's over the same lines -- and so the references' -- and a block
that the fast way cannot take (an added token of the policy in it, a line
the merge refuses, bytes that are not UTF-8) must go encode_batch's way.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import spmbpe
from spmbpe import _testing
from spmbpe._cli_read import LineBlock
from spmbpe._core import count_newlines, read_buffer, utf8_valid_prefix
from spmbpe.cli import main

from conftest import DATA_DIR, LLAMA_SPM_GGUF
from long_run import examples

MODEL = DATA_DIR / "mistral-v1.model"
JSON = DATA_DIR / "mistral-v1.tokenizer.json"
PATHS = {"model": MODEL, "gguf": LLAMA_SPM_GGUF, "json": JSON}
# The special tokens of the GGUF and tokenizer.json (a bare .model has none
# that text can spell: sentencepiece never reads a control token from text).
SPECIAL_TEXTS = ("<s>", "</s>", "<unk>")


@pytest.fixture(scope="module")
def toks():
    return {name: spmbpe.load(path) for name, path in PATHS.items()}


def flat(rows):
    return [i for row in rows for i in row], np.cumsum([len(r) for r in rows], dtype=np.int64).tolist()


def block_ids(tok, block, **kw):
    got = tok.encode_line_block(block, **kw)
    if got is None:
        return None
    data, offsets = got
    offsets = np.frombuffer(offsets, dtype=np.int64).tolist()
    assert offsets[0] == 0 and len(data) == 4 * offsets[-1]
    return np.frombuffer(data, dtype=np.uint32).tolist(), offsets[1:]


def read_lines(text):
    """The documents the command line reads from `text`: its lines, a "\\r"
    before a line end left out (a last line without a line end as is)."""
    lines = text.split("\n")
    tail = lines.pop()
    return [s[:-1] if s.endswith("\r") else s for s in lines] + ([tail] if tail else [])


# ------------------------------------------------------------------ the UTF-8 check


def python_valid_prefix(data):
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start
    return len(data)


EDGES = [
    b"\xc0\x80", b"\xc1\xbf", b"\xc2\x80", b"\xdf\xbf",          # overlong leads / smallest two-byte
    b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xe0\xa0\x80",           # overlong / smallest three-byte
    b"\xed\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf",           # last before / first, last surrogate
    b"\xef\xbf\xbf", b"\xf0\x8f\xbf\xbf", b"\xf0\x90\x80\x80",   # overlong four-byte / smallest
    b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80",  # U+10FFFF / past it
    b"\x80", b"\xbf", b"\xfe", b"\xff", b"\xe2\x96", b"\xf0\x9f\x99",  # strays, cut short
    b"\xe2\x96\x81", b"abcdefgh", b"abcdefghijklmno",
]


@given(st.lists(st.one_of(
    st.sampled_from(EDGES),
    st.binary(max_size=5),
    st.text(max_size=6).map(lambda s: s.encode("utf-8", "surrogatepass")),
), max_size=12).map(b"".join))
@example(b"abcdefg\xe2\x96\x81")
@example(b"abcdefgh\xed\xa0\x80")
@settings(max_examples=examples(1500), deadline=None)
def test_utf8_check_agrees_with_pythons_decoder(data):
    """What is valid, and where the first fault starts, as bytes.decode
    says: the reader sends a block the check passes to the merge."""
    assert utf8_valid_prefix(data) == python_valid_prefix(data)


# Longer text, as the check reads it: runs of ASCII (8 bytes at a time) and of
# other characters (a DFA, 64 bytes at a time, ending where a character does),
# with faults anywhere among them.
_RUNS = ["a", "abcdefgh", "plain ASCII text ", "\u0436\u0438\u0437\u043d\u044c ", "\u65e5\u672c\u8a9e",
         "\u2581\u2581", "\U0001f600", "\u00e9t\u00e9", "\x7f\x00"]


@given(st.lists(st.one_of(
    st.sampled_from(_RUNS).map(lambda run: run.encode("utf-8")),
    st.tuples(st.sampled_from(_RUNS), st.integers(1, 12)).map(lambda r: (r[0] * r[1]).encode("utf-8")),
    st.sampled_from(EDGES),
), max_size=40).map(b"".join))
@example(("\u65e5" * 30).encode("utf-8") + b"\xed\xa0\x80")
@example(("\u65e5" * 21).encode("utf-8") + b"\xe6\x97")
@settings(max_examples=examples(1500), deadline=None)
def test_utf8_check_of_long_text_agrees_with_pythons_decoder(data):
    assert utf8_valid_prefix(data) == python_valid_prefix(data)


@pytest.mark.parametrize("fault", [b"\x80", b"\xc1\xbf", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xf0\x8f\xbf\xbf",
                                   b"\xf4\x90\x80\x80", b"\xf5", b"\xe2\x96", b"\xf0\x9f\x99"])
def test_a_fault_at_every_offset_of_a_long_text_is_placed_as_pythons_decoder_places_it(fault):
    text = ("ASCII and \u0436\u0438\u0437\u043d\u044c, \u65e5\u672c\u8a9e \U0001f600 " * 3).encode("utf-8")
    for at in range(len(text) + 1):
        if at < len(text) and (text[at] & 0xC0) == 0x80:
            continue  # (inside a character: the text itself is cut short there)
        data = text[:at] + fault + text[at:]
        assert utf8_valid_prefix(data) == python_valid_prefix(data) == at


@given(st.binary(max_size=300))
@example(b"\n\n")
@example(b"a\nb")
def test_newline_count_agrees_with_bytes_count(data):
    assert count_newlines(data) == data.count(b"\n")
    assert count_newlines(bytearray(data)) == data.count(b"\n")


@pytest.mark.parametrize("size", [7, 8, 9, 2039, 2040, 2041, 2048, 4080, 4081, 10_000])
@pytest.mark.parametrize("start", [0, 1, 5])
def test_newline_count_of_long_runs_agrees_with_bytes_count(size, start):
    # count_newlines sums each byte's count in 255 steps of 8 bytes (2,040
    # bytes) before adding the lanes up: a run of newlines that long fills
    # every lane, and the sizes around it end a sum with a partial step.
    every = (b"x" * start + b"\n" * size)[start:]
    mixed = bytes(random.Random(size * 7 + start).choice(b"\n\n\xe2a\r\x00\x8a\x0b") for _ in range(size + start))
    for data in (every, mixed, mixed.replace(b"\n", b"\x0a\x0a")[:size]):
        view = memoryview(b"?" * start + data)[start:]
        assert count_newlines(view) == data.count(b"\n")
        assert count_newlines(bytearray(data)) == data.count(b"\n")


@given(st.binary(min_size=2000, max_size=6000), st.integers(0, 7))
def test_newline_count_of_long_binary_at_any_alignment_agrees_with_bytes_count(data, start):
    assert count_newlines(memoryview(data)[start:]) == data[start:].count(b"\n")


def test_a_read_buffer_is_a_bytearray_of_its_size():
    buf = read_buffer(5000)
    assert type(buf) is bytearray and len(buf) == 5000
    assert read_buffer(0) == bytearray()
    with pytest.raises(ValueError):
        read_buffer(-1)


# ------------------------------------------------------------------ ids


def golden_rows(name):
    text = (DATA_DIR / name).read_bytes().decode("utf-8")
    rows = [json.loads(line) for line in text.split("\n") if line.strip()]
    return [row for row in rows if "\n" not in row["text"] and "\r" not in row["text"]]


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize(
    "path, golden, special, field",
    [
        (LLAMA_SPM_GGUF, "llama-spm.gguf.jsonl", "none", "ids"),  # llama.cpp, special tokens as text
        (MODEL, "mistral-v1.model.jsonl", "all", "sp"),           # sentencepiece
    ],
    ids=["gguf-llama.cpp", "mistral-v1-sentencepiece"],
)
def test_golden_lines_in_one_block_give_the_references_ids(path, golden, special, field, threads):
    rows = golden_rows(golden)
    assert len(rows) > 20
    block = "".join(row["text"] + "\n" for row in rows).encode("utf-8")
    got = block_ids(spmbpe.load(path), block, special=special, num_threads=threads)
    assert got == flat([row[field] for row in rows])


def test_a_vocabulary_whose_texts_are_all_planned_takes_encode_batchs_way():
    """Mistral v3's .model has user-defined pieces (sentencepiece splits
    them out of any text): every text is planned, no block goes the byte
    way."""
    tok = spmbpe.load(DATA_DIR / "mistral-v3.model")
    assert tok.encode_line_block(b"plain text\n", special="none") is None


def test_corpus_lines_in_one_block_give_tokenizers_ids():
    """The tokenizer.json's prefix rule (none before a space or "▁") is
    taken per line: live tokenizers."""
    from tokenizers import Tokenizer

    lines = []
    for name in ("en_botchan.txt", "multi_ja.txt", "code_py.txt"):
        lines += read_lines((DATA_DIR / "corpus" / name).read_text(encoding="utf-8"))[:500]
    lines += [" leading space", "▁marker first", "\tx"]
    ref = [e.ids for e in Tokenizer.from_file(str(JSON)).encode_batch(lines, add_special_tokens=False)]
    block = ("\n".join(lines) + "\n").encode("utf-8")
    assert block_ids(spmbpe.load(JSON), block, special="none", num_threads=2) == flat(ref)


LINE = st.lists(
    st.sampled_from(["a", "b", "ab", " ", "  ", "▁", "\r", "é", "日本", "🙂", "x\ty", "<s>", "</s>", "<unk>", "s>"]),
    max_size=8,
).map("".join)


@given(
    lines=st.lists(LINE, max_size=10),
    crlf=st.booleans(),
    ended=st.booleans(),
    name=st.sampled_from(sorted(PATHS)),
    special=st.sampled_from(["none", "all", "raise"]),
    threads=st.sampled_from([1, 2]),
)
@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_block_gives_encode_batchs_ids_or_goes_its_way(toks, lines, crlf, ended, name, special, threads):
    """Empty lines, "\\r" inside and before a line end, a space or "▁"
    first (the tokenizer.json's prefix rule): the ids of encode_batch over
    the lines as read.  None (encode_batch's way) exactly when a special
    token the policy splits out is spelled in the block."""
    text = ("\r\n" if crlf else "\n").join(lines) + ("\n" if ended else "")
    docs = read_lines(text)
    assert LineBlock(text.encode("utf-8")).strings() == docs and len(LineBlock(text.encode("utf-8"))) == len(docs)
    tok = toks[name]
    got = block_ids(tok, text.encode("utf-8"), special=special, num_threads=threads)
    splits = special != "none" and name != "model" and any(t in text for t in SPECIAL_TEXTS)
    if splits:
        assert got is None
    else:
        assert got == flat(tok.encode_batch(docs, special=special))


def test_a_line_the_merge_refuses_sends_the_block_encode_batchs_way():
    tok = spmbpe.load(MODEL)
    _testing.limit_segment_bytes(tok._core, 600)
    block = b"fine\n" + b"x" * 900 + b"\nfine too\n"
    for threads in (1, 2):
        assert tok.encode_line_block(block, special="none", num_threads=threads) is None
    with pytest.raises(ValueError, match="900 UTF-8 bytes"):
        tok.encode_batch(LineBlock(block).strings(), special="none")
    assert block_ids(tok, b"fine\n", special="none") == flat([tok.encode("fine")])


def test_a_block_that_is_not_utf8_is_refused():
    tok = spmbpe.load(MODEL)
    with pytest.raises(ValueError, match="invalid byte 7"):
        tok.encode_line_block(b"ok\nfine\xff\n", special="none")
    assert block_ids(tok, b"", special="none") == ([], [])


# ------------------------------------------------------------------ blocks cut into units


def corpus_block(names=("en_botchan.txt", "multi_ja.txt", "code_py.txt", "multi_ru.txt")):
    """About 100 KB of corpus lines with the line ends that matter at a
    unit's edge: CRLF, empty lines, a "\\r" inside, byte-fallback emoji,
    a space or "▁" first."""
    lines = []
    for name in names:
        lines += read_lines((DATA_DIR / "corpus" / name).read_text(encoding="utf-8"))[:900]
    odd = ["", "\r", "a\rb", " lead", "▁marker", "🙂🙂 🙂", "x" * 300, "\t"]
    mixed = []
    for i, line in enumerate(lines):
        mixed.append(line + ("\r" if i % 7 == 0 else ""))
        if i % 5 == 0:
            mixed.append(odd[i % len(odd)])
    return mixed


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_block_of_many_units_gives_sentencepieces_ids(threads):
    """A block large enough to be cut into many units (each worker finds
    and checks the lines of its own): live sentencepiece's ids line by
    line, and encode_batch's."""
    import sentencepiece as spm

    lines = corpus_block()
    block = "\n".join(lines).encode("utf-8")  # (the last line without a line end)
    assert len(block) > 48 * 4096
    docs = read_lines(block.decode("utf-8"))
    sp = spm.SentencePieceProcessor(model_file=str(MODEL))
    want = flat([sp.encode(d) if d else [] for d in docs])
    tok = spmbpe.load(MODEL)
    assert block_ids(tok, block, special="none", num_threads=threads) == want
    assert block_ids(tok, block + b"\n", special="none", num_threads=threads) == want
    assert flat(tok.encode_batch(docs, special="none")) == want


@pytest.mark.parametrize("threads", [1, 2])
def test_a_block_of_many_units_gives_tokenizers_ids(threads):
    from tokenizers import Tokenizer

    block = ("\n".join(corpus_block()) + "\n").encode("utf-8")
    docs = read_lines(block.decode("utf-8"))
    ref = [e.ids for e in Tokenizer.from_file(str(JSON)).encode_batch(docs, add_special_tokens=False)]
    assert block_ids(spmbpe.load(JSON), block, special="none", num_threads=threads) == flat(ref)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_block_of_empty_lines_counts_every_one(threads):
    """More lines than the offsets are first sized for (one per 32 bytes):
    empty lines, then lines of byte-fallback characters, the most ids a
    byte of text can give."""
    tok = spmbpe.load(MODEL)
    block = b"\n" * 100_000 + b"x\n" + b"\r\n" * 50_000 + ("🙂" * 3 + "\n").encode("utf-8") * 20_000
    import sentencepiece as spm

    docs = read_lines(block.decode("utf-8"))
    assert len(docs) == 170_001
    got = block_ids(tok, block, special="none", num_threads=threads)
    assert got == flat(tok.encode_batch(docs, special="none"))
    sp = spm.SentencePieceProcessor(model_file=str(MODEL))
    assert got == flat([sp.encode(d) if d else [] for d in docs])


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_bytes_not_utf8_deep_in_a_block_are_named(threads):
    """The check is each unit's, in the worker: the byte named is still the
    block's first fault, whichever unit holds it."""
    tok = spmbpe.load(MODEL)
    good = ("\n".join(corpus_block()) + "\n").encode("utf-8")
    for at in (len(good) // 3, len(good) - 2):
        cut = good.rfind(b"\n", 0, at) + 1
        bad = good[:cut] + b"ab\xe2\x96" + good[cut:]
        with pytest.raises(ValueError, match=f"invalid byte {cut + 2}$"):
            tok.encode_line_block(bad, special="none", num_threads=threads)


def test_a_line_the_merge_refuses_deep_in_a_block_sends_it_encode_batchs_way():
    tok = spmbpe.load(MODEL)
    _testing.limit_segment_bytes(tok._core, 600)
    lines = [s for s in corpus_block() if len(s.encode("utf-8")) <= 600]
    block = ("\n".join(lines[:3000]) + "\n" + "y" * 900 + "\n" + "\n".join(lines[3000:]) + "\n").encode("utf-8")
    assert len(block) > 48 * 4096
    for threads in (1, 2):
        assert tok.encode_line_block(block, special="none", num_threads=threads) is None


def test_line_block_documents():
    block = LineBlock("a\r\n\nb\rc\né\r\n".encode("utf-8"))
    assert len(block) == 4
    assert block.strings() == ["a", "", "b\rc", "é"]
    assert list(block) == block.strings() and block[3] == "é"
    assert block.text_bytes() == sum(len(s.encode("utf-8")) for s in block.strings())
    unended = LineBlock(b"a\r\nb\r")  # (the reader always ends a block with "\n")
    assert unended.strings() == ["a", "b\r"] and len(unended) == 2
    assert unended.text_bytes() == 3 and len(LineBlock(b"")) == 0 and LineBlock(b"").strings() == []


def reader_batches(path, batch_bytes):
    from spmbpe._cli_read import DocumentReader

    reader = DocumentReader([str(path)], input_format="text", field="text", fields=None, errors="strict",
                            batch_bytes=batch_bytes, documents="line", skip_empty=False)
    return list(reader)


@pytest.mark.parametrize("batch_bytes", [300, 4096, 1 << 20])
def test_the_reader_hands_on_whole_lines_as_read(tmp_path, batch_bytes):
    """Each block is the buffer a read filled, cut after its last line end:
    lines longer than a read (several reads joined), CRLF, empty lines and
    a last line without a line end give the documents and record numbers
    Python's split does, every batch but a long line's within its bound."""
    lines = read_lines((DATA_DIR / "corpus" / "multi_ja.txt").read_text(encoding="utf-8"))[:300]
    lines[10] = "x" * 5000
    lines[11] = ""
    lines[200] = "é" * 3000 + "\r"
    data = ("\n".join(lines) + "\r\nlast " + "z" * 7000).encode("utf-8")  # (longer than a read)
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    docs, records = [], []
    for batch in reader_batches(path, batch_bytes):
        (block,), (recs,) = batch.columns, batch.column_records
        if not len(block):
            continue  # (the input's end, after a batch that ended with it)
        assert isinstance(block, LineBlock)
        assert len(block.data) <= batch_bytes + batch_bytes // 16 + 9000
        docs += block.strings()
        records += list(recs)
    assert docs == read_lines(data.decode("utf-8"))
    assert records == list(range(1, len(docs) + 1))


# ------------------------------------------------------------------ the command line


def run(args, monkeypatch, capsysbinary):
    monkeypatch.setattr(sys, "stdin", None)
    code = main([str(a) for a in args])
    out, err = capsysbinary.readouterr()
    assert code == 0, err.decode()
    return out


def npy_docs(stem):
    ids, starts = np.load(f"{stem}.npy"), np.load(f"{stem}.docs.npy").tolist()
    return [ids[a:b].tolist() for a, b in zip(starts[:-1], starts[1:])]


@pytest.mark.parametrize("errors", ["replace", "skip"])
@pytest.mark.parametrize("batch_size", ["700", "3K", "1M"])
def test_command_line_mixes_byte_blocks_and_strs_as_encode_batch(tmp_path, monkeypatch, capsysbinary, errors,
                                                                 batch_size):
    """A file whose batches hold UTF-8 blocks, blocks with a line that is
    not UTF-8 (the batch then turns to strs), CRLF and empty lines: the
    documents and ids of encode_batch over the lines Python decodes with
    the same --errors, and count's bytes of their text."""
    text = (DATA_DIR / "corpus" / "en_botchan.txt").read_text(encoding="utf-8")
    lines = [s.encode("utf-8") for s in read_lines(text)[:600]]
    for at in (40, 41, 300, 599):
        lines[at] = b"bad \xff line \xe2\x96"
    for at in range(100, 140):
        lines[at] += b"\r"
    lines[200] = b""
    data = b"\n".join(lines) + b"\n"
    src = tmp_path / "in.txt"
    src.write_bytes(data)
    if errors == "replace":
        docs = read_lines(data.decode("utf-8", "replace"))
    else:
        docs = [s for raw in lines if python_valid_prefix(raw) == len(raw) for s in read_lines(raw.decode() + "\n")]
    want = spmbpe.load(MODEL).encode_batch(docs, special="none")
    out = tmp_path / "out.npy"
    run(["encode", "--model", MODEL, "--errors", errors, "--batch-size", batch_size, "--no-progress",
         "-o", out, src], monkeypatch, capsysbinary)
    assert npy_docs(tmp_path / "out") == want
    counted = json.loads(run(["count", "--model", MODEL, "--errors", errors, "--batch-size", batch_size,
                              "--json", "--no-progress", src], monkeypatch, capsysbinary))
    assert counted["total"] == {"tokens": sum(map(len, want)), "documents": len(docs),
                                "bytes": sum(len(d.encode("utf-8")) for d in docs)}


def test_command_line_takes_the_byte_path(tmp_path, monkeypatch, capsysbinary):
    """Valid UTF-8 text input reaches the merge as LineBlocks (the encoder
    is handed no list of strs), and a special token in the text under
    --special all still gives its id (the block goes encode_batch's way)."""
    from spmbpe import _cli_encode

    seen = []
    original = _cli_encode.Encoder._encode
    monkeypatch.setattr(_cli_encode.Encoder, "_encode", lambda self, texts: seen.append(type(texts)) or original(self, texts))
    src = tmp_path / "in.txt"
    src.write_text("Hello world\n<s> starts\n", encoding="utf-8")
    out = tmp_path / "out.npy"
    run(["encode", "--model", LLAMA_SPM_GGUF, "--special", "all", "--no-progress", "-o", out, src],
        monkeypatch, capsysbinary)
    tok = spmbpe.load(LLAMA_SPM_GGUF)
    assert npy_docs(tmp_path / "out") == tok.encode_batch(["Hello world", "<s> starts"], special="all")
    assert npy_docs(tmp_path / "out")[1][0] == tok.bos_id
    assert seen == [LineBlock]
