"""A student's weights through the device tool, which returns files of at most 16 MiB:

    python benchmarks/device/student_shards.py pack MODEL.safetensors OUT_DIR      # float16 shards of <= 15 MiB
    python benchmarks/device/student_shards.py unpack SHARD... MODEL.safetensors   # back to one float32 file

A tensor larger than a shard (the word embeddings: 23 MB in float16) is cut into row blocks named NAME.__rowsK and
joined again by unpack. float16 keeps 11 bits of each weight (2^-11 relative): far below what fine-tuning moves.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

LIMIT = 15 * 2**20
PART = re.compile(r"^(.*)\.__rows(\d+)$")


def pack(model: Path, out: Path) -> list[Path]:
    tensors = load_file(str(model))
    pieces: list[tuple[str, torch.Tensor]] = []
    for name in sorted(tensors):
        t = tensors[name].half() if tensors[name].is_floating_point() else tensors[name]
        row_bytes = t[0].numel() * t.element_size() if t.dim() else t.element_size()
        rows = max(1, LIMIT // row_bytes)
        if t.dim() and t.shape[0] > rows:
            pieces += [(f"{name}.__rows{k}", block) for k, block in enumerate(torch.split(t, rows))]
        else:
            pieces.append((name, t))
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, t in pieces:
        nbytes = t.numel() * t.element_size()
        if size + nbytes > LIMIT and shards[-1]:
            shards.append({})
            size = 0
        shards[-1][name] = t.contiguous()
        size += nbytes
    paths = [out / f"student-{i}.safetensors" for i in range(len(shards))]
    for shard, path in zip(shards, paths, strict=True):
        save_file(shard, str(path))
    return paths


def unpack(shards: list[Path], model: Path) -> None:
    tensors: dict[str, torch.Tensor] = {}
    parts: dict[str, dict[int, torch.Tensor]] = {}
    for path in shards:
        for name, t in load_file(str(path)).items():
            t = t.float() if t.is_floating_point() else t
            match = PART.match(name)
            if match:
                parts.setdefault(match[1], {})[int(match[2])] = t
            else:
                tensors[name] = t
    for name, blocks in parts.items():
        tensors[name] = torch.cat([blocks[k] for k in sorted(blocks)])
    save_file(tensors, str(model), metadata={"format": "pt"})


if __name__ == "__main__":
    verb, *paths = sys.argv[1:]
    if verb == "pack":
        print("shards:", *pack(Path(paths[0]), Path(paths[1])))
    elif verb == "unpack":
        unpack([Path(p) for p in paths[:-1]], Path(paths[-1]))
    else:
        raise SystemExit(f"student_shards.py: unknown verb {verb} (pack or unpack)")
