"""Summarization end to end on real CNN/DailyMail and PubMed pairs through the command line: train, ROUGE with
intervals, summaries, evaluate / predict from the saved folder, Lead-3, resume, --split."""

import json

import pytest
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from fastformer.cli.main import main
from tests.helpers import SHARED

CNNDM = SHARED / "data" / "cnndm"
PUBMED = SHARED / "data" / "pubmed"
TINY = [
    "--model",
    "hidden_size=32",
    "--model",
    "num_attention_heads=4",
    "--model",
    "intermediate_size=32",
    "--model",
    "decoder_layers=1",
    "--vocab-size",
    "1500",
    "--max-source-length",
    "128",
    "--max-target-length",
    "24",
    "--batch-size",
    "8",
    "--num-beams",
    "2",
    "--no-progress",
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("sum") / "run"
    args = [
        "train",
        "summarize",
        "--train",
        str(CNNDM / "validation_first1000.csv.gz"),
        "--test",
        str(CNNDM / "test_first500.csv.gz"),
        "--max-train-examples",
        "48",
        "--max-eval-examples",
        "8",
        "--epochs",
        "1",
        "--output-dir",
        str(out),
        *TINY,
    ]
    assert main(args) == 0
    return out


def test_training_writes_a_loadable_folder_with_rouge(trained):
    for name in (
        "config.json",
        "model.safetensors",
        "generation_config.json",
        "tokenizer.json",
        "metrics.json",
        "summaries_validation.jsonl",
        "summaries_test.jsonl",
        "training.png",
        "run_config.json",
    ):
        assert (trained / name).is_file(), name
    metrics = json.loads((trained / "metrics.json").read_text())
    for name in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        s = metrics["test"]["rouge"][name]
        assert 0 <= s["low"] <= s["f1"] <= s["high"] <= 100
    assert metrics["test"]["examples"] == 8 and metrics["train"]["tokens_per_s"] > 0
    rows = [json.loads(line) for line in (trained / "summaries_test.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and rows[0]["source"].endswith("test_first500.csv.gz:2")
    import fastformer.models  # noqa: F401

    model = AutoModelForSeq2SeqLM.from_pretrained(trained)
    assert model.config.max_position_embeddings == 128 and model.config.attention_type == "fastformer"
    from fastformer.tasks.summarize.summarizer import generation_settings

    checkpoint = next((trained / "checkpoints").glob("checkpoint-*"))  # generates as its run did (2 beams)
    assert generation_settings(trained).num_beams == generation_settings(checkpoint).num_beams == 2


def test_documents_are_cut_at_the_runs_source_length(trained, monkeypatch):
    """A summarizer reads --max-source-length tokens of a document, also where its encoder has more positions (an
    --init-from encoder's): the encoder is given the run's length, here 4 of the model's 128 positions."""
    from dataclasses import replace

    from fastformer.tasks.summarize.summarizer import generation_settings, load_model, summarize

    model, tokenizer = load_model(trained)
    cfg = generation_settings(trained)
    assert cfg.max_source_length == model.config.max_position_embeddings == 128
    read = []  # the encoder's input, as the real generate() gets it
    generate = model.generate
    model.generate = lambda input_ids, **kw: read.append(input_ids.shape[1]) or generate(input_ids=input_ids, **kw)
    document = " ".join(["the police said on monday that the storm had passed ."] * 5)
    summarize(model, tokenizer, [document], cfg, num_beams=1)
    summarize(model, tokenizer, [document], replace(cfg, max_source_length=4), num_beams=1)
    assert read == [len(tokenizer(document)["input_ids"]), 4]
    # --max-source-length on evaluate and predict reads as many tokens instead, up to the positions
    read.clear()
    monkeypatch.setattr("fastformer.tasks.summarize.summarizer.load_model", lambda folder: (model, tokenizer))
    assert main(["predict", str(trained), document, "--max-source-length", "6"]) == 0
    assert read == [6]
    with pytest.raises(SystemExit, match="--max-source-length 1000: the model reads at most 128 tokens"):
        main(["predict", str(trained), document, "--max-source-length", "1000"])


def test_evaluate_and_predict(trained, tmp_path, capsys):
    out = tmp_path / "m.json"
    assert (
        main(
            [
                "evaluate",
                str(trained),
                "--data",
                str(PUBMED / "cohan_sample_test.jsonl.gz"),
                "--max-examples",
                "3",
                "--num-beams",
                "1",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["examples"] == 3 and (tmp_path / "summaries.jsonl").is_file()
    capsys.readouterr()
    assert main(["predict", str(trained), "The minister resigned on Monday. Elections follow in May."]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["text"].startswith("The minister") and isinstance(row["summary"], str)


def test_lead3_baseline(tmp_path, capsys):
    out = tmp_path / "lead3"
    assert (
        main(
            [
                "train",
                "summarize",
                "--architecture",
                "lead3",
                "--test",
                str(CNNDM / "test_first500.csv.gz"),
                "--max-eval-examples",
                "50",
                "--output-dir",
                str(out),
            ]
        )
        == 0
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert 20 < metrics["test"]["rouge"]["rouge1"]["f1"] < 45  # CNN articles: lead-3 is a strong baseline
    counts = metrics["test"]["repetition"]  # sentences of an article hardly repeat, nor stutter
    assert counts["repeated_3gram_rate"] < 0.05 and counts["adjacent_repeat_rate"] < 0.01
    assert metrics["test"]["reference_repetition"]["words"] > 20
    first = json.loads((out / "summaries_test.jsonl").read_text().splitlines()[0])
    assert first["summary"].count("\n") == 2
    # the Lead-3 folder evaluates and predicts like a model's
    assert main(["evaluate", str(out), "--data", str(CNNDM / "test_first500.csv.gz"), "--max-examples", "50"]) == 0
    again = json.loads((out / "evaluations" / "test_first500" / "metrics.json").read_text())
    assert again["rouge"]["rouge1"]["f1"] == metrics["test"]["rouge"]["rouge1"]["f1"]
    capsys.readouterr()
    assert main(["predict", str(out), "One sentence here. Two sentences here. Three here. Four is dropped."]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["summary"].splitlines() == ["One sentence here.", "Two sentences here.", "Three here."]
    for command in (["predict", str(out), "A text."], ["evaluate", str(out), "--data", str(CNNDM / "x.csv")]):
        with pytest.raises(SystemExit, match="--max-source-length: .* holds the lead3 baseline, which reads whole"):
            main([*command, "--max-source-length", "64"])
    # predict --file on CNN / DailyMail's own CSV: each row's article (the task's default field), not its lines
    from fastformer.data.summarization import lead, read_pairs

    pairs = read_pairs(CNNDM / "test_first500.csv.gz")[:2]
    assert main(["predict", str(out), "--file", str(CNNDM / "test_first500.csv.gz"), "--no-progress"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 500 and [r["summary"] for r in rows[:2]] == [lead(p) for p in pairs]
    assert [r["line"] for r in rows[:2]] == [int(p.origin.rsplit(":", 1)[1]) for p in pairs]


@pytest.mark.slow
def test_split_and_resume_with_the_fastformer_decoder(tmp_path, capsys):
    out = tmp_path / "run"
    args = [
        "train",
        "summarize",
        "--train",
        str(PUBMED / "cohan_sample_train.jsonl.gz"),
        "--split",
        "40",
        "6",
        "4",
        "--model",
        "decoder_type=fastformer",
        "--output-dir",
        str(out),
        *TINY,
    ]
    assert main([*args, "--epochs", "2"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["train"]["examples"], metrics["validation"]["examples"], metrics["test"]["examples"]) == (40, 6, 4)
    assert list(metrics["skipped_empty_rows"].values())[0] > 0  # the real file has rows with an empty article
    from tests.tasks.test_news_recommendation import _as_if_killed_in_the_last_epoch

    _as_if_killed_in_the_last_epoch(out)
    assert main([*args, "--epochs", "2", "--resume"]) == 0
    resumed = json.loads((out / "metrics.json").read_text())["train"]
    assert "checkpoint-" in resumed["resumed_from"]
    assert json.loads((out / "config.json").read_text())["decoder_type"] == "fastformer"
    with pytest.raises(SystemExit, match="needs 5000 pairs"):
        main(
            [
                "train",
                "summarize",
                "--train",
                str(PUBMED / "cohan_sample_train.jsonl.gz"),
                "--split",
                "4000",
                "500",
                "500",
                "--output-dir",
                str(out),
                "--overwrite",
            ]
        )
    assert (out / "run_complete.json").is_file()  # a run refused for its data leaves the previous run whole

    # fastformer export: the teacher-forced program, and with the Fastformer decoder the generate-ready pair, loaded
    # back from disk, summarizes what generate() does (greedy, padded batch)
    import torch

    from fastformer.models.fastformer.exportable import greedy_summarize

    exported = tmp_path / "exported"
    assert main(["export", str(out), str(exported)]) == 0
    written = json.loads((exported / "export.json").read_text())
    assert written["inputs"] == ["input_ids", "attention_mask", "decoder_input_ids"]
    assert written["generation"]["state"][:3] == ["memory_k_0", "memory_v_0", "seen_tokens"]
    model = AutoModelForSeq2SeqLM.from_pretrained(out).eval()
    tokenizer = AutoTokenizer.from_pretrained(out)
    batch = tokenizer(
        ["The minister resigned on Monday.", "Rain fell. Roads closed for hours."], padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        expected = model.generate(
            **batch,
            max_new_tokens=6,
            num_beams=1,
            do_sample=False,
            eos_token_id=None,
            no_repeat_ngram_size=0,
            min_length=0,
        )
        teacher_forced = model(**batch, decoder_input_ids=expected).logits
    prefill = torch.export.load(exported / "prefill.pt2").module()
    decode = torch.export.load(exported / "decode.pt2").module()
    got = greedy_summarize(
        prefill, decode, batch["input_ids"], batch["attention_mask"], 6, model.config.decoder_start_token_id
    )
    assert torch.equal(got, expected)
    program = torch.export.load(exported / "model.pt2").module()
    torch.testing.assert_close(program(**batch, decoder_input_ids=expected), teacher_forced, rtol=1e-4, atol=1e-5)
    _assert_teacher_forced_program_equals_eager(program, model)


def test_export_of_the_transformer_decoder_summarizer_says_what_it_does_not_export(trained, tmp_path):
    """The teacher-forced program exports; the decoding pair does not (a key/value cache that grows), and
    export.json says so and what has it."""
    import torch

    assert main(["export", str(trained), str(tmp_path / "exported")]) == 0
    written = json.loads((tmp_path / "exported" / "export.json").read_text())
    assert "decoder_type=fastformer" in written["generation"] and not (tmp_path / "exported" / "decode.pt2").exists()
    model = AutoModelForSeq2SeqLM.from_pretrained(trained).eval()
    program = torch.export.load(tmp_path / "exported" / "model.pt2").module()
    _assert_teacher_forced_program_equals_eager(program, model)


def _assert_teacher_forced_program_equals_eager(program, model):
    """At document and summary lengths other than the export's example (8 and 3), padding in the document."""
    import torch

    for length, summary, seed in ((17, 7, 1), (4, 1, 2)):
        ids = torch.randint(5, model.config.vocab_size, (2, length), generator=torch.Generator().manual_seed(seed))
        mask = torch.ones_like(ids)
        mask[1, length // 2 :] = 0
        inputs = dict(input_ids=ids, attention_mask=mask, decoder_input_ids=ids[:, :summary])
        with torch.no_grad():
            torch.testing.assert_close(program(**inputs), model(**inputs).logits, rtol=1e-4, atol=1e-5)


def test_summaries_hand_freed_memory_back_after_each_batch(trained, monkeypatch):
    """Documents are summarized shortest first, so each batch is longer than the last; glibc kept the shorter ones'
    freed fragments (the classifier's predictions grew to 9.5 GB that way), so each batch trims."""
    from fastformer.tasks.summarize import summarizer as summarization
    from fastformer.tasks.summarize.config import SummarizationConfig

    model = AutoModelForSeq2SeqLM.from_pretrained(trained)
    tokenizer = AutoTokenizer.from_pretrained(trained)
    batches = []
    monkeypatch.setattr(summarization, "release_freed_memory", lambda: batches.append(1))
    documents = ["The minister resigned on Monday. " * n for n in range(1, 20)]
    cfg = SummarizationConfig(eval_batch_size=8, num_beams=1, max_target_length=8)
    summaries = summarization.summarize(model, tokenizer, documents, cfg)
    assert len(summaries) == 19 and len(batches) == 3  # 8 + 8 + 3 documents
