"""Assisted decoding of the shipped causal Fastformer against plain greedy decoding, on IMDB test reviews, on CPU.

    OMP_NUM_THREADS=1 python benchmarks/lm/assisted_decoding.py [--model pretrained/fastformer-imdb-clm]
        [--prompts 20] [--prompt-tokens 256] [--new-tokens 64] [--repeats 5] [--threads 1] [--out DIR]

Each prompt is the first --prompt-tokens tokens of an IMDB test review (`../shared/data/imdb/imdb_ratings.jsonl.gz`,
split test, in file order); the model continues it by --new-tokens tokens (no end-of-text stop), greedily:

- greedy: `generate()` one token per forward, the fixed-size state carried from step to step;
- prompt lookup N: `generate(prompt_lookup_num_tokens=N)`: drafts copied from the prompt where its last tokens
  occurred before, checked in one forward; the state rolls back past the rejected ones (`FastformerCache.crop`);
- self-draft: `generate(assistant_model=...)` with a draft made of the same checkpoint's first layer and output layer
  (transformers' heuristic draft length).

Reports per setting: milliseconds per generated token (wall clock over all prompts, after one warm-up prompt; the
median of --repeats passes, the settings interleaved pass by pass so a slow spell of the machine hits all), forwards of
the main model per generated token (1 for greedy; fewer when drafts are accepted), and how many outputs equal
greedy's (all of them: assisted greedy decoding changes the cost, not the tokens). Writes
DIR/assisted_decoding_cpu<threads>t_torch<version>.json with a machine header. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time

import torch

DATA = "../shared/data/imdb/imdb_ratings.jsonl.gz"


def test_reviews(path: str, count: int) -> list[str]:
    texts = []
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if row["split"] == "test":
                texts.append(row["text"])
                if len(texts) == count + 1:  # + the warm-up prompt
                    break
    return texts


class ForwardCount:
    """Counts the calls of a model's forward (the main model's verification passes)."""

    def __init__(self, model: torch.nn.Module):
        self.calls = 0
        model.register_forward_pre_hook(self._count)

    def _count(self, module, args):
        self.calls += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="pretrained/fastformer-imdb-clm")
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--prompt-tokens", type=int, default=256)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/lm/results")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import fastformer.models  # noqa: F401  (registers the Auto classes)
    from fastformer.benchmark.runner import write_cpu_result

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model).eval()
    # The draft: the same checkpoint cut to its first layer (the load report of the dropped layer's keys is expected).
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    draft = AutoModelForCausalLM.from_pretrained(args.model, num_hidden_layers=1).eval()
    transformers.logging.set_verbosity(verbosity)
    forwards = ForwardCount(model)
    prompts = [
        tokenizer(text, truncation=True, max_length=args.prompt_tokens, return_tensors="pt").input_ids
        for text in test_reviews(args.data, args.prompts)
    ]
    settings = {
        "greedy": {},
        "prompt lookup 3": dict(prompt_lookup_num_tokens=3),
        "prompt lookup 10": dict(prompt_lookup_num_tokens=10),
        "self-draft (layer 1)": dict(assistant_model=draft),
    }
    common = dict(do_sample=False, max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens)
    tokens = args.new_tokens * (len(prompts) - 1)
    greedy_outputs, seconds, results = [], {name: [] for name in settings}, {}
    with torch.no_grad():
        for extra in settings.values():
            model.generate(prompts[0], **common, **extra)  # warm-up
        for repeat in range(args.repeats):
            for name, extra in settings.items():
                forwards.calls, elapsed, same = 0, 0.0, 0
                for i, ids in enumerate(prompts[1:]):
                    start = time.perf_counter()
                    out = model.generate(ids, **common, **extra)
                    elapsed += time.perf_counter() - start
                    if name == "greedy" and repeat == 0:
                        greedy_outputs.append(out)
                    same += bool(torch.equal(out, greedy_outputs[i]))
                seconds[name].append(elapsed)
                # Forwards and outputs are the same every pass (greedy, deterministic): kept from the last.
                results[name] = dict(
                    main_forwards_per_token=round(forwards.calls / tokens, 3), outputs_equal_to_greedy=same
                )
    for name in settings:
        median = statistics.median(seconds[name])
        results[name] = dict(
            ms_per_token=round(1000 * median / tokens, 2),
            ms_per_token_passes=[round(1000 * s / tokens, 2) for s in seconds[name]],
            **results[name],
        )
        print(name, results[name], flush=True)
    path = write_cpu_result(
        args.out,
        "assisted_decoding",
        args.threads,
        settings=dict(
            model=args.model,
            prompts=len(prompts) - 1,
            prompt_tokens=args.prompt_tokens,
            new_tokens=args.new_tokens,
            repeats=args.repeats,
            data=args.data,
        ),
        results=results,
    )
    print(path)


if __name__ == "__main__":
    main()
