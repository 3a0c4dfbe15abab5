"""Markdown tables from a benchmark result file: `python benchmarks/attention/summarize.py
benchmarks/attention/results/X.json`.

One table per mode: median milliseconds per step (tokens/s below it would not fit; the JSON has them) for every
variant and length; "over budget" / "skipped" cells as such. Then the machine header and the targets.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def cell_text(cell: dict) -> str:
    if cell["status"] == "ok":
        return f"{1e3 * cell['median_s']:,.0f}"
    if cell["status"] == "over_budget":
        return f">{cell['median_s']:.0f}s"
    return cell["status"].replace("_", " ")


def tables(payload: dict) -> str:
    cells = payload["cells"]
    lines = [f"machine: {json.dumps(payload['machine'])}", ""]
    shapes = sorted({(c["batch"], c["n"]) for c in cells}, key=lambda s: s[1])
    variants = list(dict.fromkeys(c["variant"] for c in cells))
    for mode in ("train", "inference"):
        lines.append(f"**{mode}** (median ms per step; batch x N as in the header row)")
        lines.append("")
        lines.append("| variant | " + " | ".join(f"{b}x{n}" for b, n in shapes) + " |")
        lines.append("|---|" + "---:|" * len(shapes))
        for v in variants:
            by_shape = {(c["batch"], c["n"]): c for c in cells if c["variant"] == v and c["mode"] == mode}
            lines.append(
                f"| {v} | " + " | ".join(cell_text(by_shape[s]) if s in by_shape else "" for s in shapes) + " |"
            )
        lines.append("")
    lines.append("**peak memory, train** (in activations of size batch x N x hidden x 4 bytes)")
    lines.append("")
    lines.append("| variant | " + " | ".join(f"{b}x{n}" for b, n in shapes) + " |")
    lines.append("|---|" + "---:|" * len(shapes))
    for v in variants:
        by_shape = {(c["batch"], c["n"]): c for c in cells if c["variant"] == v and c["mode"] == "train"}
        row = []
        for s in shapes:
            c = by_shape.get(s)
            row.append(f"{c['peak_activations']:.1f}" if c and c.get("peak_activations") is not None else "")
        lines.append(f"| {v} | " + " | ".join(row) + " |")
    lines.append("")
    from fastformer.benchmark.runner import Cell, targets

    objects = [Cell(**c) for c in cells]
    for main in ("fastformer-official", "fastformer-paper"):
        for name, result in targets(objects, main=main).items():
            lines.append(
                f"- {main}, target `{name}`: {'met' if result.get('met') else 'NOT met'} — {json.dumps(result)}"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(f"### {Path(path).name}\n")
        print(tables(json.loads(Path(path).read_text())))
        print()
