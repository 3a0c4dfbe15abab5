"""`--bf16` on a CPU: bfloat16 autocast where the CPU multiplies bfloat16, float32 (said once) where it cannot
(precision.py); FASTFORMER_CPU_BF16 forces either way."""

import json
import platform

import pytest
import torch

from fastformer import precision
from fastformer.cli.main import main
from tests.helpers import SHARED

SST = SHARED / "data" / "sst5"
TINY = ["--model", "hidden_size=16", "--model", "num_attention_heads=2", "--model", "intermediate_size=16",
        "--vocab-size", "300", "--max-length", "16", "--no-progress"]  # fmt: skip


@pytest.fixture
def cpu_without_bf16(monkeypatch):
    """This CPU as one with no bfloat16 matrix kernels (AVX2 only), whatever it is; the note not yet said."""
    monkeypatch.delenv(precision.FORCE, raising=False)
    monkeypatch.setattr(precision, "cpu_multiplies_bf16", lambda: False)
    monkeypatch.setattr(precision, "_said", [])


def test_bf16_where_the_cpu_multiplies_it_float32_said_once_where_it_cannot(cpu_without_bf16, monkeypatch, capsys):
    assert not precision.cpu_bf16_autocast(False)
    assert not precision.cpu_bf16_autocast(True) and not precision.cpu_bf16_autocast(True)
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("--bf16: float32 instead of bfloat16 autocast")
    assert "FASTFORMER_CPU_BF16=1" in said[0]
    monkeypatch.setattr(precision, "cpu_multiplies_bf16", lambda: True)
    assert precision.cpu_bf16_autocast(True) and not precision.cpu_bf16_autocast(False)
    assert capsys.readouterr().err == ""


def test_the_environment_forces_either_way_and_a_bad_value_is_one_line(cpu_without_bf16, monkeypatch, capsys):
    monkeypatch.setenv(precision.FORCE, "1")
    assert precision.cpu_bf16_autocast(True) and not precision.cpu_bf16_autocast(False)
    monkeypatch.setattr(precision, "cpu_multiplies_bf16", lambda: True)
    monkeypatch.setenv(precision.FORCE, "0")
    assert not precision.cpu_bf16_autocast(True)
    assert capsys.readouterr().err == ""  # forced: nothing to say
    monkeypatch.setenv(precision.FORCE, "yes")
    with pytest.raises(SystemExit, match=r"FASTFORMER_CPU_BF16='yes': 1 forces .* 0 refuses it"):
        precision.cpu_bf16_autocast(True)


def test_torch_has_the_onednn_check():
    """The check torch's CPU matmul dispatch follows (a bf16 product takes oneDNN's kernels only where it says yes);
    were it gone from a later torch, every CPU would be taken to have oneDNN's bf16 (the behaviour before the check)."""
    assert precision.onednn_bf16() is bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


@pytest.mark.parametrize(
    "onednn, machine, flags, cap, pays",
    [
        (True, "x86_64", "avx2 avx512f avx512bw avx512_bf16", None, True),  # AMD EPYC (Zen 4), Cooper Lake
        (True, "x86_64", "avx2 avx512f avx512_bf16 amx_bf16 amx_tile", None, True),  # Sapphire Rapids
        (True, "x86_64", "avx2 avx512f avx512bw avx512vl avx512dq avx512_vnni", None, False),  # Cascade/Ice Lake
        (False, "x86_64", "avx avx2 fma", None, False),  # AVX2 only: torch loops in scalar
        (True, "x86_64", "avx2 avx512f avx512_bf16", "AVX512_CORE", False),  # oneDNN capped under its BF16
        (True, "x86_64", "avx2 avx512f avx512_bf16", "AVX512_CORE_BF16", True),
        (True, "AMD64", "", None, True),  # Windows: no /proc/cpuinfo, oneDNN's check alone
        (True, "aarch64", "fp asimd bf16", None, True),  # ARM: torch's check is the BF16 instructions
        (False, "arm64", "", None, False),
    ],
)
def test_bf16_pays_where_the_cpu_has_bfloat16_dot_products(onednn, machine, flags, cap, pays):
    """Where torch sends bf16 products to oneDNN but the CPU lacks AVX512_BF16 and AMX, oneDNN emulates them: a Linear's
    forward + backward 2.5x slower than float32 (measured with oneDNN capped at AVX512_CORE, docs/RESULTS.md)."""
    assert precision.bf16_pays(onednn, machine, set(flags.split()), cap) is pays


def test_this_machine_s_decision_reads_its_cpu_and_the_onednn_cap(monkeypatch):
    expected = precision.bf16_pays(
        precision.onednn_bf16(), platform.machine(), precision.cpuinfo()[1], precision.onednn_cap()
    )
    assert precision.cpu_multiplies_bf16.__wrapped__() is expected
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "avx2")
    assert precision.onednn_cap() == "AVX2"
    if platform.machine().lower() in ("x86_64", "amd64"):
        assert precision.cpu_multiplies_bf16.__wrapped__() is False


def _train(out, *extra):
    args = ["train", "--train", str(SST / "sst_train.txt"), "--test", str(SST / "sst_dev.txt"), "--subset", "first",
            "--max-train-examples", "32", "--max-eval-examples", "8", "--epochs", "1", *TINY, "--bf16",
            "--output-dir", str(out), *extra]  # fmt: skip
    assert main(args) == 0
    checkpoint = next((out / "checkpoints").glob("checkpoint-*"))
    used = torch.load(checkpoint / "training_args.bin", weights_only=False).bf16
    return json.loads((out / "run_config.json").read_text()), json.loads((out / "metrics.json").read_text()), used


def test_a_bf16_run_on_a_cpu_without_bf16_kernels_trains_in_float32_and_says_what_ran(
    cpu_without_bf16, tmp_path, monkeypatch, capsys
):
    """run_config.json keeps what was asked (a resume on a bf16 machine continues it as asked); metrics.json says what
    ran; the note once, though training and the run's scoring both asked; forced, the same run trains under bf16."""
    settings, metrics, used = _train(tmp_path / "f32")
    assert settings["bf16"] is True and metrics["train"]["bf16_autocast"] is False and used is False
    assert capsys.readouterr().err.count("--bf16: float32 instead of bfloat16 autocast") == 1
    monkeypatch.setenv(precision.FORCE, "1")
    settings, metrics, used = _train(tmp_path / "bf16")
    assert settings["bf16"] is True and metrics["train"]["bf16_autocast"] is True and used is True
