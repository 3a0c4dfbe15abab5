"""The settings of a summarization run (`fastformer train summarize`). Imports the stdlib only."""

from __future__ import annotations

from dataclasses import dataclass

from fastformer.data.summarization import FORMATS
from fastformer.engine.inputs import WordInputSettings
from fastformer.engine.settings import LabelledDataSettings, RunConfig, SettingError, redefault, setting
from fastformer.engine.verbs import FileEvaluationSettings, TextPredictionSettings
from fastformer.presets import MIXERS


@dataclass
class SummarizationConfig(LabelledDataSettings, WordInputSettings):
    """Abstractive summarization (`fastformer train summarize`); saved as run_config.json beside the model."""

    MODEL_FREE_ARCHITECTURES = ("lead3",)  # the extractive baseline

    train: str | None = redefault(
        LabelledDataSettings,
        "train",
        None,
        help="a file of document / summary pairs (CSV, JSON Lines, Cohan's PubMed) or a folder of CNN/DailyMail's "
        ".story files",
        paths="file-or-folder",
    )
    validation: str | None = redefault(
        LabelledDataSettings,
        "validation",
        None,
        help="validation pairs; default: hold out --validation-fraction of train (or --split)",
        paths="file-or-folder",
    )
    test: str | None = redefault(
        LabelledDataSettings, "test", None, help="test pairs", shapes_weights=False, paths="file-or-folder"
    )
    format: str | None = setting(
        None, "file format (default: from the file; urls: one of CNN/DailyMail's URL lists)", choices=FORMATS
    )
    source_field: str | None = setting(
        None, "document column / key (default: article, or article_text for Cohan's PubMed)"
    )
    target_field: str | None = setting(None, "summary column / key (default: highlights, or abstract_text)")
    split: list[int] | None = setting(
        None, "take train / validation / test of these sizes, in file order, from the one --train file"
    )
    max_train_examples: int | None = redefault(
        LabelledDataSettings, "max_train_examples", None, help="use only the first N training pairs"
    )
    max_eval_examples: int | None = redefault(
        LabelledDataSettings, "max_eval_examples", None, help="use only the first N validation / test pairs"
    )
    max_source_length: int = setting(2048, "document tokens kept (the encoder's positions)", minimum=1)
    max_target_length: int = setting(256, "summary tokens kept, and the longest summary generated", minimum=2)
    architecture: str = setting(
        "fastformer",
        "fastformer, softmax (a softmax Transformer encoder) or lead3 (the first three sentences; no training)",
        choices=(*MIXERS, *MODEL_FREE_ARCHITECTURES),
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
        if self.split is not None and (self.split[0] < 1 or self.split[1] < 1 or self.split[2] < 0):
            raise SettingError(
                "split",
                f"{' '.join(map(str, self.split))}: train and validation need at least 1 pair each, test 0 or more",
            )


@dataclass
class SummarizationEvaluation(FileEvaluationSettings):
    """`fastformer evaluate` on a summarizer's (or Lead-3's) folder: ROUGE on a file of document / summary pairs."""

    data: str | None = redefault(
        FileEvaluationSettings, "data", None, help="a file of document / summary pairs, or a folder of .story files"
    )
    source_field: str | None = setting(None, "document column / key (default: as training reads it)")
    target_field: str | None = setting(None, "summary column / key (default: as training reads it)")
    num_beams: int | None = setting(None, "beam size (default: the run's)", minimum=1)
    max_source_length: int | None = setting(
        None, "document tokens read (default: the run's --max-source-length; at most the model's positions)", minimum=1
    )


@dataclass
class SummarizationPrediction(TextPredictionSettings):
    """`fastformer predict` on a summarizer's folder: documents read as the run read them, or as many tokens as
    asked (an encoder with extended positions can read longer documents than its run did)."""

    max_source_length: int | None = setting(
        None, "document tokens read (default: the run's --max-source-length; at most the model's positions)", minimum=1
    )
