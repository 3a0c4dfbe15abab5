"""The settings of a pretraining run (`fastformer train pretrain`). Imports the stdlib only."""

from __future__ import annotations

from dataclasses import dataclass

from fastformer.engine.inputs import TokenizerSettings
from fastformer.engine.settings import CorpusSettings, RunConfig, SettingError, redefault, setting
from fastformer.presets import MIXERS


@dataclass
class PretrainingConfig(CorpusSettings, TokenizerSettings):
    """Self-supervised pretraining of the encoder, masked-token prediction or ELECTRA's replaced-token detection
    (`fastformer train pretrain`); saved as run_config.json beside the model. The folder fine-tunes with
    `fastformer train ... --init-from FOLDER`."""

    train: str | None = redefault(
        CorpusSettings,
        "train",
        None,
        help="unlabelled texts: JSON Lines, CSV/TSV or text files (.gz too), several joined by commas",
    )
    validation: str | None = redefault(
        CorpusSettings,
        "validation",
        None,
        help="held-out texts; default: hold out --validation-fraction of the training texts",
    )
    exclude: list[str] = setting(
        factory=list,
        paths="file",
        help="evaluation files whose texts must never be trained on: every training or validation text that also "
        "occurs in one (whitespace and case normalised) is dropped and counted in metrics.json (--where "
        "exclude:KEY=VALUE filters them, e.g. exclude:split=test)",
    )
    exclude_where: dict[str, str] | None = setting(None, "JSON Lines filter of the --exclude files", flag=False)
    validation_fraction: float = redefault(CorpusSettings, "validation_fraction", 0.01)
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
        from fastformer.engine.settings import check_path

        for path in self.exclude:
            check_path("exclude", path, "file")
