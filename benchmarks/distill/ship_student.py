"""Pack a distilled student's folder as the checkpoint the repository ships: bfloat16 safetensors shards (each under
the repository's 48 MB a file), its config and tokenizer, the distillation run's metrics, settings and curve; then
read it back as a user would and print how far bf16 storage moved its outputs.

    python benchmarks/distill/ship_student.py runs/distill/gpu-end-to-end-local-mixing-3 \\
        pretrained/fastformer-minilm-l6-distilled

The folder's README.md (model card), LICENSE (Apache-2.0, the teacher's) and NOTICE are written by hand and left as
they are; the files this script writes are replaced. Texts for the check: the first 8 SST-5 dev sentences.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch

MAX_FILE_BYTES = 48_000_000  # the repository's limit for a committed file
SHARD = "30MB"  # 25.7M bf16 parameters (51 MB) in two shards
# the distillation run's own files, shipped beside the weights under these names
RUN_FILES = {
    "metrics.json": "distillation_metrics.json",
    "run_config.json": "run_config.json",
    "training.png": "training.png",
}
SENTENCES = "../shared/data/sst5/sst_dev.txt"  # fastText format: __label__N<TAB>text


def sentences(count: int = 8) -> list[str]:
    with open(SENTENCES, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t", 1)[1] for _, line in zip(range(count), f, strict=False)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="the student's folder (float32, a FastformerModel)")
    parser.add_argument("output", help="the folder to ship (pretrained/NAME)")
    args = parser.parse_args(argv)

    from transformers import AutoModel, AutoTokenizer

    import fastformer.models  # noqa: F401  (registers the Auto classes)
    from fastformer.engine.init_from import FINE_TUNING_FILE
    from fastformer.engine.state_loss import mean_pool
    from fastformer.tasks.distill.task import STUDENT_FINE_TUNING

    source, output = Path(args.source), Path(args.output)
    student = AutoModel.from_pretrained(str(source), dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(source))
    # the teacher's 256 (sentence-transformers' setting) would cut what the student reads whole: its positions' count
    tokenizer.model_max_length = student.config.max_position_embeddings
    for stale in ("max_length", "is_local", "local_files_only"):  # loading arguments saved back, not settings
        tokenizer.init_kwargs.pop(stale, None)
    with tempfile.TemporaryDirectory(dir=output.parent) as staging:
        staged = Path(staging)
        student.to(torch.bfloat16).save_pretrained(staged, max_shard_size=SHARD)
        tokenizer.save_pretrained(staged)
        (staged / FINE_TUNING_FILE).write_text(json.dumps(STUDENT_FINE_TUNING, indent=2))
        for name, shipped in RUN_FILES.items():
            if (source / name).is_file():
                shutil.copyfile(source / name, staged / shipped)
        too_big = [p.name for p in staged.iterdir() if p.stat().st_size > MAX_FILE_BYTES]
        if too_big:
            raise SystemExit(f"{', '.join(too_big)}: over {MAX_FILE_BYTES} bytes; lower SHARD")
        output.mkdir(parents=True, exist_ok=True)
        for old in output.glob("model*.safetensors*"):  # a previous packing's shards
            old.unlink()
        for path in staged.iterdir():
            shutil.move(str(path), output / path.name)
            (output / path.name).chmod(0o644)  # save_pretrained's shards come out owner-only

    # read back as a user would: float32, through the Auto class
    shipped = AutoModel.from_pretrained(str(output), dtype=torch.float32).eval()
    batch = tokenizer(sentences(), padding=True, return_tensors="pt")
    original = AutoModel.from_pretrained(str(source), dtype=torch.float32).eval()
    with torch.no_grad():
        a, b = (mean_pool(m(**batch).last_hidden_state, batch["attention_mask"].bool()) for m in (original, shipped))
    cosine = torch.nn.functional.cosine_similarity(a, b).min().item()
    report = dict(
        files={p.name: p.stat().st_size for p in sorted(output.iterdir()) if p.name.startswith("model")},
        parameters=sum(p.numel() for p in shipped.parameters()),
        pooled_cosine_to_float32_min=round(cosine, 6),
        pooled_max_abs_difference=round((a - b).abs().max().item(), 5),
    )
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
