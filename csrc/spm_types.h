/* Token types and per-piece flags: the one definition the compiled core
 * reads (spmbpe/_csrc.pxd declares it) and spmbpe.tokens.TokenType is
 * checked against (tests/test_core_tables.py, via spmbpe._core.TOKEN_TYPES).
 */
#ifndef SPM_TYPES_H
#define SPM_TYPES_H

/* The kind of a piece, numbered as sentencepiece's
 * ModelProto.SentencePiece.Type and GGUF's tokenizer.ggml.token_type both
 * number it.  Decoding and offsets depend on it. */
enum spm_token_type {
    SPM_TYPE_NORMAL = 1,
    SPM_TYPE_UNKNOWN = 2,
    SPM_TYPE_CONTROL = 3,
    SPM_TYPE_USER_DEFINED = 4,
    SPM_TYPE_UNUSED = 5,
    SPM_TYPE_BYTE = 6
};

/* Per-piece flags (one byte per id) that the tokenizer derives from the
 * types and the reference, and the core reads while merging. */
enum spm_piece_flag {
    /* the merger may build this piece from two symbols */
    SPM_FLAG_MERGEABLE = 1,
    /* an UNUSED piece: split again into the halves that built it
     * (sentencepiece's resegment) */
    SPM_FLAG_RESPLIT = 2
};

#endif /* SPM_TYPES_H */
