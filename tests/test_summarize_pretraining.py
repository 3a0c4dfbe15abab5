"""benchmarks/pretraining/summarize_pretraining.py, on planted files: a probe row reads the tokens and held-out
loss of the
pretraining point it started from, also for a probe tag that only extends a run's tag, and never claims zero tokens
where no log says how many."""

import json
from pathlib import Path

from tests.helpers import load_script

summarize_pretraining = load_script("pretraining/summarize_pretraining.py")


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


def test_a_continued_run_counts_on_from_the_steps_and_tokens_of_the_folder_it_started_from(
    tmp_path, capsys, monkeypatch
):
    save_pretraining_log = load_script("pretraining/save_pretraining_log.py")
    shipped, continued, again = tmp_path / "shipped", tmp_path / "continued", tmp_path / "again"
    settings = {"batch_size": 32, "block_size": 256, "max_steps": 1600}
    for folder, own, start in (
        (shipped, settings, None),
        (continued, {"batch_size": 16, "block_size": 512, "max_steps": 800}, shipped),
        (again, {"batch_size": 8, "block_size": 512, "max_steps": 100}, continued),
    ):
        folder.mkdir()
        (folder / "run_config.json").write_text(json.dumps({**own, "init_from": str(start) if start else None}))
        (folder / "log_history.json").write_text(json.dumps([{"step": 400, "eval_loss": 4.85}]))
    assert save_pretraining_log.lm_steps_and_tokens(again) == dict(steps_before=2500, tokens_before=20_070_400)
    assert save_pretraining_log.lm_steps_and_tokens(tmp_path / "gone") == {}  # unknown, not zero
    # a run by epochs (max_steps -1) counts the steps its metrics.json reports; without them they are unknown
    by_epochs = tmp_path / "by-epochs"
    by_epochs.mkdir()
    (by_epochs / "run_config.json").write_text(json.dumps({**settings, "max_steps": -1, "init_from": None}))
    assert save_pretraining_log.lm_steps_and_tokens(by_epochs) == {}
    (by_epochs / "metrics.json").write_text(json.dumps({"train": {"steps": 10}}))
    assert save_pretraining_log.lm_steps_and_tokens(by_epochs) == dict(steps_before=10, tokens_before=81_920)
    results = tmp_path / "results"
    out = results / "pretrain-clm-continued-log.json"
    monkeypatch.setattr("sys.argv", ["save_pretraining_log.py", str(continued), str(out)])
    save_pretraining_log.main()
    log = json.loads(out.read_text())
    assert (log["steps_before"], log["tokens_before"], log["tokens_per_step"]) == (1600, 13_107_200, 8192)
    plant_probe(results, "clm-continued-len512-step400-seed1", 0.86)
    summarize_pretraining.main([str(results)])
    table = rows(capsys.readouterr().out)
    assert table["clm-continued-len512 step 400"] == ["1600 + 400", "16.4", "4.850", "86.00", "86.00", "1"]
    # a run continued from a folder whose tokens no file gives: unknown, never counted from zero
    (shipped / "run_config.json").unlink()
    save_pretraining_log.main()
    assert json.loads(out.read_text())["tokens_before"] is None
    summarize_pretraining.main([str(results)])
    assert rows(capsys.readouterr().out)["clm-continued-len512 step 400"][:2] == ["? + 400", ""]
