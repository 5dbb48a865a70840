"""Public API usage that must type-check under ``mypy --strict`` (see
tests/test_typing.py, which also runs this file): every call and property a
user reaches has precise types, none silently ``Any``."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Tuple

import spmbpe
from spmbpe import AddedToken, BatchEncoding, SpmTokenizer, StreamingDecoder, TokenType

if TYPE_CHECKING:
    from typing_extensions import assert_type


def build() -> SpmTokenizer:
    pieces = ["<unk>", "<s>", "</s>", "\u2581", "a", "b", "\u2581a"] + [f"<0x{b:02X}>" for b in range(256)]
    return SpmTokenizer(
        pieces,
        [0.0, 0.0, 0.0, -1.0, -2.0, -3.0, -0.5] + [0.0] * 256,
        token_types=[TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL] + [TokenType.NORMAL] * 4
        + [TokenType.BYTE] * 256,
        bos_id=1,
        eos_id=2,
        added_tokens=[AddedToken("[X]", 5, special=True, rstrip=True)],
        add_bos=True,
        prefix_scheme="once",
    )


def main(path: str) -> Tuple[str, int]:
    tok: SpmTokenizer = spmbpe.load(path)
    ids: List[int] = tok.encode("Hello world", special="none", add_special_tokens=True)
    spans: List[Tuple[int, int]] = tok.encode_with_offsets("Hello world")[1]
    text: str = tok.decode(ids, skip_special=True)
    raw: bytes = tok.decode_bytes(ids)
    piece: str = tok.id_to_piece(ids[0])
    found: int = tok.piece_to_id(piece)
    kind: TokenType = tok.token_type(found)
    size: int = tok.vocab_size
    bos: Optional[int] = tok.bos_id
    pad: Optional[int] = tok.pad_id
    specials: FrozenSet[str] = tok.special_tokens
    added: List[AddedToken] = tok.added_tokens
    fingerprint: str = tok.fingerprint
    batch = tok.encode_batch(["a", "b"], num_threads=1)
    ordinary: List[int] = tok.encode_ordinary("</s>")

    decoder: StreamingDecoder = tok.streaming_decoder(skip_special=True)
    streamed: str = "".join(decoder.add_token(i) for i in ids) + decoder.flush()

    encoded: BatchEncoding = tok(["a", "a b"], padding=True, pad_token_id=0, truncation=True, max_length=8)
    as_dict: Dict[str, object] = encoded
    rows = encoded.input_ids

    copy: SpmTokenizer = pickle.loads(pickle.dumps(tok))
    try:
        tok.decode([size])
    except spmbpe.InvalidTokenIdError as e:
        assert isinstance(e, IndexError)

    if TYPE_CHECKING:
        assert_type(tok.encode("x"), List[int])
        assert_type(tok.fingerprint, str)
        assert_type(decoder.add_token(1), str)
        assert_type(decoder.flush(), str)
        assert_type(tok("x"), BatchEncoding)
    del spans, raw, kind, bos, pad, specials, added, batch, ordinary, as_dict, rows
    assert streamed == text and copy.fingerprint == fingerprint == tok.fingerprint
    assert build().encode("ab[X] a", special="all") == build().encode("ab[X] a", special="all")
    return text, len(ids)


if __name__ == "__main__":
    import sys

    print(main(sys.argv[1] if len(sys.argv) > 1 else "mistral-v1"))
