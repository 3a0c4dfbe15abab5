"""Parameter counts by kind, per layer: the numbers the paper's sharing argument is about."""

from __future__ import annotations

from torch import nn


def count_parameters(module: nn.Module) -> dict[str, int]:
    """Counts of a module's distinct parameters, by kind.

    weights: matrices and scoring vectors (what the paper counts: 3D^2 + 2D for its attention);
    biases: additive bias vectors; norm: LayerNorm gains and shifts; total: all three.
    A parameter reused by several submodules (layer sharing) is counted once.
    """
    norm_ids = {id(p) for m in module.modules() if isinstance(m, nn.LayerNorm) for p in m.parameters()}
    counts = dict(weights=0, biases=0, norm=0)
    for name, p in module.named_parameters():  # named_parameters already drops shared duplicates
        kind = "norm" if id(p) in norm_ids else "biases" if name.rsplit(".", 1)[-1] == "bias" else "weights"
        counts[kind] += p.numel()
    counts["total"] = sum(counts.values())
    return counts


def parameter_report(encoder: nn.Module) -> list[dict[str, dict[str, int]]]:
    """Per distinct layer of a FastformerEncoder: counts for its attention, feed-forward and norms."""
    report = []
    for layer in encoder.layers:
        report.append(
            dict(
                attention=count_parameters(layer.attention),
                feed_forward=count_parameters(layer.feed_forward),
                norms=count_parameters(nn.ModuleList([layer.attention_norm, layer.feed_forward_norm])),
                layer=count_parameters(layer),
            )
        )
    return report
