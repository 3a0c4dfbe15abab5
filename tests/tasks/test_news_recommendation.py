"""News recommendation end to end on real MIND clicks (MINDRec converted to MIND's format): train, metrics, the
leaderboard file, evaluate / predict from the saved folder, resume; training rows and cached news encoding."""

import json
import math

import pytest
import torch

from fastformer.cli.main import main
from fastformer.data.mind import Impression, MindData, MindReport, News, load_mind
from fastformer.engine.inputs import installed_word_vectors
from fastformer.metrics.ranking import mind_metrics, read_rankings
from fastformer.tasks.news.recommender import ClickRows, NewsTokens, load_model, score_impressions
from tests.helpers import SHARED

MIND = SHARED / "data" / "mind"
# 64 wide: the default inputs (word level + GloVe 6B-50d when installed) need a table at least 50 wide
TINY = [
    "--model",
    "hidden_size=64",
    "--model",
    "num_attention_heads=4",
    "--model",
    "intermediate_size=32",
    "--vocab-size",
    "2000",
    "--batch-size",
    "16",
    "--no-progress",
    "--logging-steps",
    "5",
]


@pytest.fixture(scope="module")
def mind(tmp_path_factory):
    root = tmp_path_factory.mktemp("mind")
    for split in ("valid", "test"):
        assert main(["convert-mindrec", str(MIND / f"mindrec20_{split}.json.gz"), str(root / split)]) == 0
    return root


@pytest.fixture(scope="module")
def trained(mind, tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "news"
    args = [
        "train",
        "news",
        "--train",
        str(mind / "valid"),
        "--test",
        str(mind / "test"),
        "--epochs",
        "1",
        "--max-train-impressions",
        "100",
        "--max-eval-impressions",
        "100",
        "--output-dir",
        str(out),
        *TINY,
    ]
    assert main(args) == 0
    return out


def test_training_writes_a_folder_whose_files_agree(trained, mind, capsys):
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "metrics.json",
        "run_config.json",
        "prediction_validation.txt",
        "prediction_test.txt",
        "training.png",
        "log_history.json",
    ):
        assert (trained / name).is_file(), name
    metrics = json.loads((trained / "metrics.json").read_text())
    test = metrics["test"]
    assert 0 < test["impressions"] <= 100 and test["impressions"] + test["single_class"] == 100
    assert all(0 <= test[k] <= 1 for k in ("auc", "mrr", "ndcg@5", "ndcg@10"))
    assert metrics["train"]["rows"] > 0 and metrics["train"]["clicks_without_negatives"] > 0
    assert metrics["data"]["test"]["candidate_unknown"] == 0
    # the default inputs: word-level titles with the packaged GloVe when installed (recorded as such), else WordPiece
    installed = installed_word_vectors()
    assert json.loads((trained / "run_config.json").read_text())["word_vectors"] == installed
    assert metrics["inputs"]["tokenization"] == ("word" if installed else "wordpiece")
    if installed:
        assert metrics["inputs"]["embeddings"]["word_vectors"] == "glove-6b-50d"
        assert metrics["inputs"]["embeddings"]["vocabulary_coverage"] > 0.9
    # the leaderboard file, scored as the official script scores it, gives the same numbers
    data = load_mind(mind / "test")
    ranks = read_rankings(trained / "prediction_test.txt")
    impressions = data.impressions[:100]
    assert list(ranks) == [imp.impression_id for imp in impressions]
    for imp in impressions:
        assert sorted(ranks[imp.impression_id]) == list(range(1, len(imp.candidates) + 1))
    again = mind_metrics([imp.labels for imp in impressions], [ranks[imp.impression_id] for imp in impressions])
    for key in ("auc", "mrr", "ndcg@5", "ndcg@10", "impressions"):
        assert again[key] == pytest.approx(test[key])
    # validation picked the checkpoint: its metrics are in the log
    log = json.loads((trained / "log_history.json").read_text())
    assert any("eval_auc" in entry for entry in log)


@pytest.mark.slow
def test_evaluate_and_predict_from_the_saved_folder(trained, mind, tmp_path, capsys):
    out = tmp_path / "metrics.json"
    assert main(["evaluate", str(trained), "--data", str(mind / "test"), "--output", str(out)]) == 0
    full = json.loads(out.read_text())
    assert full["impressions"] == 476 and full["single_class"] == 104  # every scorable impression of the test file
    assert (tmp_path / "prediction.txt").is_file()  # the leaderboard file, beside --output
    # the real MIND sample: most candidates unknown to its news.tsv; they are ranked last and reported
    prediction = tmp_path / "prediction.txt"
    with pytest.raises(SystemExit, match="prediction.txt: exists; pass --overwrite"):  # evaluate wrote it
        main(["predict", str(trained), "--data", str(MIND), "--output", str(prediction)])
    assert main(["predict", str(trained), "--data", str(MIND), "--output", str(prediction), "--overwrite"]) == 0
    printed = capsys.readouterr().out
    assert "5000 impressions ranked" in printed and "candidates name news not in news.tsv" in printed
    ranks = read_rankings(prediction)
    data = load_mind(MIND)
    assert len(ranks) == len(data.impressions) == 5000
    for imp in data.impressions[:200]:
        r = ranks[imp.impression_id]
        unknown = [i for i, c in enumerate(imp.candidates) if c not in data.news]
        known = len(imp.candidates) - len(unknown)
        assert [r[i] for i in unknown] == list(range(known + 1, len(imp.candidates) + 1))  # last, in order


def test_a_folder_reads_news_texts_as_its_run_did(mind, tmp_path):
    """evaluate / predict / explain cut each news text at the run's --max-length, not at the model's positions (more
    for an --init-from encoder; here the 8 a run of --max-length 4 gets), and the run scores its splits in float32
    as they do, also after --bf16 training: the folder ranks as the run ranked."""
    import shutil

    from fastformer.tasks.news.recommender import rank_split

    out = tmp_path / "run"
    # --bf16: trained under autocast; the run and the folder both score in float32
    args = ["train", "news", "--train", str(mind / "valid"), "--test", str(mind / "test"), "--max-length", "4",
            "--max-train-impressions", "60", "--max-eval-impressions", "40", "--epochs", "1", "--output-dir", str(out),
            "--bf16", *TINY]  # fmt: skip
    assert main(args) == 0
    model, _ = load_model(out)
    assert (model.config.news_max_length, model.config.max_position_embeddings) == (4, 8)
    during_training = read_rankings(out / "prediction_test.txt")
    ranked = tmp_path / "prediction.txt"
    rank_split(out, mind / "test", output=ranked)
    assert {i: r for i, r in read_rankings(ranked).items() if i in during_training} == during_training
    older = tmp_path / "older"  # a folder of an earlier version (no news_max_length): its run_config.json says it
    shutil.copytree(out, older, ignore=shutil.ignore_patterns("checkpoints"))
    config = json.loads((older / "config.json").read_text())
    del config["news_max_length"]
    (older / "config.json").write_text(json.dumps(config))
    assert load_model(older)[0].config.news_max_length == 4


def _as_if_killed_in_the_last_epoch(out):
    """Remove the last checkpoint and the final files: what a run killed during its last epoch leaves."""
    import shutil

    last = max((out / "checkpoints").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    shutil.rmtree(last)
    for name in json.loads((out / "run_complete.json").read_text())["files"]:
        (out / name).unlink()
    (out / "run_complete.json").unlink()


def test_resume_continues_from_the_last_checkpoint(mind, tmp_path, capsys):
    """With word-level titles and word vectors (a small GloVe-format file) in the news encoder's embeddings."""
    out = tmp_path / "run"
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("".join(f"{w} {i} 0.5 -1\n" for i, w in enumerate(["the", "to", "trump", "nfl", "'s"])))
    args = [
        "train",
        "news",
        "--train",
        str(mind / "valid"),
        "--max-train-impressions",
        "60",
        "--max-eval-impressions",
        "30",
        "--output-dir",
        str(out),
        "--tokenization",
        "word",
        "--word-vectors",
        str(vectors),
        *TINY,
    ]
    assert main([*args, "--epochs", "2"]) == 0
    _as_if_killed_in_the_last_epoch(out)
    with pytest.raises(SystemExit, match=r"trained with other settings \(epochs: 2.0 -> 3.0\)"):
        main([*args, "--epochs", "3", "--resume"])
    assert main([*args, "--epochs", "2", "--resume"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["train"]["resumed_from"].endswith("checkpoint-6")  # epoch 1 of 2 (6 steps an epoch)
    assert (
        metrics["inputs"]["embeddings"]["vocabulary_with_vectors"] == 5 and metrics["inputs"]["tokenization"] == "word"
    )
    assert metrics["inputs"]["embeddings"]["placement"] == "isometric map 3 -> 64"
    last = max((out / "checkpoints").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    assert json.loads((last / "trainer_state.json").read_text())["epoch"] == 2


def test_news_flags_belong_to_the_news_task(mind, tmp_path, capsys):
    with pytest.raises(SystemExit, match="unrecognized arguments: --negatives"):
        main(["train", "--negatives", "3"])
    with pytest.raises(SystemExit, match="--train: news recommendation needs a MIND folder"):
        main(["train", "news"])
    only_clicks = tmp_path / "only-clicks"
    only_clicks.mkdir()
    (only_clicks / "news.tsv").write_text((mind / "valid" / "news.tsv").read_text())
    first = (mind / "valid" / "behaviors.tsv").read_text().splitlines()[0].split("\t")
    first[-1] = " ".join(c.replace("-0", "-1") for c in first[-1].split())
    (only_clicks / "behaviors.tsv").write_text("\t".join(first) + "\n")
    with pytest.raises(SystemExit, match="no validation impression has both a click and a non-click"):
        main(
            [
                "train",
                "news",
                "--train",
                str(mind / "valid"),
                "--validation",
                str(only_clicks),
                "--output-dir",
                str(tmp_path / "run"),
            ]
        )
    # training impressions without a click beside a non-click: refused before the run folder is made (it was refused
    # once the run had begun, after an --overwrite had already removed the finished run's weights)
    args = ["train", "news", "--train", str(only_clicks), "--validation", str(mind / "valid")]
    with pytest.raises(SystemExit, match=r"only-clicks: no click with an unclicked candidate in its impression"):
        main([*args, "--output-dir", str(tmp_path / "run")])
    assert not (tmp_path / "run").exists()


def _data(impressions):
    news = {n: News(n, "c", "c", f"title {n}", "", "") for n in ("A", "B", "C", "D", "E")}
    return MindData(news, impressions, MindReport(), "memory")


def test_click_rows_draw_negatives_from_their_impression():
    data = _data(
        [
            Impression("1", "u", "", ("A", "Z"), ("B", "C", "D", "Z"), (1, 0, 1, 0), "x:1"),  # Z: unknown news
            Impression("2", "u", "", (), ("E", "A"), (1, 1), "x:2"),  # no unclicked candidate
            Impression("3", "u", "", ("B",), ("E",), None, "x:3"),  # unlabelled
        ]
    )
    rows = ClickRows(data, max_history=50, negatives=4, seed=0)
    assert len(rows) == 2 and rows.clicks_without_negatives == 2
    first = rows[0]
    assert first["history"] == ["A"] and first["candidates"][0] == "B"
    assert first["candidates"][1:] == ["C"] * 4  # one unclicked candidate, repeated to K (unknown Z never drawn)
    assert rows[1]["candidates"][0] == "D"
    assert ClickRows(data, max_history=0, negatives=1, seed=0)[0]["history"] == []


def test_negatives_change_by_epoch_and_repeat_by_seed():
    many = tuple("BCDE")
    data = _data([Impression("1", "u", "", ("A",), ("A", *many), (1, 0, 0, 0, 0), "x:1")])
    rows = ClickRows(data, max_history=50, negatives=2, seed=0)
    drawn = set()
    for epoch in range(8):
        rows.epoch = epoch
        drawn.add(tuple(rows[0]["candidates"][1:]))
    assert len(drawn) > 1  # new negatives each epoch
    rows.epoch = 3
    again = ClickRows(data, max_history=50, negatives=2, seed=0)
    again.epoch = 3
    assert rows[0] == again[0]  # the same after a restart: resumable


def test_evaluation_encodes_each_news_once(trained, mind):
    model, tokenizer = load_model(trained)
    data = load_mind(mind / "test")
    data.impressions = data.impressions[:150]
    tokens = NewsTokens(tokenizer, ["title"], 48)
    tokens.add(data)
    encoded = []
    original = model.encode_news

    def counting(input_ids, attention_mask=None):
        encoded.append(len(input_ids))
        return original(input_ids, attention_mask)

    model.encode_news = counting
    scores = score_impressions(model, data, tokens, max_history=50, batch_size=64)
    referenced = {n for imp in data.impressions for n in (*imp.history, *imp.candidates)}
    assert sum(encoded) == len(referenced)  # not once per impression
    assert len(scores) == len(data.impressions) and all(torch.isfinite(torch.tensor(s)).all() for s in scores)


def test_popularity_rows_leave_their_own_click_out():
    """A row's clicked candidate counts one click less (its own), as a test impression's clicks are not counted."""
    from fastformer.tasks.news.recommender import popularity_prior, training_clicks

    data = _data(
        [
            Impression("1", "u", "", ("A",), ("B", "C", "D"), (1, 0, 1), "x:1"),
            Impression("2", "v", "", ("A",), ("B", "C"), (1, 0), "x:2"),
            Impression("3", "w", "", (), ("E", "B"), (0, 0), "x:3"),  # seen, never clicked
        ]
    )
    clicks = training_clicks(data)
    assert clicks == {"B": 2, "D": 1}
    rows = ClickRows(data, max_history=50, negatives=1, seed=0, clicks=clicks)
    assert [(r["candidates"], r["candidate_clicks"]) for r in (rows[0], rows[1], rows[2])] == [
        (["B", "C"], [1, 0]),  # B: clicked twice, once here
        (["D", "C"], [0, 0]),  # D: its only click is this row's
        (["B", "C"], [1, 0]),
    ]
    assert "candidate_clicks" not in ClickRows(data, max_history=50, negatives=1, seed=0)[0]
    # the scores a model starts from: each bucket's add-one log click rate, own clicks left out as in the rows.
    # bucket 0 (0 clicks): C, D, C, E shown, D clicked; bucket 1 (1-2 clicks): B thrice, clicked twice; bucket 2: none
    prior = popularity_prior(data, clicks, buckets=3)
    assert prior == pytest.approx([math.log(2 / 6), math.log(3 / 5), math.log(1 / 2)])


def test_a_popularity_model_saves_its_counts_and_ranks_the_same_from_its_folder(mind, tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "news",
                "--train",
                str(mind / "valid"),
                "--test",
                str(mind / "test"),
                "--epochs",
                "1",
                "--max-train-impressions",
                "100",
                "--max-eval-impressions",
                "100",
                "--popularity",
                "--output-dir",
                str(out),
                *TINY,
            ]
        )
        == 0
    )
    from fastformer.tasks.news.recommender import read_news_clicks

    metrics = json.loads((out / "metrics.json").read_text())
    clicks = read_news_clicks(out / "news_clicks.tsv")
    assert json.loads((out / "config.json").read_text())["popularity_buckets"] == 8
    assert metrics["train"]["popularity_clicks"] == sum(clicks.values()) and metrics["train"]["popularity_news"] == len(
        clicks
    )
    # the folder ranks the first 100 test impressions as the run did: the saved counts are the ones it trained with
    first = tmp_path / "first100"
    first.mkdir()
    (first / "news.tsv").write_text((mind / "test" / "news.tsv").read_text())
    lines = (mind / "test" / "behaviors.tsv").read_text().splitlines(keepends=True)[:100]
    (first / "behaviors.tsv").write_text("".join(lines))
    again = tmp_path / "again.json"
    assert main(["evaluate", str(out), "--data", str(first), "--output", str(again)]) == 0
    assert json.loads(again.read_text())["auc"] == pytest.approx(metrics["test"]["auc"], abs=1e-9)
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(SystemExit, match=r"--max-length: not read when evaluating a news run"):
        main(["evaluate", str(out), "--data", str(first), "--output", str(tmp_path / "x.json"), "--max-length", "9"])
    with pytest.raises(SystemExit, match=r"a news run predicts over a data folder \(--data\), not texts"):
        main(["predict", str(out), "a text"])
    assert not (tmp_path / "x.json").exists() and sorted(p.name for p in out.iterdir()) == before
    # counts lost or broken: a clear error, not a silent ranking without them
    (out / "news_clicks.tsv").write_text("N1\t3\nN2 three\n")
    with pytest.raises(SystemExit, match=r"news_clicks.tsv:2: expected 'news_id<TAB>clicks'"):
        main(["evaluate", str(out), "--data", str(first), "--output", str(again), "--overwrite"])
    (out / "news_clicks.tsv").unlink()
    with pytest.raises(SystemExit, match="the model scores popularity, but its counts news_clicks.tsv are missing"):
        main(["evaluate", str(out), "--data", str(first), "--output", str(again), "--overwrite"])


def test_bf16_trains_under_autocast_with_float32_weights(mind, tmp_path, monkeypatch):
    """`--bf16` (for a MiniLM-size --init-from news encoder): the Trainer runs with bfloat16 autocast on the CPU,
    the saved model keeps float32 weights and its ranking metrics are numbers. The validation that picks the epoch
    scores in float32, as the run's end and `evaluate` do (it ran under the autocast wrapper)."""
    from transformers import AutoModel

    from fastformer.models.fastformer import FastformerForNewsRecommendation

    calls = []  # (training?, autocast on?) of each forward, through whatever wraps it
    forward = FastformerForNewsRecommendation.forward

    def recorded(self, *args, **kwargs):
        calls.append((self.training, torch.is_autocast_enabled("cpu")))
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(FastformerForNewsRecommendation, "forward", recorded)
    monkeypatch.setenv("FASTFORMER_CPU_BF16", "1")  # on any CPU (one without bf16 kernels runs float32 instead)
    out = tmp_path / "news"
    args = ["train", "news", "--train", str(mind / "valid"), "--test", str(mind / "test"), "--epochs", "1",
            "--max-train-impressions", "40", "--max-eval-impressions", "40", "--bf16", *TINY]  # fmt: skip
    assert main([*args, "--output-dir", str(out)]) == 0
    assert {on for training, on in calls if training} == {True}  # the training steps: under autocast
    assert {on for training, on in calls if not training} == {False}  # every scoring, the validation's included
    assert json.loads((out / "run_config.json").read_text())["bf16"] is True
    checkpoint = next((out / "checkpoints").glob("checkpoint-*"))
    assert torch.load(checkpoint / "training_args.bin", weights_only=False).bf16
    assert AutoModel.from_pretrained(out).dtype == torch.float32
    assert 0 <= json.loads((out / "metrics.json").read_text())["test"]["auc"] <= 1


def _news_run(mind, out, *extra):
    return ["train", "news", "--train", str(mind / "valid"), "--test", str(mind / "test"), "--epochs", "1",
            "--max-train-impressions", "60", "--max-eval-impressions", "40", *TINY, *extra,
            "--output-dir", str(out)]  # fmt: skip


def _disagreeing_student_and_a_batch(trained, mind):
    """(teacher, student, batch, TrainingArguments): the trained recommender as teacher, a copy of it with its weights
    moved (a student that disagrees with its teacher) and no dropout draws (every pass sees the same student), and a
    batch of 8 real click rows of 1 + 4 candidates."""
    from transformers import TrainingArguments

    from fastformer.tasks.news.recommender import ClickCollator

    teacher, tokenizer = load_model(trained)
    student, _ = load_model(trained)
    with torch.no_grad():
        for p in student.parameters():
            p.add_(0.05 * torch.randn_like(p))
    for module in student.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    data = load_mind(mind / "valid")
    tokens = NewsTokens(tokenizer, teacher.config.news_fields, 48)
    tokens.add(data)
    batch = ClickCollator(tokens)([ClickRows(data, 50, 4, 0)[i] for i in range(8)])
    args = TrainingArguments(output_dir=str(trained / "unused"), report_to=[], use_cpu=True)
    return teacher.eval(), student, batch, args


def test_the_distillation_loss_of_a_news_batch_is_the_teachers_distribution_over_its_candidates(trained, mind):
    """`--teacher` on news: the Trainer's loss of a training step on a batch of real click rows equals (1 - w) x
    cross-entropy on the click + w x T^2 x KL(teacher || student) over each row's 1 + K candidates, both models
    reading the same batch."""
    from fastformer.engine.teacher import distillation_loss, task_distillation_trainer

    teacher, student, batch, args = _disagreeing_student_and_a_batch(trained, mind)
    trainer = task_distillation_trainer()(model=student, args=args, teacher=teacher, weight=0.7, temperature=2.0)
    loss = trainer.compute_loss(student.train(), dict(batch))
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    with torch.no_grad():
        expected = distillation_loss(student(**inputs).logits, teacher(**inputs).logits, batch["labels"], 0.7, 2.0)
    assert batch["candidate_index"].shape == (8, 5) and loss.item() > 0
    torch.testing.assert_close(loss.detach(), expected)


def test_a_news_students_hidden_term_compares_its_title_encoder_with_the_teachers(trained, mind):
    """`--distill-hidden w` on news: in training, the Trainer's loss is the distribution term plus w x the news
    encoder's hidden states against the teacher's over the batch's title tokens (`news_text_states`); in evaluation
    the student's own loss on the labels, the teacher not run (as an untaught run evaluates)."""
    from fastformer.engine.state_loss import hidden_state_loss
    from fastformer.engine.teacher import distillation_loss, task_distillation_trainer
    from fastformer.tasks.news.recommender import news_text_states

    teacher, student, batch, args = _disagreeing_student_and_a_batch(trained, mind)
    trainer = task_distillation_trainer()(
        model=student, args=args, teacher=teacher, weight=0.7, temperature=2.0, hidden_weight=0.5,
        text_states=news_text_states,
    )  # fmt: skip
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    teacher_calls = []
    hook = teacher.register_forward_hook(lambda *_: teacher_calls.append(1))
    evaluated = trainer.compute_loss(student.eval(), dict(batch))
    assert not teacher_calls  # evaluation reads the student alone
    trained_loss = trainer.compute_loss(student.train(), dict(batch))
    assert len(teacher_calls) == 1
    hook.remove()
    with torch.no_grad():
        own_loss = student(**inputs, labels=batch["labels"]).loss
        ours, theirs = student(**inputs, output_hidden_states=True), teacher(**inputs, output_hidden_states=True)
        logits_term = distillation_loss(ours.logits, theirs.logits, batch["labels"], 0.7, 2.0)
        hidden_term = hidden_state_loss(
            ours.news_hidden_states, theirs.news_hidden_states, inputs["news_attention_mask"].bool()
        )
    assert len(ours.news_hidden_states) == student.config.num_hidden_layers + 1 and hidden_term > 0
    torch.testing.assert_close(evaluated.detach(), own_loss)
    assert not torch.isclose(own_loss, logits_term)  # (the two losses differ: the assertion above can fail)
    torch.testing.assert_close(trained_loss.detach(), logits_term + 0.5 * hidden_term)


def test_a_news_student_learns_from_a_teacher_and_an_unfit_teacher_is_refused_in_one_line(trained, mind, tmp_path):
    tokenizer = str(trained / "tokenizer")
    out = tmp_path / "student"
    assert (
        main(
            _news_run(
                mind,
                out,
                "--teacher",
                str(trained),
                "--tokenizer",
                tokenizer,
                "--distill-weight",
                "0.7",
                "--distill-hidden",
                "0.5",
            )
        )
        == 0
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert 0 <= metrics["test"]["auc"] <= 1 and json.loads((out / "run_config.json").read_text())["teacher"]
    cases = [
        (["--teacher", str(trained)], "needs --init-from or --tokenizer"),
        (["--teacher", str(trained), "--tokenizer", tokenizer, "--news-fields", "category,title"], "it reads title"),
        (["--teacher", str(trained), "--tokenizer", tokenizer, "--popularity"], "does not score popularity"),
        (
            ["--teacher", str(trained), "--tokenizer", tokenizer, "--distill-hidden", "1", "--model", "hidden_size=32"],
            "--distill-hidden: the teacher's hidden size is",
        ),
        (["--teacher", str(mind / "valid"), "--tokenizer", tokenizer], str(mind / "valid")),
    ]
    for i, (extra, says) in enumerate(cases):
        with pytest.raises(SystemExit) as refused:
            main(_news_run(mind, tmp_path / str(i), *extra))
        message = str(refused.value.code)
        assert says in message and "\n" not in message, message
        assert not (tmp_path / str(i)).exists()


def test_auc_uncertainty_reads_the_runs_rankings_as_the_metrics_do(trained, mind, tmp_path, capsys):
    """benchmarks/news/auc_uncertainty.py: the bootstrap's point AUC is the run's own test AUC, a run against
    itself differs by exactly 0, the interval holds the point; a run without its rankings is one line."""
    import importlib.util

    from tests.helpers import BENCHMARKS

    spec = importlib.util.spec_from_file_location("auc_uncertainty", BENCHMARKS / "news" / "auc_uncertainty.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "auc.json"
    assert script.main([str(mind / "test"), str(trained), str(trained), "--resamples", "200", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    metrics = json.loads((trained / "metrics.json").read_text())["test"]
    assert result["impressions"] == metrics["impressions"]
    run = result["runs"][0]
    assert run["value"] == pytest.approx(100 * metrics["auc"], abs=0.006)
    assert run["se"] > 0 and run["ci95"][0] <= run["value"] <= run["ci95"][1]
    assert result["against_first"] == [dict(value=0.0, se=0.0, ci95=[0.0, 0.0])]
    assert "| news |" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"auc_uncertainty: .*prediction_test.txt: no such file"):
        script.main([str(mind / "test"), str(trained), str(tmp_path)])
