"""The distillation task's torch code (its `Task` class is task.py's): the teacher and student loaded and checked,
the texts cut into [CLS] ... [SEP] pieces of the student's tokenizer, the losses of each stage (`layerwise`: each
layer from the teacher's input; `end-to-end`: through the student's own stack plus the mean-pooled embedding) in a
Trainer, and the held-out losses per layer. The student folder is a `FastformerModel` that `train ... --init-from`
fine-tunes.

Why whole layers and not attention maps: a Fastformer token mixes no neighbour's value (u_i = k * v_i), so it cannot
copy softmax attention's per-token mixing; what it can match is each layer's output (LoLCATs' layer-wise output
matching, MOHAWK's staging: first each layer from the teacher's input, then the whole network).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import torch

from fastformer.engine.state_loss import layer_losses, mean_pool, pooled_loss
from fastformer.tasks.distill.config import DistillationConfig

SCALE_PIECES = 64  # held-out pieces the teacher's per-dimension scales are measured on (fixed: a resume sees the same)


class DistillationError(ValueError):
    """A teacher or student that cannot be distilled between; one line naming both values."""


def load_teacher(path: str | Path):
    """The teacher as a FastformerModel in eval mode with frozen weights: a BERT folder or .zip converted exactly
    (`convert_bert(..., "softmax")`), or a saved fastformer model."""
    from fastformer.convert_bert import ConversionError, convert_bert, read_bert

    path = Path(path)
    if path.suffix == ".zip" or bert_folder(path):
        with tempfile.TemporaryDirectory(prefix="teacher-") as scratch:
            try:
                teacher = convert_bert(read_bert(path, Path(scratch)), "softmax")
            except ConversionError as error:
                raise DistillationError(f"--teacher {error}") from None
    else:
        teacher = load_fastformer("--teacher", path)
    teacher.eval().requires_grad_(False)
    return teacher


def bert_folder(path: Path) -> bool:
    """Whether `path` holds a Hugging Face BERT (config.json's model_type), which convert-bert reads."""
    try:
        return json.loads((path / "config.json").read_text()).get("model_type") == "bert"
    except (OSError, ValueError, AttributeError):
        return False


def load_fastformer(flag: str, path: Path, **overrides):
    """A saved fastformer folder as a FastformerModel (any head's folder: its encoder), refusals in one line;
    `overrides`: config fields that leave its outputs as they are (local_mixing: identity convolutions)."""
    from fastformer.engine.init_from import InitFromError, pretrained_config
    from fastformer.engine.task import NotARunFolder, check_model_files
    from fastformer.models.fastformer import FastformerModel

    try:
        pretrained_config(path)
        check_model_files(path)
    except (InitFromError, NotARunFolder) as error:
        raise DistillationError(f"{flag} {str(error).removeprefix('--init-from ')}") from None
    # float32 as --init-from loads it (a bf16 folder, the shipped student, would otherwise train in bf16 weights)
    return FastformerModel.from_pretrained(str(path), dtype=torch.float32, **overrides)


def check_pair(teacher, student, cfg: DistillationConfig) -> None:
    """Teacher and student match layer for layer: depth, width and vocabulary; the student reads --block-size."""
    for name in ("num_hidden_layers", "hidden_size", "vocab_size"):
        t, s = getattr(teacher.config, name), getattr(student.config, name)
        if t != s:
            raise DistillationError(f"--init-from {cfg.init_from} has {name}={s}, --teacher {cfg.teacher} {name}={t}")
    for model, flag in ((student, "--init-from"), (teacher, "--teacher")):
        if cfg.block_size > model.config.max_position_embeddings:
            raise DistillationError(
                f"--block-size {cfg.block_size}: {flag} has {model.config.max_position_embeddings} positions"
            )
    if getattr(student.config, "causal", False) or getattr(teacher.config, "causal", False):
        raise DistillationError("distillation matches bidirectional encoders; a causal model was given")


class WrappedPieces(torch.utils.data.Dataset):
    """Each text tokenized and cut into pieces of `block_size` tokens between the tokenizer's first and last special
    tokens ([CLS] ... [SEP] for BERT's; BOS ... EOS otherwise), as the teacher was trained to read; a last piece
    shorter than `min_tokens` is dropped unless it is the whole text."""

    def __init__(self, texts: list[str], tokenizer, block_size: int, min_tokens: int):
        first = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
        last = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        before, after = [t for t in (first,) if t is not None], [t for t in (last,) if t is not None]
        room = block_size - len(before) - len(after)
        encoded = tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]
        self.input_ids: list[list[int]] = []
        for ids in encoded:
            for start in range(0, max(len(ids), 1), room):
                piece = ids[start : start + room]
                if len(piece) < min_tokens and start > 0:
                    continue
                self.input_ids.append(before + piece + after)

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, i: int) -> dict[str, list[int]]:
        return {"input_ids": self.input_ids[i]}

    def num_tokens(self) -> int:
        return sum(len(ids) for ids in self.input_ids)


class PaddingCollator:
    def __init__(self, pad_id: int):
        self.pad_id = pad_id

    def __call__(self, items: list[dict[str, list[int]]]) -> dict[str, torch.Tensor]:
        length = max(len(item["input_ids"]) for item in items)
        ids = torch.full((len(items), length), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(items), length), dtype=torch.long)
        for row, item in enumerate(items):
            ids[row, : len(item["input_ids"])] = torch.tensor(item["input_ids"])
            attention[row, : len(item["input_ids"])] = 1
        return dict(input_ids=ids, attention_mask=attention)


def student_states(student, teacher_states, input_ids, mask, stage: str) -> list[torch.Tensor]:
    """The student's states to compare with the teacher's: `layerwise`, layer l's output from the teacher's input to
    it (depths 1..L); `end-to-end`, its own stack's states (depths 0..L)."""
    if stage == "layerwise":
        encoder = student.encoder
        return [encoder.layer_at(depth)(teacher_states[depth], mask) for depth in range(encoder.num_layers)]
    out = student(input_ids=input_ids, attention_mask=mask.long(), output_hidden_states=True, return_dict=True)
    return list(out.hidden_states)


def teacher_hidden_states(teacher, batch) -> tuple[torch.Tensor, ...]:
    """The teacher's states at every depth (embeddings first), without gradients."""
    with torch.no_grad():
        return teacher(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True
        ).hidden_states


def distillation_losses(student, teacher, batch, scales, stage: str, teacher_states=None) -> dict[str, torch.Tensor]:
    """{"layers": (depths,) per-layer losses of `stage`, "pooled": the mean-pooled embedding's loss, "last": the
    student's last state}; `teacher_states` when already computed for this batch."""
    mask = batch["attention_mask"].bool()
    if teacher_states is None:
        teacher_states = teacher_hidden_states(teacher, batch)
    students = student_states(student, teacher_states, batch["input_ids"], mask, stage)
    first = 1 if stage == "layerwise" else 0
    layers = layer_losses(students, list(teacher_states[first:]), scales[first:], mask)
    pooled = pooled_loss(students[-1], teacher_states[-1], scales[-1], mask)
    return dict(layers=layers, pooled=pooled, last=students[-1])


def total_loss(losses: dict[str, torch.Tensor], stage: str, pooled_weight: float) -> torch.Tensor:
    """What is minimised: the mean of the layers' losses (+ pooled_weight x the pooled loss, end-to-end)."""
    loss = losses["layers"].mean()
    return loss + pooled_weight * losses["pooled"] if stage == "end-to-end" else loss


def distillation_trainer():
    """A transformers Trainer whose loss is the distillation loss against a frozen teacher (kept out of the model,
    so checkpoints and the saved folder hold the student alone)."""
    from transformers import Trainer

    class DistillationTrainer(Trainer):
        def __init__(self, *args, teacher, scales, stage, pooled_weight, **kwargs):
            super().__init__(*args, **kwargs)
            self.teacher, self.scales, self.stage, self.pooled_weight = teacher, scales, stage, pooled_weight

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            self.teacher.to(self.args.device)
            # autocast here, not only around model.forward (accelerate's): the teacher and, in the layerwise stage,
            # the student's layers are called outside the model's forward
            device = self.args.device.type
            with torch.autocast(device, dtype=torch.bfloat16, enabled=bool(self.args.bf16)):
                losses = distillation_losses(model, self.teacher, inputs, self.scales.to(self.args.device), self.stage)
            loss = total_loss(losses, self.stage, self.pooled_weight)
            return (loss, losses) if return_outputs else loss

        def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
            inputs = self._prepare_inputs(inputs)
            with torch.no_grad(), self.autocast_smart_context_manager():
                loss = self.compute_loss(model, inputs)
            return loss.detach(), None, None

    return DistillationTrainer


@torch.no_grad()
def held_out_scores(student, teacher, dataset, collator, scales, batch_size: int, bf16: bool) -> dict[str, Any]:
    """Per-layer losses of both stages, the pooled loss and the mean cosine between the student's and the teacher's
    mean-pooled embeddings, over the held-out pieces (each batch weighted by its real tokens)."""
    student.eval()
    device = next(student.parameters()).device  # a GPU after training there: the teacher and batches follow
    teacher.to(device)
    scales = scales.to(device)
    sums: dict[str, Any] = dict(layerwise=0.0, end_to_end=0.0, pooled=0.0, cosine=0.0)
    tokens = rows = 0
    for start in range(0, len(dataset), batch_size):
        batch = collator([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
        batch = {name: tensor.to(device) for name, tensor in batch.items()}
        mask = batch["attention_mask"].bool()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):  # the teacher read once for both stages
            states = teacher_hidden_states(teacher, batch)
            layerwise = distillation_losses(student, teacher, batch, scales, "layerwise", states)
            end_to_end = distillation_losses(student, teacher, batch, scales, "end-to-end", states)
            ours, theirs = end_to_end["last"], states[-1]
        n, b = int(mask.sum()), mask.shape[0]
        sums["layerwise"] = sums["layerwise"] + layerwise["layers"] * n
        sums["end_to_end"] = sums["end_to_end"] + end_to_end["layers"] * n
        sums["pooled"] += float(end_to_end["pooled"]) * b
        cosine = torch.nn.functional.cosine_similarity(mean_pool(ours, mask), mean_pool(theirs, mask))
        sums["cosine"] += float(cosine.sum())
        tokens, rows = tokens + n, rows + b
    return dict(
        layerwise_loss_per_layer=[round(float(x) / tokens, 5) for x in sums["layerwise"]],
        end_to_end_loss_per_depth=[round(float(x) / tokens, 5) for x in sums["end_to_end"]],
        pooled_loss=round(sums["pooled"] / rows, 5),
        pooled_cosine=round(sums["cosine"] / rows, 5),
        pieces=rows,
        tokens=tokens,
    )
