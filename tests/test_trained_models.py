"""Models trained by sentencepiece's own trainer, with every option that
changes encoding or decoding (``data/trained/``, made by
tools/make_trained_models.py), against the reference each reading follows:

* the ``.model`` against live sentencepiece: ids (and BOS with
  ``add_special_tokens``), the decodes of those ids and of id lists with
  control, unknown, user-defined, byte and unused ids, and the special ids;
* the minimal model folder (``tokenizer.model`` and its config) and the
  folder ``save_pretrained`` wrote from it against transformers 5's
  ``AutoTokenizer`` (goldens: transformers 5 cannot share the test extra's
  environment): ids with and without special tokens, decodes with and
  without ``skip_special``, the named ids;
* the saved ``tokenizer.json`` against live tokenizers.

Every expected value comes from a reference, none from spmbpe.
"""

from __future__ import annotations

import functools
import json
import warnings

import pytest
import sentencepiece as spm
import tokenizers

import spmbpe

import trained_models as trained

NAMES = trained.names()


@functools.lru_cache(maxsize=None)
def _golden(name):
    return trained.read_golden(name)


# Each model's folders, by their key in the golden rows: "minimal", "saved"
# and the variants.
FOLDERS = [(name, key) for name in NAMES for key in ("minimal", "saved", *_golden(name)[0].get("variants", {}))]


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    root = tmp_path_factory.mktemp("trained")
    return {name: trained.materialize(name, root / name, _golden(name)[0]) for name in NAMES}


@functools.lru_cache(maxsize=None)
def _load(path, reference=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the dropped-characters warning: tested below)
        return spmbpe.load(path, reference=reference) if reference else spmbpe.load(path)


def _texts(name):
    return [r["text"] for r in _golden(name)[1] if "text" in r]


def _id_lists(name, below):
    return [r["decode_ids"] for r in _golden(name)[1] if "decode_ids" in r and all(i < below for i in r["decode_ids"])]


# ---------------------------------------------------------------- the matrix


def test_the_matrix_covers_every_trainer_option_that_changes_ids():
    """What the models' own trainer and normalizer specs say they were
    trained with (read by sentencepiece's protobuf)."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    assert len(NAMES) >= 10
    found = set()
    sizes = []
    for name in NAMES:
        proto = pb.ModelProto()
        proto.ParseFromString(trained.model_bytes(name))
        t, n = proto.trainer_spec, proto.normalizer_spec
        assert t.model_type == pb.TrainerSpec.BPE and _golden(name)[0]["transformers"].startswith("5.")
        sizes.append(len(proto.pieces))
        found |= {
            ("byte_fallback", t.byte_fallback), ("split_digits", t.split_digits),
            ("split_by_whitespace", t.split_by_whitespace), ("split_by_unicode_script", t.split_by_unicode_script),
            ("split_by_number", t.split_by_number), ("treat_whitespace_as_suffix", t.treat_whitespace_as_suffix),
            ("add_dummy_prefix", n.add_dummy_prefix), ("remove_extra_whitespaces", n.remove_extra_whitespaces),
            ("allow_whitespace_only_pieces", t.allow_whitespace_only_pieces),
            ("max_sentencepiece_length", t.max_sentencepiece_length < 16),
            ("character_coverage below 0.99", t.character_coverage < 0.99), ("normalization", n.name),
            ("denormalization", proto.denormalizer_spec.name),
            ("user_defined", any(p.type == pb.ModelProto.SentencePiece.USER_DEFINED for p in proto.pieces)),
            ("control", any(p.type == pb.ModelProto.SentencePiece.CONTROL and p.piece not in ("<s>", "</s>")
                            for p in proto.pieces)),
            ("unused", any(p.type == pb.ModelProto.SentencePiece.UNUSED for p in proto.pieces)),
            ("unk_surface", t.unk_surface != " \u2047 "), ("unk_id", t.unk_id), ("bos_id", t.bos_id),
            ("eos_id", t.eos_id), ("pad_id", t.pad_id), ("special pieces", t.unk_piece != "<unk>"),
        }
    on_and_off = ("byte_fallback", "split_digits", "split_by_whitespace", "split_by_unicode_script",
                  "split_by_number", "treat_whitespace_as_suffix", "add_dummy_prefix", "remove_extra_whitespaces",
                  "allow_whitespace_only_pieces", "max_sentencepiece_length", "character_coverage below 0.99",
                  "user_defined", "control", "unused", "unk_surface", "special pieces")
    wanted = {(key, value) for key in on_and_off for value in (True, False)}
    wanted |= {("normalization", rule) for rule in ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity",
                                                     "user_defined")}
    wanted |= {("denormalization", "user_defined"), ("unk_id", 3), ("bos_id", -1), ("eos_id", -1), ("pad_id", 2)}
    assert wanted - found == set()
    assert min(sizes) <= 400 and max(sizes) >= 8000


# ---------------------------------------------------------------- the .model: sentencepiece


def _streamed(tok, ids, **options):
    d = tok.streaming_decoder(**options)
    return "".join(d.add_token(i) for i in ids) + d.flush()


@pytest.mark.parametrize("name", NAMES)
def test_the_model_equals_sentencepiece(matrix, name):
    tok = _load(str(matrix[name].model))
    sp = spm.SentencePieceProcessor(model_file=str(matrix[name].model))
    assert tok.reference == "sentencepiece" and tok.vocab_size == sp.get_piece_size()
    # sentencepiece's bos_id() etc.: its trainer spec's pieces when they are control pieces.
    assert [-1 if i is None else i for i in (tok.bos_id, tok.eos_id, tok.unk_id, tok.pad_id)] == [
        sp.bos_id(), sp.eos_id(), sp.unk_id(), sp.pad_id()]
    texts = _texts(name)
    expected = sp.encode(texts)
    assert [t for t, ids in zip(texts, expected) if tok.encode_ordinary(t) != ids] == []
    assert tok.encode_batch(texts, special="all") == expected
    # (sentencepiece refuses add_bos without a BOS; spmbpe then adds nothing.)
    with_bos = sp.encode(texts, add_bos=True) if sp.bos_id() >= 0 else expected
    assert [t for t, ids in zip(texts, with_bos) if tok.encode(t, add_special_tokens=True, special="all") != ids] == []
    lists = expected[::4] + _id_lists(name, sp.get_piece_size())
    assert [ids for ids in lists if tok.decode(ids) != sp.decode(ids)] == []
    assert [ids for ids in lists[::3] if _streamed(tok, ids) != sp.decode(ids)] == []


def test_the_unknown_piece_decodes_as_the_models_unk_surface(matrix):
    """sentencepiece writes TrainerSpec.unk_surface for the unknown piece
    (" \u2047 " unless trained with another): "??", "<?>", nothing."""
    seen = {}
    for name in NAMES:
        surface = _golden(name)[0]["options"].get("unk_surface")
        tok = _load(str(matrix[name].model))
        sp = spm.SentencePieceProcessor(model_file=str(matrix[name].model))
        unk = sp.unk_id()
        for ids in ([unk], [unk, unk], [sp.piece_to_id("\u2581"), unk, sp.piece_to_id("\u2581")]):
            assert tok.decode(ids) == sp.decode(ids) == _streamed(tok, ids), (name, ids)
        seen[surface] = sp.decode([unk])
    assert {"??": "??", "<?>": "<?>", "": "", None: " \u2047 "}.items() <= seen.items()
    # transformers 5 and tokenizers know no unk_surface: the piece's text.
    m = matrix["custom-rules-500"]
    row = next(r for r in _golden("custom-rules-500")[1] if r.get("decode_ids") == [0])
    ref = tokenizers.Tokenizer.from_file(str(m.tokenizer_json))
    assert row["minimal"][0] == row["saved"][0] == ref.decode([0], skip_special_tokens=False) == "<unk>"
    assert _load(str(m.minimal)).decode([0]) == _load(str(m.tokenizer_json)).decode([0]) == "<unk>"


def test_transformers_4_decodes_the_unknown_piece_through_sentencepiece(matrix, tmp_path):
    """transformers 4's slow LlamaTokenizer decodes an unknown piece that is
    not its unk_token through sentencepiece: the model's unk_surface. Its
    moved-ids model's folder with the defaults names "<unk>" (added past the
    vocabulary) and leaves "[UNK]" to sentencepiece."""
    transformers = pytest.importorskip("transformers")
    if not transformers.__version__.startswith("4."):
        pytest.skip("transformers 4's slow tokenizer is the reference here")
    transformers.logging.set_verbosity_error()
    folder = tmp_path / "moved"
    folder.mkdir()
    (folder / "tokenizer.model").write_bytes(matrix["moved-ids-ko-700"].model.read_bytes())
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LlamaTokenizer"}))
    ref = transformers.AutoTokenizer.from_pretrained(str(folder), use_fast=False, local_files_only=True)
    tok = spmbpe.load(folder, reference="transformers4")
    unk = ref.sp_model.unk_id()
    assert ref.decode([unk]) == "<?>"
    lists = [[unk], [unk, unk], [5, unk, 6], [0, unk, 1], [unk, 700], [700, unk]] + _id_lists(
        "moved-ids-ko-700", 700)[::2]
    for skip in (False, True):
        assert [ids for ids in lists if tok.decode(ids, skip_special=skip) != ref.decode(ids, skip_special_tokens=skip)
                ] == []


# ---------------------------------------------------------------- the folders: transformers 5 (goldens)


@functools.lru_cache(maxsize=None)
def _before_a_space(name):
    """Whether a text has a character the transformers 5 reading drops
    right before a space (a "▁" that then meets what came before it)."""
    return trained.dropped_before_a_space(trained.model_bytes(name))


@pytest.mark.parametrize("name, folder", FOLDERS)
def test_the_folders_equal_transformers_5(matrix, name, folder):
    tok = _load(str(matrix[name].folders()[folder]))
    meta, rows = _golden(name)
    assert tok.reference == "transformers"
    assert [tok.bos_id, tok.eos_id, tok.unk_id, tok.pad_id] == meta["named"][folder]
    bad = []
    for row in rows:
        if "text" in row:
            want = row[folder]  # ids, ids with special tokens, and the decodes of the latter
            text = row["text"]
            got = [tok.encode(text, special="all"), tok.encode(text, special="all", add_special_tokens=True)]
            ids = want[1]
        else:
            want = row[folder]  # the decodes of the id list
            got, ids = [], row["decode_ids"]
        got += [tok.decode(ids), tok.decode(ids, skip_special=True)]
        if got != want:
            bad.append((row.get("text", ids), want, got))
    assert bad == []


@pytest.mark.parametrize("name", NAMES)
def test_the_saved_tokenizer_json_equals_tokenizers(matrix, name):
    tok = _load(str(matrix[name].tokenizer_json))
    ref = tokenizers.Tokenizer.from_file(str(matrix[name].tokenizer_json))
    assert tok.reference == "tokenizers"
    texts = _texts(name)
    expected = [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
    assert [t for t, ids in zip(texts, expected) if tok.encode(t, special="all") != ids] == []
    lists = expected[::3] + _id_lists(name, ref.get_vocab_size())
    assert [ids for ids in lists if tok.decode(ids) != ref.decode(ids, skip_special_tokens=False)] == []


def test_a_dropped_character_before_a_space_lets_its_neighbours_merge(matrix):
    """Where tokenizers drops a character (no piece, no byte pieces, no
    unknown token), the "▁" after it meets what came before it: "▁▁" and
    "x▁" pieces are built across the gap (identity-code-600's saved
    tokenizer.json: "\u02a9  " is [▁▁, ▁]), so no chunk is cut there."""
    bad = []
    for name in NAMES:
        gap = _before_a_space(name)
        json_tok = _load(str(matrix[name].tokenizer_json))
        ref = tokenizers.Tokenizer.from_file(str(matrix[name].tokenizer_json))
        for folder, path in matrix[name].folders().items():
            tok = _load(str(path))
            bad += [(name, folder, r["text"]) for r in _golden(name)[1]
                    if "text" in r and gap(r["text"]) and tok.encode(r["text"], special="all") != r[folder][0]]
        bad += [(name, "tokenizer.json", t) for t in _texts(name)
                if gap(t) and json_tok.encode(t, special="all") != ref.encode(t, add_special_tokens=False).ids]
    assert bad == []


def test_an_8_byte_text_is_not_the_longer_piece_it_begins(tmp_path):
    """A text of exactly 8 bytes fills the vocabulary table's 8-byte head,
    which then says nothing of its length: "▁posit" is not "▁positif".
    Found by tools/differential.py --explore-trainer on a model trained
    with split_by_unicode_script=False, add_dummy_prefix=False and identity
    rules, where "a posit\U0001f999" gave \u2581positif; here the smallest
    vocabulary that shows it, against live sentencepiece."""
    from spm_proto import bpe_model_proto

    pieces = ["<unk>", "<s>", "</s>", "\u2581", *"abcdefghijklmnopqrstuvwxyz",
              "\u2581p", "\u2581po", "\u2581pos", "\u2581posi", "if", "\u2581positif"]
    scores = [0.0, 0.0, 0.0] + [-float(i) for i in range(len(pieces) - 3)]
    model = bpe_model_proto(pieces, scores, [2, 3, 3] + [1] * (len(pieces) - 3), byte_fallback=False)
    path = tmp_path / "m.model"
    path.write_bytes(model)
    tok = spmbpe.load(path)
    sp = spm.SentencePieceProcessor(model_proto=model)
    assert sp.encode("posit", out_type=str) == ["\u2581posi", "t"]
    assert [tok.encode(t) for t in ("posit", "a posit\U0001f999")] == [sp.encode(t) for t in ("posit", "a posit\U0001f999")]
    assert tok.piece_to_id("\u2581posit") == sp.piece_to_id("\u2581posit") == 0


# ---------------------------------------------------------------- issue 47's two behaviours


def test_a_folder_without_byte_fallback_drops_what_its_vocabulary_lacks(matrix):
    """transformers 5 builds the folder's BPE with no unknown token: a
    character outside the vocabulary is dropped and its neighbours merge
    across the gap ("a\\nb" is "\u2581ab"); sentencepiece, reading the same
    tokenizer.model, normalizes the newline to a space."""
    name = "nmt-nfkc-en-1000"
    row = next(r for r in _golden(name)[1] if r.get("text") == "a\nb")
    tok = _load(str(matrix[name].minimal))
    assert tok.encode("a\nb") == row["minimal"][0] == row["saved"][0]
    assert [tok.id_to_piece(i) for i in row["minimal"][0]] == ["\u2581ab"]
    unk = tok.unk_id
    assert unk == _golden(name)[0]["named"]["minimal"][2] == 0
    for text in ("\U0001f999", "a\U0001f999b", "x\u0378y"):
        row = next(r for r in _golden(name)[1] if r.get("text") == text)
        assert unk not in row["minimal"][0] and tok.encode(text) == row["minimal"][0], text
    sp = spm.SentencePieceProcessor(model_file=str(matrix[name].model))
    kept = _load(str(matrix[name].minimal), "sentencepiece")
    assert kept.encode("a\U0001f999b") == sp.encode("a\U0001f999b") and unk in kept.encode("a\U0001f999b")


def test_such_a_folder_warns_once_at_load(matrix):
    """A warning naming reference='sentencepiece' when the folder's reading
    drops characters; none with byte fallback or under sentencepiece."""
    for name, warns in (("nfkc-ja-2000", True), ("llama-8000", False), ("symbols-1200", False)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tok = spmbpe.load(matrix[name].minimal)
            tok.encode("a\nb \U0001f999 c")
        assert len(caught) == int(warns), (name, [str(w.message) for w in caught])
        if warns:
            message = str(caught[0].message)
            assert caught[0].category is UserWarning and caught[0].filename == __file__
            assert str(matrix[name].minimal) in message and "dropped" in message
            assert "reference='sentencepiece'" in message
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spmbpe.load(matrix["nfkc-ja-2000"].minimal, reference="sentencepiece")
        spmbpe.load(matrix["nfkc-ja-2000"].model)
        spmbpe.load(matrix["nfkc-ja-2000"].saved)
    assert len(caught) == 1 and "tokenizer.model this folder lacks" in str(caught[0].message)


@pytest.mark.parametrize("model_type", ["unigram", "word", "char"])
def test_a_model_the_trainer_makes_of_another_type_is_refused_naming_the_option_and_file(tmp_path, model_type):
    """spmbpe implements sentencepiece's BPE: a Unigram, word or char model
    is refused as a .model, and under the readings that run it with
    sentencepiece (transformers 5 builds a BPE from any model's pieces, and
    spmbpe with it)."""
    import io

    lines = (trained.DATA.parent / "corpus" / "en_botchan.txt").read_text(encoding="utf-8")[:20000].split("\n")
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out, model_type=model_type,
                                   vocab_size=200 if model_type != "char" else 60, minloglevel=2,
                                   use_all_vocab=model_type != "unigram", hard_vocab_limit=False)
    path = tmp_path / "m.model"
    path.write_bytes(out.getvalue())
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "tokenizer.model").write_bytes(out.getvalue())
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LlamaTokenizer"}))
    for where, load in ((path, lambda: spmbpe.load(path)),
                        (folder / "tokenizer.model", lambda: spmbpe.load(folder, reference="sentencepiece")),
                        (folder / "tokenizer.model", lambda: spmbpe.load(folder, reference="transformers4"))):
        with pytest.raises(spmbpe.UnsupportedModelError) as info:
            load()
        assert str(where) in str(info.value) and "model_type" in str(info.value), str(info.value)
