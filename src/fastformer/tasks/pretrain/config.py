"""The settings of a pretraining run (`fastformer train pretrain`). Imports the stdlib only."""

from __future__ import annotations

from dataclasses import dataclass

from fastformer.engine.inputs import TokenizerSettings
from fastformer.engine.settings import DecontaminatedCorpusSettings, RunConfig, SettingError, redefault, setting
from fastformer.presets import MIXERS


@dataclass
class PretrainingConfig(DecontaminatedCorpusSettings, TokenizerSettings):
    """Self-supervised pretraining of the encoder, masked-token prediction or ELECTRA's replaced-token detection
    (`fastformer train pretrain`); saved as run_config.json beside the model. The folder fine-tunes with
    `fastformer train ... --init-from FOLDER`."""

    vocab_size: int = redefault(TokenizerSettings, "vocab_size", 16000)
    block_size: int = redefault(
        DecontaminatedCorpusSettings,
        "block_size",
        256,
        help="tokens per sequence (and the model's positions): a longer text is cut into several",
    )
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
    learning_rate: float = redefault(RunConfig, "learning_rate", 5e-4)
    output_dir: str = redefault(RunConfig, "output_dir", "runs/pretrain")

    def check(self) -> None:
        super().check()
        if self.train is None:
            raise SettingError("train", "pretraining needs files of texts (JSON Lines, CSV/TSV or text)")
