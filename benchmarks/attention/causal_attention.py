"""The causal Fastformer's attention against causal softmax attention as the sequence grows, on CPU.

    OMP_NUM_THREADS=1 python benchmarks/attention/causal_attention.py [--threads 1] [--tokens 8192] [--max-n 8192]
        [--repeats 3] [--out DIR]

The mixers of the two shipped causal models, built from their config.json (`pretrained/fastformer-imdb-clm`: the
causal Fastformer op, `fastformer.ops.causal`, chunked prefix poolings; `pretrained/softmax-imdb-clm-control`:
torch's scaled_dot_product_attention with the triangle), hidden 256, 16 heads, random weights (the values do not
change the cost). At each N from 128 to --max-n, a batch of --tokens / N sequences (the same tokens per step, so a
flat line is linear cost), three cases:

- train: forward + backward over full sequences, as language-model pretraining reads its blocks;
- train, padded: the same with one sequence half padding, as a fine-tuning batch has (softmax attention then builds
  an explicit (B, 1, N, N) mask instead of its kernel's own triangle);
- inference: forward under no_grad, full sequences.

Reports the fastest of --repeats steps after a warm-up (other work only adds time). (No FLOP column: torch's FLOP
counter does not count the CPU kernel of scaled_dot_product_attention, so it would show softmax attention flat in N.)
Writes DIR/causal_attention_cpu<threads>t_torch<version>.json with a machine header. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json

import torch

MODELS = {"fastformer": "pretrained/fastformer-imdb-clm", "softmax": "pretrained/softmax-imdb-clm-control"}
CASES = ("train", "train_padded", "inference")


def causal_mixer(folder: str) -> tuple[torch.nn.Module, int]:
    """The token mixer one layer of the shipped causal model at `folder` builds (its attention_type and switches), and
    the hidden size it mixes."""
    from fastformer.layers.mixers import MIXERS
    from fastformer.models import FastformerConfig
    from fastformer.presets import attention_kwargs

    config = FastformerConfig.from_pretrained(folder)
    assert config.causal, f"{folder}: not a causal model"
    kwargs = {**attention_kwargs(config), "causal": True}
    return MIXERS[config.attention_type](config.hidden_size, config.num_attention_heads, **kwargs), config.hidden_size


def output_of(mixer: torch.nn.Module, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    out = mixer(x, mask)
    return out[0] if isinstance(out, tuple) else out  # a causal Fastformer layer also returns its decoding state


def step_for(mixer: torch.nn.Module, case: str, batch: int, n: int, hidden: int):
    """One call of `case` on a fresh (batch, n, hidden) input; the mask is None for full sequences."""
    x = torch.randn(batch, n, hidden)
    mask = None
    if case == "train_padded":
        mask = torch.ones(batch, n, dtype=torch.bool)
        mask[0, n // 2 :] = False
    if case == "inference":

        def step():
            with torch.no_grad():
                output_of(mixer, x, mask)

        return step
    inputs = x.requires_grad_(True)

    def step():
        output_of(mixer, inputs, mask).sum().backward()

    return step


def main() -> None:
    from fastformer.benchmark.runner import write_cpu_result
    from fastformer.profiling import time_call

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=8192, help="tokens per step (batch = tokens / N)")
    parser.add_argument("--max-n", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/attention/results")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    mixers = {name: causal_mixer(folder) for name, folder in MODELS.items()}
    rows = []
    n = 128
    while n <= args.max_n:
        batch = max(1, args.tokens // n)
        for name, (mixer, hidden) in mixers.items():
            ms = {
                case: round(1e3 * time_call(step_for(mixer, case, batch, n, hidden), args.repeats)["min"], 2)
                for case in CASES
            }
            rows.append(dict(mixer=name, batch=batch, n=n, ms=ms))
            print(json.dumps(rows[-1]), flush=True)
        n *= 2
    path = write_cpu_result(
        args.out, "causal_attention", args.threads, tokens=args.tokens, repeats=args.repeats, rows=rows
    )
    print("\n| N | batch | case | fastformer ms | softmax ms | softmax / fastformer |\n|---:|---:|---|---:|---:|---:|")
    by = {(r["mixer"], r["n"]): r for r in rows}
    for r in rows:
        if r["mixer"] != "fastformer":
            continue
        other = by[("softmax", r["n"])]
        for case in CASES:
            mine, theirs = r["ms"][case], other["ms"][case]
            print(f"| {r['n']} | {r['batch']} | {case} | {mine} | {theirs} | {theirs / mine:.2f} |")
    print(f"written: {path}")


if __name__ == "__main__":
    main()
