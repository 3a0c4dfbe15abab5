"""The settings of a classification run (`fastformer train classification`): RunConfig (engine/settings.py) and the
word inputs (engine/inputs.py), plus what is classification's own. Imports the stdlib only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastformer.engine.inputs import TeacherSettings
from fastformer.engine.settings import LabelledDataSettings, RunConfig, SettingError, redefault, setting
from fastformer.engine.verbs import FileEvaluationSettings, TextPredictionSettings
from fastformer.presets import MIXERS


@dataclass
class ClassificationConfig(LabelledDataSettings, TeacherSettings):
    """Text classification (`fastformer train classification`); saved as run_config.json beside the model."""

    MODEL_FREE_ARCHITECTURES = ("tfidf", "nbsvm")  # the bag-of-words baselines

    train: str | None = redefault(
        LabelledDataSettings,
        "train",
        None,
        help="training file or folder (CSV/TSV/JSONL/fastText/SST trees, .gz too; a folder of label sub-folders, "
        "as aclImdb/train; mind-topics: several joined by commas); omit for the built-in generated task",
        paths="file-or-folder",
    )
    validation: str | None = redefault(
        LabelledDataSettings,
        "validation",
        None,
        help="validation file; default: hold out --validation-fraction of the training file",
        paths="file-or-folder",
    )
    test: str | None = redefault(
        LabelledDataSettings,
        "test",
        None,
        help="test file (mind-topics: its texts are kept out of training)",
        paths="file-or-folder",
    )
    text_field: str | None = setting(
        None,
        "text column name or position / JSON key, or several joined by commas whose texts are joined (title,content) "
        "(default: 'text', or the columns after the label of a header-less CSV)",
    )
    label_field: str | None = setting(
        None,
        "label column name or position / JSON key (default: 'label', or column 0); a folder: 'folder' (its "
        "sub-folders' names, the default) or 'rating' (aclImdb's <id>_<rating>.txt)",
    )
    format: str | None = setting(
        None,
        "file format (default: from the file name); mind-topics: MIND news topic classification from news.tsv / "
        "MIND folders / MINDRec JSON (--text-field title, abstract, body or e.g. title,abstract; --label-field "
        "category or subcategory; without --validation / --test, title-disjoint splits by category)",
        choices=("csv", "tsv", "jsonl", "fasttext", "trees", "folder", "mind-topics"),
    )
    has_header: bool | None = setting(None, "CSV/TSV header row (default: guessed)")
    test_fraction: float = setting(
        0.1, "mind-topics without --test: the share of distinct titles held out for testing", above=0, below=1
    )
    binary_threshold: float | None = setting(
        None, "map numeric labels to pos (>= threshold) / neg, e.g. 7 for IMDB sentiment"
    )
    max_train_examples: int | None = redefault(
        LabelledDataSettings, "max_train_examples", None, help="use only N training examples (see --subset)"
    )
    max_eval_examples: int | None = redefault(
        LabelledDataSettings, "max_eval_examples", None, help="use only N validation / test examples (see --subset)"
    )
    subset: str = setting(
        "random",
        "which examples --max-*-examples keeps: random (a fixed-seed sample, the same for every --seed and "
        "architecture) or first (file order)",
        choices=("random", "first"),
    )
    max_length: int = setting(512, "tokens kept per text (truncation)", minimum=1)
    truncation: str = setting(
        "head",
        "a text longer than --max-length keeps its first tokens (head) or its first 128 and its last ones (head+tail: "
        "where a long review concludes; Sun et al. 2019's best on IMDB); evaluate and predict read texts the same way",
        choices=("head", "head+tail"),
        fingerprint_at_default=False,
    )
    evaluations_per_epoch: int = setting(
        1,
        "validation evaluations (each a checkpoint) per epoch: more than 1 lets a run killed inside a long epoch "
        "resume near where it stopped (the best evaluation is kept as the model)",
        minimum=1,
        fingerprint_at_default=False,
    )
    unlabelled: str | None = setting(
        None,
        "--teacher: in-domain texts with no label (JSON Lines / CSV / text) that only the teacher labels; texts of the "
        "validation or test split are dropped; a folder: one text a file, as aclImdb's train/unsup/",
        paths="file-or-folder",
        fingerprint_at_default=False,
    )
    unlabelled_field: str | None = setting(
        None, "--unlabelled: its text column / JSON key (default 'text')", fingerprint_at_default=False
    )
    max_unlabelled: int | None = setting(
        None, "--unlabelled: use only the first N texts", minimum=1, fingerprint_at_default=False
    )
    bf16: bool = setting(
        False,
        "bfloat16 autocast on CPU, training and evaluation (on a GPU with bfloat16 it is always on); measured 1.8x "
        "faster for a converted MiniLM on one core with AVX-512 BF16; float32 on a CPU without bfloat16 dot products "
        "(AVX512_BF16 or AMX on x86; FASTFORMER_CPU_BF16=1 forces bf16)",
        fingerprint_at_default=False,
    )
    architecture: str = setting(
        "fastformer",
        "fastformer, softmax (the same model with softmax attention: the paper's Transformer baseline), tfidf (TF-IDF "
        "+ logistic regression) or nbsvm (NB-scaled binary uni/bi/trigrams + logistic regression, Wang & Manning 2012)",
        choices=(*MIXERS, *MODEL_FREE_ARCHITECTURES),
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
        if self.unlabelled and not self.teacher:
            raise SettingError("unlabelled", "texts with no label need a --teacher to label them")
        if self.teacher and self.architecture in self.MODEL_FREE_ARCHITECTURES:
            raise SettingError("teacher", f"the {self.architecture} baseline learns from labels only")
        if self.format == "mind-topics" and self.train is None:
            raise SettingError("train", "format mind-topics needs --train (MIND news.tsv files / folders or MINDRec)")

    @classmethod
    def builtin_defaults(cls) -> dict[str, Any]:
        """`fastformer train` with no data: the generated long-document task, small enough for a minute on two
        cores. Its default folder is a demo: a second run there replaces the first (see cli/train.py)."""
        return dict(
            max_length=512,
            epochs=4.0,
            batch_size=32,
            vocab_size=1000,
            output_dir="runs/builtin-longdoc",
            model=dict(hidden_size=64, num_attention_heads=4, intermediate_size=128),
        )


@dataclass
class ClassificationEvaluation(FileEvaluationSettings):
    """`fastformer evaluate` on a classifier's folder: a labelled file, read with the run's own columns and label
    mapping unless told otherwise."""

    data: str | None = redefault(FileEvaluationSettings, "data", None, help="a labelled file in the training formats")
    text_field: str | None = setting(None, "text column / JSON key (default: the run's own, from run_config.json)")
    label_field: str | None = setting(None, "label column / JSON key (default: the run's own)")
    binary_threshold: float | None = setting(None, "numeric labels to pos / neg (default: the run's own)")
    max_length: int | None = setting(
        None, "tokens read per text (default: the run's --max-length; else the model's positions)", minimum=1
    )


@dataclass
class ClassificationPrediction(TextPredictionSettings):
    """`fastformer predict` on a classifier's folder: texts read as the run read them, or as many tokens as asked."""

    max_length: int | None = setting(
        None, "tokens read per text (default: the run's --max-length; else the model's positions)", minimum=1
    )
