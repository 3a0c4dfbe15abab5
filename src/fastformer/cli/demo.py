"""Forward + backward of one attention layer at growing sequence lengths: Fastformer beside softmax attention.

Prints the fastest of `--repeats` steps and the peak memory per length, and warns when the machine was busy.
Fastformer's grow linearly in N; softmax attention's time grows quadratically (torch's fused CPU kernel keeps its
memory linear, so that column is reported as measured).
"""

from __future__ import annotations

import argparse
import json
import os

HELP = "time and memory of Fastformer vs softmax attention at growing lengths "


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fastformer.cli.settings import bounded

    positive = bounded(1)
    parser.add_argument("--lengths", type=positive, nargs="+", default=[512, 1024, 2048, 4096, 8192])
    parser.add_argument("--hidden-size", type=positive, default=256)
    parser.add_argument("--heads", type=positive, default=16)
    parser.add_argument("--batch-size", type=positive, default=1)
    parser.add_argument("--repeats", type=positive, default=3)
    parser.add_argument("--preset", default="paper", choices=["paper", "official"])
    parser.add_argument("--json", metavar="PATH", help="also write the measurements as JSON")


def measure(layer, x, repeats: int) -> tuple[float, int, float]:
    """(fastest of `repeats` timed steps in seconds, peak memory in bytes, slowest / fastest). The minimum: other
    work on the machine only ever adds time, so the fastest step is the closest to the layer's own cost."""
    from fastformer.profiling import peak_memory_bytes, time_call

    def step():
        layer(x).sum().backward()

    times = time_call(step, repeats=repeats)
    return times["min"], peak_memory_bytes(step), times["max"] / max(times["min"], 1e-12)


def busy_note(load: float, cores: int, spread: float) -> str | None:
    """A warning when the timings cannot be trusted: the machine was loaded, or repeats disagreed."""
    reasons = []
    if load > 0.5 * cores:
        reasons.append(f"the load average was {load:.1f} on {cores} cores")
    if spread > 1.5:
        reasons.append(f"repeats of one step differed by up to {spread:.1f}x")
    if not reasons:
        return None
    return (
        f"note: {' and '.join(reasons)}: other work was running, so the times and ratios above are unreliable; "
        "rerun on a quiet machine (or with more --repeats)"
    )


def check_shape_flags(verb: str, args: argparse.Namespace) -> None:
    """--hidden-size split evenly into --heads (a ValueError traceback from the layer before)."""
    if args.hidden_size % args.heads:
        raise SystemExit(
            f"fastformer {verb}: --hidden-size {args.hidden_size} does not split into --heads {args.heads} (each head "
            "takes hidden_size / heads dimensions)"
        )


def run(args: argparse.Namespace) -> int:
    check_shape_flags("demo", args)
    if args.json:  # before minutes of measuring, not after
        from fastformer.cli.outputs import OutputRefused, check_output

        try:
            check_output(args.json, flag="--json", overwrite=True)
        except OutputRefused as error:
            raise SystemExit(f"fastformer demo: {error}") from None
    import torch

    from fastformer.layers import FastformerAttention, SoftmaxAttention
    from fastformer.presets import PRESETS, attention_kwargs

    torch.manual_seed(0)
    fast = FastformerAttention(args.hidden_size, args.heads, **attention_kwargs(PRESETS[args.preset]))
    softmax = SoftmaxAttention(args.hidden_size, args.heads)
    print(
        f"one attention layer, forward + backward, hidden {args.hidden_size}, {args.heads} heads, "
        f"batch {args.batch_size}, float32, {torch.get_num_threads()} threads, torch {torch.__version__}"
    )
    header = (
        f"{'N':>7} {'fastformer ms':>14} {'softmax ms':>11} {'speed-up':>9} {'fastformer MiB':>15} {'softmax MiB':>12}"
    )
    print(header)
    rows, spread = [], 1.0
    for n in args.lengths:
        x = torch.randn(args.batch_size, n, args.hidden_size, requires_grad=True)
        t_fast, m_fast, s_fast = measure(fast, x, args.repeats)
        t_soft, m_soft, s_soft = measure(softmax, x, args.repeats)
        spread = max(spread, s_fast, s_soft)
        rows.append(dict(n=n, fastformer_s=t_fast, softmax_s=t_soft, fastformer_bytes=m_fast, softmax_bytes=m_soft))
        print(
            f"{n:>7} {1e3 * t_fast:>14.1f} {1e3 * t_soft:>11.1f} {t_soft / t_fast:>8.1f}x "
            f"{m_fast / 2**20:>15.1f} {m_soft / 2**20:>12.1f}",
            flush=True,
        )
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        growth = last["n"] / first["n"]
        print(
            f"N grew {growth:.0f}x: Fastformer time {last['fastformer_s'] / first['fastformer_s']:.1f}x, "
            f"softmax time {last['softmax_s'] / first['softmax_s']:.1f}x; Fastformer memory "
            f"{last['fastformer_bytes'] / max(first['fastformer_bytes'], 1):.1f}x"
        )
    note = busy_note(os.getloadavg()[0], os.cpu_count() or 1, spread)
    if note:
        print(note)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(config=vars(args), rows=rows), f, indent=2)
    return 0
