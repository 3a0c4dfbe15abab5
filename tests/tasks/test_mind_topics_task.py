"""MIND topic classification end to end: train on the real shared files (several, comma-joined), evaluate, predict."""

import json

import pytest

from fastformer.cli.main import main
from tests.helpers import SHARED

MIND = SHARED / "data" / "mind"


@pytest.mark.skipif(not MIND.is_dir(), reason="shared data missing")
def test_train_evaluate_predict_on_mind_topics(tmp_path, capsys):
    files = ",".join(str(MIND / n) for n in ("news_sample.tsv.gz", "mindrec20_valid.json.gz"))
    out = tmp_path / "topics"
    assert (
        main(
            [
                "train",
                "--format",
                "mind-topics",
                "--train",
                files,
                "--max-train-examples",
                "600",
                "--max-eval-examples",
                "150",
                "--epochs",
                "1",
                "--batch-size",
                "32",
                "--vocab-size",
                "2000",
                "--max-length",
                "32",
                "--model",
                "hidden_size=32",
                "--model",
                "num_attention_heads=4",
                "--model",
                "intermediate_size=32",
                "--output-dir",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    metrics = json.loads((out / "metrics.json").read_text())
    data = metrics["data"]
    assert data["read"]["train"]["kept"] == 7102 and len(data["read"]["train"]["categories"]) == 15
    assert metrics["train"]["examples"] == 600 and data["split"]["test"] == data["split"]["validation"] > 500
    assert len(metrics["test"]["labels"]) == 15 and metrics["test"]["examples"] == 150
    assert "kids" in data["split_categories"]["test"]

    assert main(["evaluate", str(out), "--data", str(MIND / "news_sample.tsv.gz"), "--format", "mind-topics"]) == 0
    assert (
        json.loads((out / "evaluations" / "news_sample" / "metrics.json").read_text())["examples"] == 1998
    )  # distinct titles
    capsys.readouterr()
    assert main(["predict", str(out), "Patriots beat the Jets in overtime"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["label"] in metrics["test"]["labels"]


def test_texts_of_a_given_test_file_leave_training(tmp_path):
    from fastformer.tasks.classification.config import ClassificationConfig
    from fastformer.tasks.classification.data import load_splits

    def news(path, rows):
        path.write_text("".join(f"N{i}\t{c}\t{c}\t{t}\t\t\t[]\t[]\n" for i, (c, t) in enumerate(rows)))
        return str(path)

    train = news(tmp_path / "train.tsv", [("news", f"story {i}") for i in range(20)] + [("sports", "The  Game")])
    test = news(tmp_path / "test.tsv", [("sports", "the game"), ("news", "story 0")])
    report = {}
    cfg = ClassificationConfig.from_dict(dict(train=train, test=test, format="mind-topics"))
    splits = load_splits(cfg, report)
    assert report["train_texts_removed_as_in_evaluation_files"] == 2  # matched after lower-casing and spacing
    assert len(splits["test"]) == 2 and len(splits["train"]) + len(splits["validation"]) == 19
    assert not {e.text for e in splits["train"]} & {"story 0", "The  Game"}
