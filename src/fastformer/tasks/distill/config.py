"""The settings of a distillation run (`fastformer train distill`). Imports the stdlib only."""

from __future__ import annotations

from dataclasses import dataclass

from fastformer.engine.settings import CorpusSettings, RunConfig, SettingError, check_path, redefault, setting
from fastformer.presets import MIXERS

STAGES = ("layerwise", "end-to-end")


@dataclass
class DistillationConfig(CorpusSettings):
    """General distillation (`fastformer train distill`): a Fastformer student (`--init-from`, e.g. `fastformer
    convert-bert SRC DIR`) learns to reproduce a teacher (`--teacher`: a BERT folder or .zip, converted exactly on
    the fly, or a saved fastformer model of the same depth and width, e.g. `convert-bert --attention softmax`) on
    unlabelled texts, layer by layer. Stage `layerwise`: each student layer reads the teacher's input to that layer
    and matches the teacher's output (no error carried from the layers below); stage `end-to-end`: the student runs
    its own stack and matches every layer's output and the final mean-pooled embedding. Hidden states are compared
    per dimension in units of the teacher's root mean square there (a few of BERT's dimensions are 10-20 times the
    others and would own a plain MSE). The folder fine-tunes with `fastformer train ... --init-from FOLDER`."""

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
    validation_fraction: float = redefault(CorpusSettings, "validation_fraction", 0.01)
    teacher: str | None = setting(
        None,
        "the teacher: a BERT folder or .zip (as `convert-bert` reads) or a fastformer folder with softmax attention",
        paths="file-or-folder",
    )
    init_from: str | None = setting(
        None,
        "the student: a fastformer folder of the teacher's depth, width and vocabulary (`convert-bert`)",
        paths="folder",
    )
    tokenizer: str | None = setting(None, "(the student's tokenizer is used; not settable)", flag=False)
    exclude: list[str] = setting(
        factory=list,
        paths="file",
        help="evaluation files whose texts must never be trained on: every training or validation text that also "
        "occurs in one (whitespace and case normalised) is dropped and counted in metrics.json",
    )
    exclude_where: dict[str, str] | None = setting(None, "JSON Lines filter of the --exclude files", flag=False)
    stage: str = setting(
        "layerwise",
        "layerwise (each layer from the teacher's input to it) or end-to-end (the student's own stack, plus the "
        "mean-pooled embedding)",
        choices=STAGES,
    )
    pooled_weight: float = setting(1.0, "end-to-end: weight of the mean-pooled embedding's loss", minimum=0)
    block_size: int = setting(
        256, "tokens per sequence with [CLS] and [SEP]: a longer text is cut into several", minimum=8
    )
    min_block_tokens: int = setting(16, "drop a text's last piece when it is shorter than this", minimum=1)
    bf16: bool = setting(False, "bfloat16 autocast on CPU for teacher and student (on a GPU with bfloat16: always)")
    epochs: float = redefault(RunConfig, "epochs", 1.0)
    max_steps: int = setting(-1, "optimisation steps (> 0 overrides --epochs)", minimum=-1)
    batch_size: int = redefault(RunConfig, "batch_size", 32)
    learning_rate: float = redefault(RunConfig, "learning_rate", 1e-4)
    weight_decay: float = redefault(RunConfig, "weight_decay", 0.01)
    warmup: float = redefault(RunConfig, "warmup", 0.05)
    evaluations: int = setting(
        8, "held-out evaluations during training, each a checkpoint (the best is kept as the model)", minimum=1
    )
    output_dir: str = redefault(RunConfig, "output_dir", "runs/distill")
    architecture: str = setting(
        "fastformer", "(recorded: the student's attention comes from --init-from)", choices=MIXERS, flag=False
    )

    def check(self) -> None:
        super().check()
        for name in ("train", "teacher", "init_from"):
            if getattr(self, name) is None:
                raise SettingError(name, "distillation needs --train texts, a --teacher and a student (--init-from)")
        for path in self.exclude:
            check_path("exclude", path, "file")
        if set(self.model) - {"local_mixing"}:
            raise SettingError(
                "model", "the student's sizes come from --init-from (--model takes local_mixing=K alone)"
            )
