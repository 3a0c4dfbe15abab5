"""The settings of a causal language-model run (`fastformer train lm`). Imports the stdlib only."""

from __future__ import annotations

from dataclasses import dataclass

from fastformer.engine.inputs import TokenizerSettings
from fastformer.engine.settings import CorpusSettings, RunConfig, SettingError, redefault, setting
from fastformer.engine.verbs import FileEvaluationSettings, TextPredictionSettings
from fastformer.presets import MIXERS


@dataclass
class LanguageModelingConfig(CorpusSettings, TokenizerSettings):
    """Causal language modelling (`fastformer train lm`); saved as run_config.json beside the model."""

    train: str | None = redefault(
        CorpusSettings,
        "train",
        None,
        help="training documents: a JSON Lines, CSV/TSV or text file, or a folder of text files (one a document)",
    )
    validation: str | None = redefault(
        CorpusSettings,
        "validation",
        None,
        help="validation documents; default: hold out --validation-fraction of the training documents",
    )
    validation_fraction: float = redefault(CorpusSettings, "validation_fraction", 0.05)
    vocab_size: int = redefault(TokenizerSettings, "vocab_size", 8000)
    block_size: int = setting(256, "tokens per training block (and the model's positions)", minimum=2)
    architecture: str = setting(
        "fastformer",
        "fastformer, softmax (the same model with causal softmax attention) or gpt2 (transformers' "
        "GPT2LMHeadModel of the same size)",
        choices=(*MIXERS, "gpt2"),
    )
    init_from: str | None = setting(
        None,
        "continue pretraining a saved causal language model (a `train lm` folder, e.g. "
        "pretrained/fastformer-imdb-clm): its tokenizer and every weight, the next-token head included, with a "
        "fresh optimizer and schedule (--warmup); --architecture must be its attention; --model may change dropouts, "
        "not sizes",
        paths="folder",
        fingerprint_at_default=False,  # (runs made before it existed still resume)
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
        if self.init_from and self.architecture == "gpt2":
            raise SettingError("init_from", "continues a fastformer folder (--architecture fastformer or softmax)")


@dataclass
class LanguageModelEvaluation(FileEvaluationSettings):
    """`fastformer evaluate` on a language model's folder: perplexity on a file of documents."""

    data: str | None = redefault(FileEvaluationSettings, "data", None, help="a file of documents")
    text_field: str | None = setting(None, "text column / JSON key (default: the run's own, from run_config.json)")
    max_length: int | None = setting(None, "tokens read per text (default: the model's positions)", minimum=1)


@dataclass
class LanguageModelPrediction(TextPredictionSettings):
    """`fastformer predict` on a language model's folder: each text continued."""

    max_new_tokens: int = setting(40, "tokens generated per prompt", minimum=1)
