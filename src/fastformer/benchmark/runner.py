"""Run the efficiency benchmark: time and peak memory per token mixer, sequence length and mode; write results.

Cells that run past the time budget or out of memory are recorded as such (and longer lengths of that variant
are skipped), never crashed on. Results carry a machine header so that files from different machines compare.
"""

from __future__ import annotations

import csv
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from fastformer import precision
from fastformer.benchmark.registry import VARIANTS, available
from fastformer.profiling import peak_memory_bytes, time_call

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class Cell:
    variant: str
    mode: str  # "train" (forward + backward) or "inference" (forward under inference_mode)
    batch: int
    n: int
    status: str = "ok"  # ok | over_budget | oom | skipped | unavailable
    median_s: float | None = None
    p20_s: float | None = None
    p80_s: float | None = None
    tokens_per_s: float | None = None
    peak_bytes: int | None = None
    peak_activations: float | None = None  # peak_bytes in units of one (batch, n, hidden) activation
    note: str = ""


def machine_header(dtype: str, device: str) -> dict:
    """Where and with what the numbers were taken."""
    cpu = precision.cpuinfo()[0] or platform.processor() or platform.machine()
    header = dict(
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        cpu=cpu,
        cpu_isa=precision.cpu_isa(),
        threads=torch.get_num_threads(),
        torch=torch.__version__,
        python=platform.python_version(),
        dtype=dtype,
        device=device,
        git_commit=_git_commit(),
    )
    cap = precision.onednn_cap()
    if cap:  # oneDNN told to use less than the CPU has (to measure a CPU without its instructions)
        header["onednn_max_cpu_isa"] = cap
    if device.startswith("cuda"):
        header["gpu"] = torch.cuda.get_device_name(0)
    return header


def write_cpu_result(out: str | Path, name: str, threads: int, **payload) -> Path:
    """Write DIR/<name>_cpu<threads>t_torch<version>.json: a float32 CPU measurement under its machine header (the
    thread count it ran with), then `payload`'s fields. Returns the path."""
    header = machine_header("float32", "cpu")
    header["threads"] = threads
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    version = torch.__version__.split("+")[0].replace(".", "_")
    path = folder / f"{name}_cpu{threads}t_torch{version}.json"
    path.write_text(json.dumps(dict(machine=header, **payload), indent=1))
    return path


def _git_commit() -> str:
    try:
        root = Path(__file__).resolve().parents[3]
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
        return commit.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _is_oom(error: BaseException) -> bool:
    text = str(error).lower()
    return isinstance(error, torch.OutOfMemoryError) or "out of memory" in text or "can't allocate" in text


def measure_cell(
    module, call, cell: Cell, hidden: int, dtype, device, repeats: int, budget_s: float, with_memory: bool
) -> Cell:
    x = torch.randn(cell.batch, cell.n, hidden, device=device, dtype=dtype, requires_grad=cell.mode == "train")
    grad = torch.randn_like(x) if cell.mode == "train" else None

    def step():
        if cell.mode == "train":
            call(module, x).backward(grad)
            x.grad = None
            for p in module.parameters():
                p.grad = None
        else:
            with torch.inference_mode():
                call(module, x)
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    first = time_call(step, repeats=1, warmup=0)["median"]  # warm-up, and a first look at the cost
    if first > budget_s:
        # once more before calling it over budget: a process's first step can carry one-time costs (on a GPU the
        # first backward creates cuBLAS's handles: 2.5-3 s on an H200, which cut every baseline's training sweep)
        first = time_call(step, repeats=1, warmup=0)["median"]
    if first > budget_s:
        cell.status, cell.median_s, cell.note = "over_budget", first, f"one step took {first:.1f}s > {budget_s}s"
        return cell
    times = time_call(step, repeats=repeats if first < 1.0 else min(repeats, 3), warmup=0)
    cell.median_s, cell.p20_s, cell.p80_s = times["median"], times["p20"], times["p80"]
    cell.tokens_per_s = cell.batch * cell.n / cell.median_s
    if with_memory:
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            step()
            cell.peak_bytes = torch.cuda.max_memory_allocated() - base
        else:
            cell.peak_bytes = peak_memory_bytes(step)
        cell.peak_activations = cell.peak_bytes / (x.numel() * x.element_size())
    return cell


def measure_variant(
    name: str,
    shapes: list[tuple[int, int]],
    modes: Iterable[str],
    hidden: int,
    heads: int,
    dtype: str,
    device: str,
    repeats: int,
    budget_s: float,
    with_memory: bool,
    progress: Callable[[Cell], None] | None = None,
) -> Iterator[Cell]:
    """Every (mode, shape) cell of one variant, in order, in this process."""
    variant = VARIANTS[name]
    ok, why = available(name)
    torch_dtype = DTYPES[dtype]
    for mode in modes:
        stopped = "" if ok else f"unavailable: {why}"
        module = None
        for batch, n in shapes:
            cell = Cell(name, mode, batch, n)
            if stopped:
                cell.status, cell.note = ("unavailable" if not ok else "skipped"), stopped
            else:
                torch.manual_seed(0)
                try:
                    if module is None or variant.depends_on_length:
                        module = variant.build(hidden, heads, n).to(device=device, dtype=torch_dtype)
                    cell = measure_cell(
                        module, variant.call, cell, hidden, torch_dtype, device, repeats, budget_s, with_memory
                    )
                except (RuntimeError, MemoryError) as error:
                    if not (_is_oom(error) or isinstance(error, MemoryError)):
                        raise
                    cell.status, cell.note = "oom", str(error).splitlines()[0][:200]
                if cell.status in ("over_budget", "oom"):
                    stopped = f"{cell.status} at n={n}"
            if progress:
                progress(cell)
            yield cell


def run(
    variants: Iterable[str],
    shapes: list[tuple[int, int]],
    *,
    modes: Iterable[str] = ("train", "inference"),
    hidden: int = 256,
    heads: int = 16,
    dtype: str = "float32",
    device: str = "cpu",
    repeats: int = 5,
    budget_s: float = 20.0,
    with_memory: bool = True,
    progress: Callable[[Cell], None] | None = None,
    cells_path: Path | None = None,
) -> list[Cell]:
    """Measure every (variant, mode, (batch, n)) cell; shapes in increasing n.

    Each variant and mode runs in a child process that appends its cells to a JSON Lines file as they finish, so that a
    variant killed by the operating system (out of memory) or stuck past 8 x budget_s + 60 s on one step costs
    only its own remaining cells: the cell in progress is recorded as "oom" or "over_budget", the rest "skipped".
    """
    modes = list(modes)
    own_file = cells_path is None
    if own_file:
        fd, name = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        cells_path = Path(name)
    cells_path.parent.mkdir(parents=True, exist_ok=True)
    all_cells: list[Cell] = []
    try:
        for name in variants:
            for mode in modes:  # a child per mode: a training run killed for memory leaves inference its chance
                spec = dict(
                    name=name,
                    shapes=shapes,
                    modes=[mode],
                    hidden=hidden,
                    heads=heads,
                    dtype=dtype,
                    device=device,
                    repeats=repeats,
                    budget_s=budget_s,
                    with_memory=with_memory,
                )
                all_cells += _run_isolated(spec, cells_path, budget_s, progress)
    finally:
        if own_file:
            cells_path.unlink(missing_ok=True)
    return all_cells


def _read_cells(path: Path, skip: int) -> list[Cell]:
    lines = path.read_text().splitlines()[skip:] if path.exists() else []
    return [Cell(**json.loads(line)) for line in lines if line.strip()]


def _run_isolated(spec: dict, cells_path: Path, budget_s: float, progress) -> list[Cell]:
    expected = [(mode, b, n) for mode in spec["modes"] for b, n in spec["shapes"]]
    already = len(cells_path.read_text().splitlines()) if cells_path.exists() else 0
    child = subprocess.Popen([sys.executable, "-m", "fastformer.benchmark.worker", json.dumps(spec), str(cells_path)])
    stall_limit = 8 * budget_s + 60
    seen, last_change, stalled = 0, time.monotonic(), False
    while child.poll() is None:
        time.sleep(0.5)
        now_seen = len(_read_cells(cells_path, already))
        if now_seen != seen:
            seen, last_change = now_seen, time.monotonic()
        elif time.monotonic() - last_change > stall_limit:
            stalled = True
            child.kill()
            child.wait()
    cells = _read_cells(cells_path, already)
    if len(cells) < len(expected):  # the child died or was stopped in the middle of a cell
        mode, b, n = expected[len(cells)]
        failed = Cell(spec["name"], mode, b, n)
        if stalled:
            failed.status, failed.note = "over_budget", f"no result after {stall_limit:.0f}s; stopped"
        elif child.returncode < 0:
            failed.status = "oom"
            failed.note = f"killed by signal {-child.returncode}, most likely by the system for lack of memory"
        else:
            failed.status, failed.note = "error", f"child process ended with code {child.returncode}"
        extra = [failed]
        for mode2, b2, n2 in expected[len(cells) + 1 :]:
            reason = f"{failed.status} at n={n}" if mode2 == mode else f"{failed.status} in {mode} mode"
            extra.append(Cell(spec["name"], mode2, b2, n2, status="skipped", note=reason))
        with cells_path.open("a") as f:
            for cell in extra:
                f.write(json.dumps(asdict(cell)) + "\n")
                if progress:
                    progress(cell)
        cells += extra
    return cells


def write_results(cells: list[Cell], header: dict, settings: dict, stem: Path) -> tuple[Path, Path]:
    """stem.json (header, settings, cells) and stem.csv (one row per cell, header fields repeated)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    json_path, csv_path = stem.with_suffix(".json"), stem.with_suffix(".csv")
    payload = dict(machine=header, settings=settings, cells=[asdict(c) for c in cells], targets=targets(cells))
    json_path.write_text(json.dumps(payload, indent=1))
    with csv_path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([f"# {k}: {v}" for k, v in header.items()])
        fields = list(asdict(cells[0]).keys()) if cells else []
        writer.writerow(fields)
        for c in cells:
            writer.writerow([asdict(c)[k] for k in fields])
    return json_path, csv_path


def _lookup(cells: list[Cell], variant: str, mode: str) -> dict[int, Cell]:
    return {c.n: c for c in cells if c.variant == variant and c.mode == mode and c.status == "ok"}


def targets(cells: list[Cell], main: str = "fastformer-official") -> dict:
    """The issue's speed and memory targets, evaluated on whatever cells were measured."""
    train = _lookup(cells, main, "train")
    if not train:
        return {}
    out = {}
    if 512 in train and max(train) >= 4096:
        longest = max(train)
        ratio = train[longest].tokens_per_s / train[512].tokens_per_s
        out["throughput_longest_over_512"] = dict(n=longest, ratio=round(ratio, 3), target=">= 0.8", met=ratio >= 0.8)
    proj = _lookup(cells, "projections-only", "train")
    ratios = {n: round(train[n].median_s / proj[n].median_s, 3) for n in train if n in proj and n >= 4096}
    if ratios:
        out["layer_over_projections_n_ge_4096"] = dict(
            ratios=ratios, target="<= 1.3", met=all(r <= 1.3 for r in ratios.values())
        )
    mem = {n: round(c.peak_activations, 2) for n, c in train.items() if c.peak_activations is not None}
    if mem:
        out["peak_train_memory_in_activations"] = dict(by_n=mem, target="<= 6", met=max(mem.values()) <= 6)
    for rival, from_n in (("softmax-sdpa", 512), ("lucidrains-fast-transformer", 0)):
        for mode in ("train", "inference"):
            ours = _lookup(cells, main, mode)
            other = {c.n: c for c in cells if c.variant == rival and c.mode == mode}
            faster = {}
            for n, c in ours.items():
                if n >= from_n and n in other and other[n].status != "unavailable":
                    o = other[n]  # a rival over budget or out of memory counts as slower
                    faster[n] = o.status != "ok" or c.median_s < o.median_s
            if faster:
                out[f"faster_than_{rival}_{mode}"] = dict(from_n=from_n, by_n=faster, met=all(faster.values()))
    return out


def print_cell(cell) -> None:
    if cell.status == "ok":
        mem = "" if cell.peak_bytes is None else f"{cell.peak_bytes / 2**20:9.1f} MiB ({cell.peak_activations:.1f} act)"
        spread = f"[{1e3 * cell.p20_s:.1f}, {1e3 * cell.p80_s:.1f}]"
        print(
            f"{cell.variant:>28} {cell.mode:>9} B={cell.batch:<4} N={cell.n:<6} {1e3 * cell.median_s:10.1f} ms "
            f"{spread} {cell.tokens_per_s:11,.0f} tok/s {mem}",
            flush=True,
        )
    else:
        print(
            f"{cell.variant:>28} {cell.mode:>9} B={cell.batch:<4} N={cell.n:<6} {cell.status}: {cell.note}", flush=True
        )
