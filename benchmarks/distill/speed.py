"""Teacher against student at growing length: a fine-tuning step (forward + backward + AdamW of a classifier, bf16
autocast) and inference, tokens per second and peak memory, for all-MiniLM-L6-v2 converted both ways (the softmax
form = the teacher; the Fastformer form = the student, and the student with local mixing 3 as shipped), all with
positions extended to the longest length.

    OMP_NUM_THREADS=2 python benchmarks/distill/speed.py [--lengths 512 2048 8192] [--batch-tokens 16384]
    python benchmarks/distill/speed.py --table benchmarks/distill/results/speed_cpu2t_intel-xeon-amx_torch2_13_0.json
        (the RESULTS table of a results file)
    python benchmarks/distill/speed.py --device cuda --model .gpu/minilm --texts corpus.jsonl   (a lent GPU)
    OMP_NUM_THREADS=2 python benchmarks/distill/speed.py --float32   (a CPU without bfloat16 dot products: cpu_bf16.py)

Per layer the teacher costs 24 N d^2 + 4 N^2 d multiply-adds and the student 24 N d^2 (+ O(N d)), so the student
can be at most 1 + N / (6 d) times faster (d = 384: 1.22x at 512, 1.89x at 2,048, 4.56x at 8,192); printed beside
the measured ratio. Each setting runs in a process of its own (its peak memory is its own): batch = batch_tokens / N
rows (at least 1) of real IMDB text (--texts: any JSON Lines file of {"text"}), the median of --repeats timed steps
after one warm-up; on a GPU each step is synchronised and the peak is the GPU's allocated memory. Run it alone on the
machine. Writes benchmarks/distill/results/speed_<threads or cuda>_<processor>_torch<version>.json.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import itertools
import json
import lzma
import re
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

IMDB_UNSUP = "../shared/data/imdb/imdb_unsup.jsonl.gz"
FORMS = ("softmax", "fastformer", "fastformer-lm3")  # the teacher; the student; the student with local mixing 3


def open_texts(path: str):
    opener = gzip.open if path.endswith(".gz") else lzma.open if path.endswith(".xz") else open
    return opener(path, "rt", encoding="utf-8")


def text_ids(tokenizer, length: int, rows: int, texts: str = IMDB_UNSUP) -> torch.Tensor:
    """(rows, length) ids of real reviews joined end to end ([CLS] first, [SEP] last)."""
    needed = rows * length
    ids: list[int] = []
    with open_texts(texts) as f:
        for line in f:
            ids += tokenizer(json.loads(line)["text"], add_special_tokens=False)["input_ids"]
            if len(ids) >= needed:
                break
    body = torch.tensor(ids[: rows * (length - 2)]).view(rows, length - 2)
    cls = torch.full((rows, 1), tokenizer.cls_token_id)
    sep = torch.full((rows, 1), tokenizer.sep_token_id)
    return torch.cat([cls, body, sep], 1)


def timed(fn, repeats: int, device: str = "cpu") -> float:
    def run():
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    run()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(model, ids: torch.Tensor, repeats: int, device: str = "cpu", bf16: bool = True) -> dict:
    """Tokens/s of a fine-tuning step and of inference, under bf16 autocast (`bf16`) or in float32."""
    kind = torch.device(device).type
    model, ids = model.to(device), ids.to(device)
    labels = torch.zeros(ids.shape[0], dtype=torch.long, device=device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)

    def step():
        with torch.autocast(kind, dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def infer():
        with torch.no_grad(), torch.autocast(kind, dtype=torch.bfloat16, enabled=bf16):
            model(input_ids=ids)

    model.train()
    train_s = timed(step, repeats, device)
    model.eval()
    infer_s = timed(infer, repeats, device)
    tokens = ids.numel()
    return dict(train_tokens_per_s=round(tokens / train_s, 1), inference_tokens_per_s=round(tokens / infer_s, 1))


def one_setting(
    form: str,
    length: int,
    batch_tokens: int,
    repeats: int,
    device: str = "cpu",
    source: str | None = None,
    texts: str = IMDB_UNSUP,
    bf16: bool = True,
) -> dict:
    """One (model, length) measured in this process (its peak memory is this setting's alone)."""
    from transformers import AutoTokenizer

    from fastformer.convert_bert import convert_bert, read_bert
    from fastformer.models.fastformer import FastformerForSequenceClassification

    if source is None:  # the package's model.zip
        source = str(Path(importlib.util.find_spec("all_minilm_l6_v2").submodule_search_locations[0]) / "model.zip")
    with tempfile.TemporaryDirectory() as scratch:
        bert = read_bert(source, Path(scratch))
        tokenizer = AutoTokenizer.from_pretrained(str(bert.folder))
        # "fastformer-lm3": the shipped student's form (local mixing 3, which the fused block cannot take)
        attention, local_mixing = ("fastformer", 3) if form == "fastformer-lm3" else (form, 0)
        encoder = convert_bert(bert, attention, max_positions=max(length, 512), local_mixing=local_mixing)
    config = encoder.config
    config.num_labels = 2
    model = FastformerForSequenceClassification(config)
    model.fastformer.load_state_dict(encoder.state_dict())
    del encoder
    batch = max(1, batch_tokens // length)
    ids = text_ids(tokenizer, length, batch, texts)
    before = peak_rss_mib()
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    row = dict(model=form, length=length, batch=batch, **measure(model, ids, repeats, device, bf16))
    row.update(peak_rss_mib=round(peak_rss_mib(), 1), rss_before_steps_mib=round(before, 1))
    if device.startswith("cuda"):
        row["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return row


def table(result: dict) -> str:
    """docs/RESULTS.md's table of one results file: tokens/s of the teacher, the student and the student with local
    mixing (its ratio to the teacher beside it), the arithmetic bound, peak resident memory of each process."""
    rows = {(r["model"], r["length"]): r for r in result["rows"]}
    bounds = {r["length"]: r["bound"] for r in result["student_over_teacher"]}
    lines = [
        "| N | batch | | teacher | student | student, local mixing 3 | bound |",
        "|---:|---:|---|---:|---:|---:|---:|",
    ]
    for length in sorted(bounds):
        teacher = rows[("softmax", length)]
        for mode in ("train", "inference"):
            key = f"{mode}_tokens_per_s"
            cells = [f"{teacher[key]:,.0f}"]
            for form in FORMS[1:]:
                row = rows[(form, length)]
                cells.append(f"{row[key]:,.0f} ({row[key] / teacher[key]:.2f}x)")
            lines.append(
                f"| {length:,} | {teacher['batch']} | {mode} tokens/s | {' | '.join(cells)} | {bounds[length]}x |"
            )
        memory = [f"{rows[(form, length)]['peak_rss_mib']:,.0f}" for form in FORMS]
        lines.append(f"| {length:,} | {teacher['batch']} | peak MiB (process) | {' | '.join(memory)} | |")
    return "\n".join(lines)


def result_name(prefix: str, header: dict, device: str) -> str:
    """PREFIX_cuda_torchV.json, or PREFIX_cpu<threads>t_<processor>-<isa>_torchV.json
    (speed_cpu2t_amd-epyc-avx512bf16_torch2_13_0.json): the processor and its widest matrix instructions in the name,
    since this workplace's CPU machines differ between sessions (an AMD EPYC with AVX2 only or with AVX-512 and BF16,
    an Intel Xeon with AMX: the first two share a name) and a table is only comparable within one."""
    processor = "-".join(re.sub(r"\(r\)|\(tm\)|processor|cpu", " ", header["cpu"].lower()).split()[:2])
    capped = f"-onednn-{header['onednn_max_cpu_isa'].lower()}" if header.get("onednn_max_cpu_isa") else ""
    isa = f"{header['cpu_isa']}{capped}"  # (a oneDNN capped below the CPU: another machine's arithmetic)
    machine = "cuda" if device.startswith("cuda") else f"cpu{torch.get_num_threads()}t_{processor}-{isa}"
    return f"{prefix}_{machine}_torch{torch.__version__.split('+')[0].replace('.', '_')}.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048, 8192])
    parser.add_argument("--batch-tokens", type=int, default=16384)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/distill/results")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--model", help="the BERT folder or .zip (default: the package's model.zip)")
    parser.add_argument("--texts", default=IMDB_UNSUP, help="JSON Lines of {'text'} (.gz / .xz too)")
    parser.add_argument("--table", metavar="RESULT_JSON", help="print the table of a results file and exit")
    parser.add_argument(
        "--float32", action="store_true", help="no bf16 autocast (a CPU without bfloat16 dot products: cpu_bf16.py)"
    )
    parser.add_argument("--one", nargs=2, metavar=("FORM", "LENGTH"), help=argparse.SUPPRESS)  # a child process
    args = parser.parse_args(argv)
    if args.table:
        print(table(json.loads(Path(args.table).read_text())))
        return 0
    if args.one:
        row = one_setting(
            args.one[0],
            int(args.one[1]),
            args.batch_tokens,
            args.repeats,
            args.device,
            args.model,
            args.texts,
            bf16=not args.float32,
        )
        print(json.dumps(row))
        return 0
    import subprocess

    rows = []
    for form in FORMS:
        for length in args.lengths:
            child = [sys.executable, __file__, "--one", form, str(length), "--batch-tokens", str(args.batch_tokens),
                     "--repeats", str(args.repeats), "--device", args.device, "--texts", args.texts,
                     *(["--float32"] if args.float32 else []),
                     *(["--model", args.model] if args.model else [])]  # fmt: skip
            done = subprocess.run(child, capture_output=True, text=True, check=True)
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), file=sys.stderr)
    d = 384  # all-MiniLM-L6-v2's hidden size
    ratios = []
    for length, student_form in itertools.product(args.lengths, FORMS[1:]):
        teacher = next(r for r in rows if r["model"] == "softmax" and r["length"] == length)
        student = next(r for r in rows if r["model"] == student_form and r["length"] == length)
        ratios.append(
            dict(
                student=student_form,
                length=length,
                bound=round(1 + length / (6 * d), 2),
                train_ratio=round(student["train_tokens_per_s"] / teacher["train_tokens_per_s"], 2),
                inference_ratio=round(student["inference_tokens_per_s"] / teacher["inference_tokens_per_s"], 2),
            )
        )
    from fastformer.benchmark.runner import machine_header

    header = machine_header("float32" if args.float32 else "bfloat16 autocast", args.device)
    result = dict(machine=header, batch_tokens=args.batch_tokens, rows=rows, student_over_teacher=ratios)
    name = result_name("speed_float32" if args.float32 else "speed", header, args.device)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / name).write_text(json.dumps(result, indent=1))
    for r in ratios:
        print(f"{r['student']} N={r['length']}: over the teacher, train {r['train_ratio']}x, "
              f"inference {r['inference_ratio']}x (bound {r['bound']}x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
