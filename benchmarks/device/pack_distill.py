"""Pack what a distillation run on a lent GPU machine needs into one folder that travels with the working tree
(the device tool sends at most 64 MiB, the repository included):

    python benchmarks/device/pack_distill.py MODEL_ZIP runs/distill-corpus.jsonl.gz .gpu --corpus-mb 13

- `minilm/`: the teacher's folder from the package's model.zip with its weights in float16 (45 MB instead of 91;
  the rounding, 2^-11 relative, is far below what distillation matches). Both the teacher (`--attention softmax`)
  and the student are converted from it there.
- `corpus.jsonl.xz`: the distillation corpus, decontaminated here exactly as the CPU runs are (IMDB's test texts
  dropped), with the CPU runs' 200 held-out texts left out too (so the GPU student can be scored on them here), and
  cut to `--corpus-mb` of xz: every text of the other domains, IMDB's unlabelled reviews in file order up to the
  budget.
- `heldout.jsonl`: those 200 held-out texts.
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
import sys
import zipfile
from pathlib import Path

from safetensors.torch import load_file, save_file

from fastformer.data.files import open_text
from fastformer.data.text_corpus import read_texts
from fastformer.engine.splits import hold_out
from fastformer.tasks.pretrain.corpus import decontaminate, normalise_text

IMDB = "../shared/data/imdb/imdb_ratings.jsonl.gz"


def pack_teacher(model_zip: Path, out: Path) -> None:
    with zipfile.ZipFile(model_zip) as z:
        z.extractall(out)
    weights = out / "model.safetensors"
    tensors = load_file(str(weights))
    largest = max(float(t.abs().max()) for t in tensors.values() if t.is_floating_point())
    assert largest < 6e4, f"a weight of {largest} does not fit float16"
    save_file({k: t.half() if t.is_floating_point() else t for k, t in tensors.items()}, str(weights))


def pack_corpus(corpus: Path, out: Path, budget_mb: float, seed: int) -> dict:
    with open_text(corpus) as lines:  # the corpus as benchmarks/distill/corpus.py writes it (JSON Lines, gzip)
        rows = [json.loads(line) for line in lines]
    excluded = {normalise_text(t) for t in read_texts(IMDB, None, None, {"split": "test"})}
    # the CPU runs' split: decontaminated texts, then 1 % held out with the run's seed, the first 200 kept
    kept, dropped, repeats = decontaminate([r["text"] for r in rows], excluded)
    validation, _ = hold_out(kept, 0.01, seed)
    heldout = validation[:200]
    (out / "heldout.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in heldout))
    skip = excluded | {normalise_text(t) for t in heldout}
    others = [r for r in rows if r["source"] != "imdb_unsup" and normalise_text(r["text"]) not in skip]
    imdb = [r for r in rows if r["source"] == "imdb_unsup" and normalise_text(r["text"]) not in skip]
    # xz keeps about 26 % of this text: budget the raw bytes, then check the packed size
    raw_budget = budget_mb * 1e6 / 0.26 - sum(len(json.dumps(r)) + 1 for r in others)
    chosen, size = [], 0
    for r in imdb:
        size += len(json.dumps(r)) + 1
        if size > raw_budget:
            break
        chosen.append(r)
    packed = out / "corpus.jsonl.xz"
    with lzma.open(packed, "wt", preset=9) as f:
        for r in others + chosen:
            f.write(json.dumps(r) + "\n")
    return dict(
        texts=len(others) + len(chosen), imdb_unsup=len(chosen), other_domains=len(others),
        dropped_as_test=dropped, repeats=repeats, heldout=len(heldout), megabytes=round(packed.stat().st_size / 1e6, 2),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_zip", type=Path)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--corpus-mb", type=float, default=13.0)
    parser.add_argument("--seed", type=int, default=1, help="the CPU runs' --seed (their held-out split)")
    args = parser.parse_args(argv)
    shutil.rmtree(args.out / "minilm", ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    pack_teacher(args.model_zip, args.out / "minilm")
    report = pack_corpus(args.corpus, args.out, args.corpus_mb, args.seed)
    print(json.dumps(report), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
