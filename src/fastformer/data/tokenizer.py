"""Train a WordPiece tokenizer offline from training texts, saved so that `AutoTokenizer.from_pretrained(DIR)` loads it;
and the token ids a classifier reads of a text (`encode_texts`: its head, or its head and tail), shared by training,
`predict` and `explain`.

Id 0 is the padding token, as the models' `pad_token_id` and the authors' notebook expect. Needs `tokenizers` and
`transformers`, imported when a function is called.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def special_tokens_around(tokenizer) -> tuple[list[int], list[int]]:
    """(ids before, ids after) a text that the tokenizer's own post-processor adds: [CLS] / [SEP] for a BERT's, none
    for the tokenizers runs train (read off the encodings of one token with and without them)."""
    probe = tokenizer.unk_token or "a"
    ids = tokenizer(probe, add_special_tokens=True)["input_ids"]
    bare = tokenizer(probe, add_special_tokens=False)["input_ids"]
    at = next((i for i in range(len(ids) - len(bare) + 1) if ids[i : i + len(bare)] == bare), 0)
    return ids[:at], ids[at + len(bare) :]


HEAD_TOKENS = 128  # head+tail truncation: the first 128 tokens and the last max_length - 128 (Sun et al. 2019)

TRUNCATIONS = ("head", "head+tail")


def encode_texts(tokenizer, texts: list[str], max_length: int, truncation: str = "head") -> list[list[int]]:
    """Token ids of each text with the tokenizer's own special tokens (none for the tokenizers runs train, [CLS] ...
    [SEP] for a BERT tokenizer, as a `convert-bert` model was trained to read), at most `max_length` in all: its
    first tokens (`head`), or its first HEAD_TOKENS and its last ones (`head+tail`: where a long review says what it
    concludes; Sun et al. 2019 found it best on IMDB)."""
    if truncation == "head":
        return tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}")
    before, after = special_tokens_around(tokenizer)
    room = max(1, max_length - len(before) - len(after))
    head = head_length(before, after, max_length, truncation) - len(before)
    encoded = tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]
    return [
        before + (ids if len(ids) <= room else ids[:head] + ids[len(ids) - (room - head) :]) + after for ids in encoded
    ]


def kept_head(tokenizer, max_length: int, truncation: str = "head") -> int:
    """How many of a row's first tokens `encode_texts` keeps at `max_length` before the row's tail: all but the
    closing special tokens (head), or the opening ones and the head's words (head+tail)."""
    return head_length(*special_tokens_around(tokenizer), max_length, truncation)


def head_length(before: list[int], after: list[int], max_length: int, truncation: str) -> int:
    """`kept_head` from the special tokens around a text (`special_tokens_around`, read once by `encode_texts`)."""
    if truncation == "head":
        return max_length - len(after)
    return len(before) + min(HEAD_TOKENS, max(1, max_length - len(before) - len(after)) // 2)


def train_tokenizer(texts: Iterable[str], vocab_size: int = 30000, lowercase: bool = True, min_frequency: int = 2):
    """A `PreTrainedTokenizerFast` (BERT-style normalisation and WordPiece) trained on `texts`."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase, clean_text=True, handle_chinese_chars=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIAL_TOKENS
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return wrap_tokenizer(tokenizer)


def wrap_tokenizer(tokenizer):
    """A `tokenizers.Tokenizer` whose vocabulary starts with SPECIAL_TOKENS as a `PreTrainedTokenizerFast`."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_input_names=["input_ids", "attention_mask"],
    )


def load_or_train_tokenizer(texts: Iterable[str], tokenizer: str | Path | None, vocab_size: int):
    """An existing tokenizer directory if given, else one trained on `texts`."""
    from transformers import AutoTokenizer

    if tokenizer:
        return AutoTokenizer.from_pretrained(str(tokenizer))
    return train_tokenizer(texts, vocab_size=vocab_size)
