"""spmbpe.load and the GGUF tokenizer loader: format detection and errors."""

from pathlib import Path

import gguf
import pytest

import spmbpe
from spmbpe.errors import ModelFormatError, UnsupportedModelError

DATA = Path(__file__).parent / "data"
GGUF = DATA / "ggml-vocab-llama-spm.gguf"


def _write_vocab(path, tokens, *, model="llama", scores=None, types=None, extra=None):
    """A vocabulary-only GGUF file written with the gguf package."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("tokenizer.ggml.model", model)
    writer.add_array("tokenizer.ggml.tokens", tokens)
    if scores is not None:
        writer.add_array("tokenizer.ggml.scores", scores)
    if types is not None:
        writer.add_array("tokenizer.ggml.token_type", types)
    for key, value in (extra or {}).items():
        if isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        else:
            writer.add_string(key, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    return path


def test_missing_path_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.gguf"):
        spmbpe.load(tmp_path / "nope.gguf")


def test_unknown_format_lists_the_known_ones(tmp_path):
    path = tmp_path / "vocab.bin"
    path.write_bytes(b"\x00\x01not a tokenizer")
    with pytest.raises(UnsupportedModelError, match="GGUF") as info:
        spmbpe.load(path)
    assert str(path) in str(info.value)


def test_a_folder_is_not_a_tokenizer_file_yet(tmp_path):
    with pytest.raises(UnsupportedModelError, match="folder"):
        spmbpe.load(tmp_path)


def test_load_accepts_str_and_pathlike():
    assert spmbpe.load(str(GGUF)).vocab_size == spmbpe.load(GGUF).vocab_size == 32000


@pytest.mark.parametrize("model", ["gpt2", "t5", "bert"])
def test_other_tokenizer_models_are_refused_by_name(tmp_path, model):
    path = _write_vocab(tmp_path / f"{model}.gguf", ["<unk>", "a", "b"], model=model)
    with pytest.raises(UnsupportedModelError, match=repr(model)):
        spmbpe.load(path)


def test_a_gguf_without_vocabulary_is_refused(tmp_path):
    path = tmp_path / "empty.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    with pytest.raises(ModelFormatError, match="tokenizer.ggml.model"):
        spmbpe.load(path)


@pytest.mark.parametrize("cut", [10, 100, 1000, 100_000, 500_000, 723_000])
def test_truncated_gguf_names_file_and_offset(tmp_path, cut):
    data = GGUF.read_bytes()
    path = tmp_path / "cut.gguf"
    path.write_bytes(data[:cut])
    with pytest.raises(ModelFormatError) as info:
        spmbpe.load(path)
    assert info.value.path == str(path)
    assert info.value.offset is not None and 0 <= info.value.offset <= cut
    assert str(path) in str(info.value) and "offset" in str(info.value)


def test_scores_of_the_wrong_length_are_refused(tmp_path):
    path = _write_vocab(tmp_path / "v.gguf", ["<unk>", "a", "b"], scores=[0.0, -1.0])
    with pytest.raises(ModelFormatError, match="tokenizer.ggml.scores"):
        spmbpe.load(path)


def test_a_duplicated_token_text_is_refused_as_llama_cpp_does(tmp_path):
    path = _write_vocab(tmp_path / "v.gguf", ["<unk>", "a", "b", "a"])
    with pytest.raises(ModelFormatError, match=r"'a' twice \(ids 1 and 3\)"):
        spmbpe.load(path)


def test_invalid_utf8_piece_is_refused_with_its_offset(tmp_path):
    path = _write_vocab(tmp_path / "v.gguf", ["<unk>", "a", "b\u00e9"])
    data = bytearray(path.read_bytes())
    at = data.index("b\u00e9".encode("utf-8"))
    data[at + 1] = 0xFF  # the lead byte of é becomes invalid
    path.write_bytes(bytes(data))
    with pytest.raises(ModelFormatError, match="not valid UTF-8") as info:
        spmbpe.load(path)
    assert info.value.offset == at


def test_special_id_keys_of_the_wrong_type_are_refused(tmp_path):
    path = _write_vocab(
        tmp_path / "v.gguf", ["<unk>", "<s>", "</s>", "a"], extra={"tokenizer.ggml.bos_token_id": "one"}
    )
    with pytest.raises(ModelFormatError, match="bos_token_id"):
        spmbpe.load(path)


def test_llama_cpp_defaults_for_missing_keys(tmp_path):
    # No scores, no types, no special ids: llama.cpp's SPM defaults apply
    # (bos 1, eos 2, unk 0, add_bos true, add_eos false, add_space_prefix true).
    path = _write_vocab(tmp_path / "v.gguf", ["<unk>", "<s>", "</s>", "\u2581", "a", "\u2581a"])
    tok = spmbpe.load(path)
    assert (tok.bos_id, tok.eos_id, tok.unk_id) == (1, 2, 0)
    assert (tok.add_bos, tok.add_eos, tok.add_prefix_space) == (True, False, True)
    assert tok.encode("a", add_special_tokens=True, special="all") == [1, 5]
    # </s> is on llama.cpp's end-of-generation list, so it is special even
    # though the file gives no types; <s> is then plain text.
    assert tok.encode("</s>", special="all") == [2]
    assert tok.token_type(1) == spmbpe.TokenType.NORMAL


def test_load_reads_no_tensor_data(tmp_path):
    # A GGUF with a tensor whose data region is garbage (truncated): the
    # tokenizer loads because only the metadata is read.
    import numpy as np

    path = tmp_path / "model.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("tokenizer.ggml.model", "llama")
    writer.add_array("tokenizer.ggml.tokens", ["<unk>", "<s>", "</s>", "a"])
    writer.add_tensor("w", np.zeros((1024,), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 2048])  # cut into the tensor data
    assert spmbpe.load(path).vocab_size == 4
