"""The efficiency benchmark's machinery: cells, budgets, unavailable packages, result files, targets."""

import json

import pytest
import torch

from fastformer.benchmark import VARIANTS, Cell, machine_header, run, targets, write_results
from fastformer.benchmark.registry import available
from fastformer.cli.main import main

TINY = dict(hidden=32, heads=4, repeats=1)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_available_variant_is_a_token_mixer(name):
    ok, why = available(name)
    if not ok:
        pytest.skip(why)
    module = VARIANTS[name].build(32, 4, 64)
    x = torch.randn(2, 64, 32, requires_grad=True)
    y = VARIANTS[name].call(module, x)
    assert y.shape == x.shape
    y.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


@pytest.mark.slow
def test_cells_are_measured_and_over_budget_cells_recorded_not_crashed():
    cells = run(["softmax-sdpa"], [(2, 64), (1, 128)], modes=["train", "inference"], budget_s=1e-9, **TINY)
    assert len(cells) == 4  # a child process per mode, each stopping at its first over-budget length
    first = [c for c in cells if c.n == 64]
    assert all(c.status == "over_budget" and c.median_s > 0 for c in first)
    assert all(c.status == "skipped" for c in cells if c.n == 128)  # longer lengths are not attempted


def test_a_one_time_cost_of_the_first_step_does_not_make_a_cell_over_budget():
    """A process's first step can carry one-time costs (on a GPU the first backward creates cuBLAS's handles, 2.5-3 s
    on an H200, which once marked every baseline's training sweep over a 2 s budget): the step is timed again before
    the cell is called over budget, and a step that stays slow still is."""
    import time

    from fastformer.benchmark.runner import measure_cell

    calls = []

    def first_call_slow(module, x):
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.3)
        return x * 2

    def always_slow(module, x):
        time.sleep(0.3)
        return x * 2

    module = torch.nn.Identity()
    args = dict(hidden=8, dtype=torch.float32, device="cpu", repeats=3, budget_s=0.2, with_memory=False)
    ok = measure_cell(module, first_call_slow, Cell("v", "inference", 2, 16), **args)
    assert ok.status == "ok" and ok.median_s < 0.2
    slow = measure_cell(module, always_slow, Cell("v", "inference", 2, 16), **args)
    assert slow.status == "over_budget" and slow.median_s >= 0.3


def test_measured_cell_has_times_throughput_and_memory():
    (cell,) = run(["fastformer-paper"], [(2, 64)], modes=["train"], budget_s=60, **TINY)
    assert cell.status == "ok"
    assert 0 < cell.p20_s <= cell.median_s <= cell.p80_s
    assert cell.tokens_per_s == pytest.approx(128 / cell.median_s)
    assert cell.peak_bytes > 0 and cell.peak_activations > 0


def test_results_files_carry_a_machine_header(tmp_path):
    # the writer needs cells, not their measurement (measuring is test_measured_cell_has_times_throughput_and_memory's)
    cells = [
        Cell(variant, "train", 1, 64, median_s=0.01, tokens_per_s=6400.0)
        for variant in ("fastformer-official", "projections-only")
    ]
    header = machine_header("float32", "cpu")
    json_path, csv_path = write_results(cells, header, {"note": "test"}, tmp_path / "r")
    payload = json.loads(json_path.read_text())
    for key in ("cpu", "cpu_isa", "threads", "torch", "dtype", "git_commit", "date"):
        assert key in payload["machine"]
    assert len(payload["cells"]) == 2
    lines = csv_path.read_text().splitlines()
    assert lines[0].startswith("# date") and lines[1].startswith("variant,mode,batch,n")


@pytest.mark.parametrize(
    "flags, isa",
    [
        ("fpu sse2 avx fma avx2", "avx2"),  # this workplace's AMD EPYC of some sessions
        ("avx2 avx512f avx512bw avx512_bf16 avx512_vnni", "avx512bf16"),  # the same name in others
        ("avx2 avx512f avx512bw", "avx512"),
        ("avx2 avx512f avx512_bf16 amx_bf16 amx_tile", "amx"),  # an Intel Xeon with AMX
    ],
)
def test_cpu_results_name_the_cpu_s_widest_matrix_instructions(monkeypatch, flags, isa):
    """Two CPUs of one name, 20x apart in bf16, write two results files (benchmarks/distill/speed.py's names)."""
    from fastformer import precision
    from fastformer.benchmark import runner
    from tests.helpers import load_script

    speed = load_script("distill/speed.py", "benchmark_distill_speed")
    monkeypatch.setattr(precision, "cpuinfo", lambda: ("AMD EPYC", set(flags.split())))
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    header = runner.machine_header("float32", "cpu")
    assert header["cpu"] == "AMD EPYC" and header["cpu_isa"] == isa
    version = torch.__version__.split("+")[0].replace(".", "_")
    name = f"speed_cpu{torch.get_num_threads()}t_amd-epyc-{isa}_torch{version}.json"
    assert speed.result_name("speed", header, "cpu") == name
    assert speed.result_name("speed", header, "cuda") == f"speed_cuda_torch{version}.json"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "avx512_core")  # this CPU measured as one without its widest kernels
    header = runner.machine_header("float32", "cpu")
    assert header["onednn_max_cpu_isa"] == "AVX512_CORE"
    assert speed.result_name("speed", header, "cpu") == name.replace(f"-{isa}_", f"-{isa}-onednn-avx512_core_")


def test_a_cpu_without_cpuinfo_flags_is_named_by_torch_s_kernels(monkeypatch):
    from fastformer import precision
    from fastformer.benchmark import runner

    monkeypatch.setattr(precision, "cpuinfo", lambda: (None, set()))  # an ARM Mac, a container without /proc
    assert precision.cpu_isa() == torch.backends.cpu.get_cpu_capability().lower()
    assert runner.machine_header("float32", "cpu")["cpu"]  # platform's name instead


def test_targets_are_evaluated_from_cells():
    def cell(variant, n, seconds, act=5.0, mode="train"):
        return Cell(variant, mode, 65536 // n, n, median_s=seconds, tokens_per_s=65536 / seconds, peak_activations=act)

    cells = [
        cell("fastformer-official", 512, 1.0),
        cell("fastformer-official", 65536, 1.1, act=6.5),
        cell("fastformer-official", 4096, 1.0),
        cell("projections-only", 4096, 0.9),
        cell("softmax-sdpa", 512, 2.0),
        cell("softmax-sdpa", 4096, 0.5),
        Cell("lucidrains-fast-transformer", "train", 1, 65536, status="over_budget"),
    ]
    result = targets(cells)
    assert result["throughput_longest_over_512"]["met"]
    assert result["layer_over_projections_n_ge_4096"]["ratios"] == {4096: pytest.approx(1.111, abs=1e-3)}
    assert not result["peak_train_memory_in_activations"]["met"]
    assert result["faster_than_softmax-sdpa_train"]["by_n"] == {512: True, 4096: False}
    assert result["faster_than_lucidrains-fast-transformer_train"]["by_n"] == {65536: True}


@pytest.mark.slow
def test_bench_command_writes_json_csv_png(tmp_path, capsys):
    assert (
        main(
            [
                "bench",
                "--variants",
                "fastformer-official",
                "--lengths",
                "64",
                "128",
                "--tokens",
                "256",
                "--hidden-size",
                "32",
                "--heads",
                "4",
                "--repeats",
                "1",
                "--modes",
                "train",  # one child process (a child per mode; test_cells_are_measured... runs both)
                "--out",
                str(tmp_path),
                "--targets",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "machine:" in out and "target" in out
    stems = {p.suffix for p in tmp_path.iterdir()}
    assert stems == {".json", ".csv", ".png", ".jsonl"}  # .cells.jsonl: the cells as they were measured


def test_a_variant_whose_process_dies_is_recorded_and_the_sweep_goes_on(tmp_path):
    from fastformer.benchmark.runner import _run_isolated

    cells_path = tmp_path / "cells.jsonl"
    spec = dict(
        name="no-such-variant",
        shapes=[(1, 64), (1, 128)],
        modes=["train"],
        hidden=32,
        heads=4,
        dtype="float32",
        device="cpu",
        repeats=1,
        budget_s=60,
        with_memory=False,
    )
    cells = _run_isolated(spec, cells_path, 60, None)
    assert [(c.n, c.status) for c in cells] == [(64, "error"), (128, "skipped")]
    assert "code 1" in cells[0].note
    assert len(cells_path.read_text().splitlines()) == 2  # recorded in the cells file too
    # the next variant still runs
    (ok,) = run(["fastformer-paper"], [(1, 64)], modes=["inference"], budget_s=60, with_memory=False, **TINY)
    assert ok.status == "ok"


def test_bench_is_for_users_by_default():
    """Results go to the user's runs/bench, not the source tree; the project's targets print only when asked."""
    import argparse

    from fastformer.cli.bench import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    defaults = parser.parse_args([])
    assert defaults.out == "runs/bench" and not defaults.targets


def test_a_script_s_cpu_result_names_its_threads_and_torch_and_carries_the_header(tmp_path):
    """benchmarks/attention/implementation_by_shape.py and causal_attention.py write through write_cpu_result."""
    from fastformer.benchmark.runner import write_cpu_result

    path = write_cpu_result(tmp_path / "out", "causal_attention", 3, tokens=8, rows=[{"n": 4}])
    version = torch.__version__.split("+")[0].replace(".", "_")
    assert path == tmp_path / "out" / f"causal_attention_cpu3t_torch{version}.json"
    payload = json.loads(path.read_text())
    assert payload["machine"]["threads"] == 3 and payload["machine"]["device"] == "cpu"
    assert payload["tokens"] == 8 and payload["rows"] == [{"n": 4}]
