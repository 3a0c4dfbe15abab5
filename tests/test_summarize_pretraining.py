"""benchmarks/summarize_pretraining.py, on planted files: a probe row reads the tokens and held-out loss of the
pretraining point it started from, also for a probe tag that only extends a run's tag, and never claims zero tokens
where no log says how many."""

import json
from pathlib import Path

from tests.helpers import load_script

summarize_pretraining = load_script("summarize_pretraining.py")


def plant_probe(folder: Path, stem: str, accuracy: float) -> None:
    metrics = {"test": {"accuracy": accuracy}, "validation": {"accuracy": accuracy}}
    (folder / f"probe-{stem}.json").write_text(json.dumps(metrics))


def rows(text: str) -> dict[str, list[str]]:
    return {
        cells[0]: cells[1:]
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith("| start")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }


def test_a_probe_tag_without_its_own_log_reads_the_run_it_extends_and_an_unknown_one_stays_empty(tmp_path, capsys):
    log = {"tokens_per_step": 8192, "log_history": [{"step": 1600, "eval_loss": 4.9187}]}
    (tmp_path / "pretrain-clm-log.json").write_text(json.dumps(log))
    plant_probe(tmp_path, "clm-step1600-seed1", 0.84)
    plant_probe(tmp_path, "clm-step1600-seed2", 0.83)
    plant_probe(tmp_path, "clm-lrd05-step1600-seed1", 0.785)  # another recipe from clm's point: no log of its own
    plant_probe(tmp_path, "orphan-step40-seed1", 0.75)  # no log anywhere
    summarize_pretraining.main([str(tmp_path)])
    table = rows(capsys.readouterr().out)
    assert table["clm step 1600"] == ["1600", "13.1", "4.919", "83.50 +- 0.71", "83.50", "2"]
    assert table["clm-lrd05 step 1600"] == ["1600", "13.1", "4.919", "78.50", "78.50", "1"]
    assert table["orphan step 40"] == ["40", "", "", "75.00", "75.00", "1"]
