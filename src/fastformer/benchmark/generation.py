"""Decoding cost as the context grows: the causal Fastformer's fixed-size state against GPT-2's key/value cache.

For each context length: prefill the context (in chunks of `prefill_chunk` tokens, each continuing the cache, as a
long prompt is fed in practice), then decode `new_tokens` tokens greedily one at a time through the model's forward
with its cache (what `generate()` does). Measured: prefill seconds, median milliseconds per decoded token (p20/p80),
the cache's size in bytes after the context, and the peak memory torch allocates during one decoding step (profiler).
Both models are built with the language models' defaults (`fastformer.models.language_models.LM_MODEL_DEFAULTS`)
and random weights: cost does not depend on what the weights learned.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import torch

from fastformer.profiling import peak_memory_bytes


def build_models(vocab_size: int, max_positions: int, **overrides) -> dict[str, torch.nn.Module]:
    from fastformer.models.language_models import LM_MODEL_DEFAULTS, causal_language_model

    fields = dict(LM_MODEL_DEFAULTS, vocab_size=vocab_size, max_position_embeddings=max_positions, **overrides)
    fields.update(pad_token_id=0, bos_token_id=3, eos_token_id=3)
    return {arch: causal_language_model(arch, **fields).eval() for arch in ("fastformer", "gpt2")}


def cache_bytes(cache) -> int:
    if hasattr(cache, "nbytes") and callable(cache.nbytes):  # FastformerCache
        return cache.nbytes()
    return sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))


@torch.no_grad()
def measure(model, context: int, new_tokens: int, prefill_chunk: int, vocab_size: int, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(5, vocab_size, (1, context), generator=g)
    start = time.perf_counter()
    cache = None
    for piece in prompt.split(prefill_chunk, dim=1):
        out = model(input_ids=piece, cache=cache, use_cache=True)
        cache = out.cache
    prefill_s = time.perf_counter() - start
    size = cache_bytes(cache)
    token = out.logits[:, -1:].argmax(-1)
    times = []
    for _ in range(new_tokens):
        t = time.perf_counter()
        out = model(input_ids=token, cache=cache, use_cache=True)
        cache = out.cache
        token = out.logits[:, -1:].argmax(-1)
        times.append(time.perf_counter() - t)

    def one_step():
        model(input_ids=token, cache=cache, use_cache=True)

    peak = peak_memory_bytes(one_step)
    q = statistics.quantiles(times, n=5)
    return dict(
        context=context,
        prefill_s=round(prefill_s, 3),
        decode_ms_median=round(1e3 * statistics.median(times), 3),
        decode_ms_p20=round(1e3 * q[0], 3),
        decode_ms_p80=round(1e3 * q[-1], 3),
        decode_tokens_per_s=round(1 / statistics.median(times), 1),
        cache_bytes=size,
        step_peak_bytes=peak,
    )


def run(
    contexts=(1024, 4096, 16384, 65536),
    new_tokens: int = 32,
    prefill_chunk: int = 4096,
    vocab_size: int = 8000,
    out: str | Path | None = "benchmarks/lm/results/lm_generation_cpu",
    **overrides,
) -> dict:
    from fastformer.benchmark.runner import machine_header

    torch.manual_seed(0)
    models = build_models(vocab_size, max(contexts) + new_tokens + 1, **overrides)
    rows = []
    for context in contexts:
        for arch, model in models.items():
            row = dict(architecture=arch, **measure(model, context, new_tokens, prefill_chunk, vocab_size))
            print(json.dumps(row), flush=True)
            rows.append(row)
    parameters = {a: sum(p.numel() for p in m.parameters()) for a, m in models.items()}
    result = dict(
        machine=machine_header("float32", "cpu"),
        settings=dict(new_tokens=new_tokens, prefill_chunk=prefill_chunk, vocab_size=vocab_size, **overrides),
        parameters=parameters,
        rows=rows,
    )
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).with_suffix(".json").write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--contexts", type=int, nargs="+", default=[1024, 4096, 16384, 65536])
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--prefill-chunk", type=int, default=4096)
    parser.add_argument("--out", default="benchmarks/lm/results/lm_generation_cpu")
    a = parser.parse_args()
    run(a.contexts, a.new_tokens, a.prefill_chunk, out=a.out)
