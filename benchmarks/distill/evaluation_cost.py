"""What one evaluation of a taught classification run costs: the student alone on its labels (what a `--teacher`
run evaluates since 2026-12-05) against the student and its teacher on every validation batch (before).

Both through transformers' Trainer.evaluate as `fastformer train classification --teacher` builds it (bf16
autocast, batch 32, batches of similar length), on the first N IMDB training reviews at 512 tokens, in
alternating order, one thread. Example (folders of `bash benchmarks/distill/imdb2.sh`):

    python benchmarks/distill/evaluation_cost.py \
        --student runs/distill/imdb2-gpu-student-lm3-task-distilled-seed3/checkpoints/checkpoint-430 \
        --teacher runs/distill/imdb2-teacher-seed3
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from fastformer.data.text_classification import LabelMap, read_examples
from fastformer.engine.teacher import distillation_loss, task_distillation_trainer
from fastformer.tasks.classification.classifier import EncodedDataset
from fastformer.tasks.classification.data import relabel_binary

IMDB = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "imdb" / "imdb_ratings.jsonl.gz"


def reviews(path: Path, tokenizer, count: int, max_length: int) -> EncodedDataset:
    """The first `count` IMDB training reviews as `fastformer train classification --label-field rating
    --binary-threshold 7` reads and encodes them."""
    examples = read_examples(path, label_field="rating", where={"split": "train"})[:count]
    examples = relabel_binary(examples, 7)
    return EncodedDataset(examples, tokenizer, LabelMap.from_examples(examples), max_length)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student", required=True, help="a classifier folder (a taught run's checkpoint)")
    parser.add_argument("--teacher", required=True, help="its teacher's folder")
    parser.add_argument("--data", default=str(IMDB), help="IMDB's imdb_ratings.jsonl.gz")
    parser.add_argument("--examples", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        TrainingArguments,
    )

    import fastformer  # noqa: F401  (registers the Auto classes)

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(args.student)
    dataset = reviews(Path(args.data), tokenizer, args.examples, 512)
    student = AutoModelForSequenceClassification.from_pretrained(args.student)
    teacher = AutoModelForSequenceClassification.from_pretrained(args.teacher).eval().requires_grad_(False)
    taught = task_distillation_trainer()

    class BothModels(taught):  # the evaluation before: the distillation loss, the teacher run on every batch
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            labels = inputs.pop("labels")
            with torch.autocast("cpu", dtype=torch.bfloat16):
                outputs = model(**inputs)
                with torch.no_grad():
                    teacher_outputs = self.teacher(**inputs)
            loss = distillation_loss(outputs.logits, teacher_outputs.logits, labels, self.weight, self.temperature)
            return (loss, outputs) if return_outputs else loss

    with tempfile.TemporaryDirectory() as out:
        arguments = TrainingArguments(
            output_dir=out, bf16=True, use_cpu=True, per_device_eval_batch_size=32, report_to=[],
            train_sampling_strategy="group_by_length", disable_tqdm=True,
        )  # fmt: skip
        common = dict(args=arguments, data_collator=DataCollatorWithPadding(tokenizer), eval_dataset=dataset)
        forms = {
            "student alone": taught(model=student, teacher=teacher, weight=0.5, temperature=2.0, **common),
            "student and teacher": BothModels(model=student, teacher=teacher, weight=0.5, temperature=2.0, **common),
        }
        seconds: dict[str, list[float]] = {name: [] for name in forms}
        for _ in range(args.repeats):
            for name, trainer in forms.items():
                start = time.perf_counter()
                trainer.evaluate()
                seconds[name].append(time.perf_counter() - start)
    for name, times in seconds.items():
        print(f"{name}: {args.examples} reviews in {min(times):.1f} s (min of {len(times)}: "
              f"{', '.join(f'{t:.1f}' for t in times)})")  # fmt: skip
    ratio = min(seconds["student and teacher"]) / min(seconds["student alone"])
    print(f"an evaluation without the teacher: {ratio:.2f}x faster")


if __name__ == "__main__":
    main()
