"""The distillation losses on hidden states, pure functions with a slow reference beside them (tests hold the two
equal): general distillation's (`fastformer train distill`) and task distillation's `--distill-hidden`
(engine/teacher.py).

Hidden states are compared per dimension in units of the teacher's root mean square in that dimension at that layer,
floored at the layer's median (`teacher_scales`): BERT's post-LN states have a few dimensions many times larger than
the rest, which a plain MSE would spend the whole student on. Only real tokens count; every sequence weighs by its
number of real tokens.
"""

from __future__ import annotations

import torch


def teacher_scales(states: tuple[torch.Tensor, ...], mask: torch.Tensor) -> torch.Tensor:
    """(depths, hidden): the root mean square of each dimension of each teacher state (B, N, hidden) over the real
    tokens of `mask` (B, N) bool, floored at the median over that state's dimensions. The floor: a dimension the
    teacher keeps near 0 (all-MiniLM-L6-v2's last LayerNorm has some) would otherwise turn a small error there into
    the largest loss of all (measured: 18,000 against ~1.5 at the other layers)."""
    real = mask[..., None].float()
    count = real.sum().clamp(min=1)
    scales = torch.stack([((state.float() ** 2) * real).sum((0, 1)) / count for state in states]).sqrt()
    floor = scales.median(dim=-1, keepdim=True).values.clamp(min=torch.finfo(torch.float32).tiny)
    return torch.maximum(scales, floor)


def state_loss(student: torch.Tensor, teacher: torch.Tensor, scale: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over real tokens and dimensions of ((student - teacher) / scale)^2; (B, N, hidden) twice, (hidden,),
    (B, N) bool -> scalar (float32)."""
    error = ((student.float() - teacher.float()) / scale) ** 2  # (B, N, hidden)
    real = mask[..., None].float()
    return (error * real).sum() / (real.sum() * student.shape[-1])


def mean_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, N, hidden), (B, N) bool -> (B, hidden): the mean over each row's real tokens (sentence-transformers')."""
    real = mask[..., None].float()
    return (states.float() * real).sum(1) / real.sum(1).clamp(min=1)


def pooled_loss(student: torch.Tensor, teacher: torch.Tensor, scale: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over rows and dimensions of ((mean-pooled student - mean-pooled teacher) / scale)^2."""
    return (((mean_pool(student, mask) - mean_pool(teacher, mask)) / scale) ** 2).mean()


def layer_losses(
    students: list[torch.Tensor], teachers: list[torch.Tensor], scales: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """(len(students),): `state_loss` of each student state against the teacher state and scale of its depth."""
    return torch.stack([state_loss(s, t, c, mask) for s, t, c in zip(students, teachers, scales, strict=True)])


def teacher_depths(student_depths: int, teacher_depths: int) -> list[int]:
    """The teacher state each student state is compared with, both counted with the embeddings' output first
    (depth 0): student depth i against teacher depth round(i * (teacher layers) / (student layers)), TinyBERT's
    uniform mapping; the same depth when the two have as many layers."""
    student_layers, teacher_layers = student_depths - 1, teacher_depths - 1
    if student_layers < 1:
        return [0] * student_depths
    return [round(i * teacher_layers / student_layers) for i in range(student_depths)]


def hidden_state_loss(
    students: tuple[torch.Tensor, ...], teachers: tuple[torch.Tensor, ...], mask: torch.Tensor
) -> torch.Tensor:
    """Task distillation's term for hidden states: the mean over the student's depths of `state_loss` against the
    teacher's state of `teacher_depths`, in units of the teacher's scales on this batch (`teacher_scales`, no
    gradient). (B, N, hidden) states, embeddings' output first; mask (B, N) bool -> scalar (float32)."""
    depths = teacher_depths(len(students), len(teachers))
    chosen = [teachers[d].detach() for d in depths]  # (detached: the scales too carry no gradient)
    scales = teacher_scales(tuple(chosen), mask)
    return layer_losses(list(students), chosen, scales, mask).mean()


def reference_state_loss(student, teacher, scale, mask) -> torch.Tensor:
    """`state_loss` written as a loop over the real tokens (the tests' reference)."""
    total, count = torch.zeros((), dtype=torch.float64), 0
    for b in range(student.shape[0]):
        for n in range(student.shape[1]):
            if mask[b, n]:
                for d in range(student.shape[2]):
                    total += ((float(student[b, n, d]) - float(teacher[b, n, d])) / float(scale[d])) ** 2
                    count += 1
    return total / count
