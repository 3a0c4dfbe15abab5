"""The settings of a distillation run (`fastformer train distill`). Imports the stdlib only."""

from __future__ import annotations

from dataclasses import dataclass

from fastformer.engine.settings import DecontaminatedCorpusSettings, RunConfig, SettingError, redefault, setting
from fastformer.presets import MIXERS

STAGES = ("layerwise", "end-to-end")


@dataclass
class DistillationConfig(DecontaminatedCorpusSettings):
    """General distillation (`fastformer train distill`): a Fastformer student (`--init-from`, e.g. `fastformer
    convert-bert SRC DIR`) learns to reproduce a teacher (`--teacher`: a BERT folder or .zip, converted exactly on
    the fly, or a saved fastformer model of the same depth and width, e.g. `convert-bert --attention softmax`) on
    unlabelled texts, layer by layer. Stage `layerwise`: each student layer reads the teacher's input to that layer
    and matches the teacher's output (no error carried from the layers below); stage `end-to-end`: the student runs
    its own stack and matches every layer's output and the final mean-pooled embedding. Hidden states are compared
    per dimension in units of the teacher's root mean square there (a few of BERT's dimensions are 10-20 times the
    others and would own a plain MSE). The folder fine-tunes with `fastformer train ... --init-from FOLDER`."""

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
    stage: str = setting(
        "layerwise",
        "layerwise (each layer from the teacher's input to it) or end-to-end (the student's own stack, plus the "
        "mean-pooled embedding)",
        choices=STAGES,
    )
    pooled_weight: float = setting(1.0, "end-to-end: weight of the mean-pooled embedding's loss", minimum=0)
    block_size: int = redefault(
        DecontaminatedCorpusSettings,
        "block_size",
        256,
        help="tokens per sequence with [CLS] and [SEP]: a longer text is cut into several",
    )
    bf16: bool = redefault(
        DecontaminatedCorpusSettings,
        "bf16",
        False,
        help="bfloat16 autocast on CPU for teacher and student, where the CPU has bfloat16 dot products (AVX512_BF16 "
        "or AMX on x86; on a GPU with "
        "bfloat16: always)",
    )
    learning_rate: float = redefault(RunConfig, "learning_rate", 1e-4)
    output_dir: str = redefault(RunConfig, "output_dir", "runs/distill")
    architecture: str = setting(
        "fastformer", "(recorded: the student's attention comes from --init-from)", choices=MIXERS, flag=False
    )

    def check(self) -> None:
        super().check()
        for name in ("train", "teacher", "init_from"):
            if getattr(self, name) is None:
                raise SettingError(name, "distillation needs --train texts, a --teacher and a student (--init-from)")
        if set(self.model) - {"local_mixing"}:
            raise SettingError(
                "model", "the student's sizes come from --init-from (--model takes local_mixing=K alone)"
            )
