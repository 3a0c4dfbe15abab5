"""The `fastformer` command line."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForSequenceClassification

from fastformer.cli.main import main
from tests.helpers import FIXTURE


def test_console_script_lists_its_subcommands():
    # installed beside the interpreter by `pip install`; fall back to PATH for other layouts
    beside = Path(sys.executable).parent / "fastformer"
    exe = str(beside) if beside.is_file() else shutil.which("fastformer")
    assert exe, "the `fastformer` console script is not installed"
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    assert "demo" in out and "convert-official" in out


def test_module_entry_point_help_per_subcommand():
    for sub in ("demo", "convert-official"):
        out = subprocess.run([sys.executable, "-m", "fastformer.cli.main", sub, "--help"], capture_output=True,
                             text=True, check=True).stdout  # fmt: skip
        assert "usage: fastformer" in out


def test_demo_measures_both_layers(tmp_path, capsys):
    path = tmp_path / "demo.json"
    assert main(["demo", "--lengths", "64", "256", "--hidden-size", "32", "--heads", "4", "--repeats", "1",
                 "--json", str(path)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "fastformer ms" in printed and "N grew 4x" in printed
    rows = json.loads(path.read_text())["rows"]
    assert [r["n"] for r in rows] == [64, 256]
    for row in rows:
        assert row["fastformer_s"] > 0 and row["softmax_s"] > 0 and row["fastformer_bytes"] > 0
    # memory of the Fastformer layer grows with N (4x longer, at least 2x more)
    assert rows[1]["fastformer_bytes"] > 2 * rows[0]["fastformer_bytes"]


@pytest.mark.skipif(not FIXTURE.is_file(), reason="fixture missing")
def test_convert_official_command(tmp_path, capsys):
    out = tmp_path / "model"
    assert main(["convert-official", str(FIXTURE), str(out)]) == 0
    assert "official preset, hidden 64, 8 heads" in capsys.readouterr().out
    from safetensors.torch import load_file

    fixture = load_file(str(FIXTURE))
    model = AutoModelForSequenceClassification.from_pretrained(out).double().eval()
    with torch.no_grad():
        logits = model(fixture["input_ids"]).logits
    assert (logits - fixture["expected_logits"]).abs().max() < 1e-6


def test_convert_official_reports_a_missing_file(tmp_path):
    with pytest.raises(SystemExit, match="no such checkpoint"):
        main(["convert-official", str(tmp_path / "nope.pt"), str(tmp_path / "out")])
