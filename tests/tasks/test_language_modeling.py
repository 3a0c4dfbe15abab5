"""Language modelling end to end on real IMDB text: reader, training (Fastformer and the GPT-2 baseline), perplexity,
saved folder, generation from the command line, and clear errors."""

import gzip
import json
import math

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from fastformer.cli.main import main
from fastformer.data import DataError
from fastformer.data.text_corpus import read_texts
from fastformer.tasks.lm.language_model import TokenBlocks
from tests.helpers import SHARED

IMDB = SHARED / "data" / "imdb" / "imdb_ratings.jsonl.gz"
TINY = [
    "--model",
    "hidden_size=32",
    "--model",
    "num_attention_heads=4",
    "--model",
    "intermediate_size=64",
    "--model",
    "num_hidden_layers=2",
    "--vocab-size",
    "500",
    "--block-size",
    "64",
    "--batch-size",
    "8",
    "--no-progress",
]


def test_reads_imdb_documents_by_split():
    train = list(read_texts(IMDB, where={"split": "train"}))
    test = list(read_texts(IMDB, where={"split": "test"}))
    assert len(train) == len(test) == 25000
    assert all(isinstance(t, str) and t.strip() for t in train[:100])


def test_reader_formats_and_errors(tmp_path):
    (tmp_path / "a.txt").write_text("first doc\n\nsecond doc\n")
    assert list(read_texts(tmp_path / "a.txt")) == ["first doc", "second doc"]
    (tmp_path / "b.csv").write_text("id,body\n1,hello there\n2,\n3,general kenobi\n")
    assert list(read_texts(tmp_path / "b.csv", text_field="body")) == ["hello there", "general kenobi"]
    with gzip.open(tmp_path / "c.jsonl.gz", "wt") as f:
        f.write('{"text": "ok"}\n{"body": "no text field"}\n')
    with pytest.raises(DataError, match=r"c.jsonl.gz:2: field 'text': missing"):
        list(read_texts(tmp_path / "c.jsonl.gz"))
    (tmp_path / "d.jsonl").write_text('{"text": "ok"}\n{"text": 3}\n')
    with pytest.raises(DataError, match=r"d.jsonl:2: field 'text': expected a string"):
        list(read_texts(tmp_path / "d.jsonl"))
    (tmp_path / "e.txt").write_text("\n\n")
    with pytest.raises(DataError, match="no documents"):
        list(read_texts(tmp_path / "e.txt"))
    with pytest.raises(DataError, match="no such column in the header row"):
        list(read_texts(tmp_path / "b.csv", text_field="missing"))


def test_token_blocks_join_documents_with_the_separator():
    from fastformer.data.tokenizer import train_tokenizer

    docs = ["the film", "a long dull film", "great"]
    tokenizer = train_tokenizer(docs * 3, vocab_size=60, min_frequency=1)
    ids = [tokenizer(d, add_special_tokens=False)["input_ids"] for d in docs]
    assert [len(i) for i in ids] == [2, 4, 1]  # whole words in this vocabulary
    blocks = TokenBlocks(docs, tokenizer, block_size=4, separator_id=9)
    joined = ids[0] + [9] + ids[1] + [9] + ids[2] + [9]  # 10 tokens: two blocks, the tail of 2 dropped
    assert blocks.blocks.tolist() == [joined[:4], joined[4:8]]
    assert blocks[1]["labels"].tolist() == joined[4:8]


@pytest.mark.slow
def test_train_lm_generate_and_baseline_on_imdb(tmp_path, capsys):
    common = [
        "--train",
        str(IMDB),
        "--where",
        "train:split=train",
        "--validation",
        str(IMDB),
        "--where",
        "validation:split=test",
        "--max-train-texts",
        "300",
        "--max-eval-texts",
        "40",
        "--max-steps",
        "40",
        "--evaluations",
        "2",
        "--learning-rate",
        "3e-3",
        *TINY,
    ]
    out = tmp_path / "fastformer"
    assert main(["train", "lm", *common, "--output-dir", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    ppl = metrics["validation"]["perplexity"]
    # an untrained model scores about the vocabulary size (500); 40 small steps get well below it (measured: ~270)
    assert math.isfinite(ppl) and ppl < 0.6 * 500
    assert metrics["train"]["tokens_per_s"] > 0 and metrics["train"]["steps"] == 40

    import fastformer.models  # noqa: F401

    model = AutoModelForCausalLM.from_pretrained(out).eval()
    assert type(model).__name__ == "FastformerForCausalLM" and model.config.causal
    tokenizer = AutoTokenizer.from_pretrained(out)
    ids = tokenizer(["the movie was"], add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        recomputed = model.generate(ids, max_new_tokens=8, use_cache=False)
    assert torch.equal(model.generate(ids, max_new_tokens=8), recomputed)

    capsys.readouterr()
    assert main(["generate", str(out), "the movie was", "i did not", "--max-new-tokens", "6", "--num-beams", "3"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [r["prompt"] for r in rows] == ["the movie was", "i did not"]
    assert all(r["continuation"].strip() for r in rows)
    prompts = tmp_path / "prompts.jsonl"  # a JSON Lines file of prompts: each record's field, not the JSON line
    prompts.write_text('{"prompt": "the movie was"}\n\n{"prompt": "i did not"}\n')
    assert main(["generate", str(out), "--file", str(prompts), "--text-field", "prompt", "--max-new-tokens", "2"]) == 0
    assert [json.loads(line)["prompt"] for line in capsys.readouterr().out.splitlines()] == [
        "the movie was",
        "i did not",
    ]
    with pytest.raises(SystemExit, match=r"^fastformer generate: .*prompts.jsonl:1: field 'text': missing"):
        main(["generate", str(out), "--file", str(prompts)])
    folder = tmp_path / "prompt-files"  # a folder of text files: one prompt each, by name (as predict reads one)
    folder.mkdir()
    (folder / "b.txt").write_text("i did not\n")
    (folder / "a.txt").write_text("the movie was")
    (folder / ".DS_Store").write_bytes(b"\0")
    assert main(["generate", str(out), "--file", str(folder), "--max-new-tokens", "2"]) == 0
    assert [json.loads(line)["prompt"] for line in capsys.readouterr().out.splitlines()] == [
        "the movie was",
        "i did not",
    ]
    with pytest.raises(SystemExit, match=r"prompt-files: --text-field reads a file's records; a folder's texts are"):
        main(["generate", str(out), "--file", str(folder), "--text-field", "prompt"])
    with pytest.raises(SystemExit, match=r"--output .*prompt-files/g.jsonl: inside .*prompt-files, which this"):
        main(["generate", str(out), "--file", str(folder), "--output", str(folder / "g.jsonl")])

    # a corpus shorter than one block is refused before the run begins: the finished run given --overwrite is whole
    # (the tokenizer is made in memory first; the refusal came after the run began and removed its weights)
    before = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    short = tmp_path / "short.jsonl"
    short.write_text(json.dumps({"text": "A review too short for one block of 64 tokens."}) + "\n")
    args = ["train", "lm", "--train", str(short), "--validation", str(short), *TINY, "--output-dir", str(out)]
    with pytest.raises(
        SystemExit, match=r"^fastformer train lm: --train .*short.jsonl: \d+ tokens \(1 document\) are "
    ):
        main([*args, "--overwrite"])
    assert {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before
    # a long enough corpus with a validation file too short: refused naming that file, the run still whole
    args = ["train", "lm", "--train", str(IMDB), "--max-train-texts", "40", "--validation", str(short), *TINY]
    with pytest.raises(SystemExit, match=r"--validation .*short.jsonl: \d+ tokens \(1 document\) are fewer than"):
        main([*args, "--output-dir", str(out), "--overwrite"])
    assert {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before

    baseline = tmp_path / "gpt2"
    args = [*common, "--architecture", "gpt2", "--tokenizer", str(out / "tokenizer"), "--output-dir", str(baseline)]
    args += ["--max-steps", "10"]  # enough for a finite perplexity and a folder to evaluate
    assert main(["train", "lm", *args]) == 0
    base = json.loads((baseline / "metrics.json").read_text())
    assert base["architecture"] == "gpt2" and math.isfinite(base["validation"]["perplexity"])
    # same sizes but for the attention's two scoring vectors per layer
    assert abs(base["parameters"] - metrics["parameters"]) == 2 * 2 * 32

    # evaluate and predict know a language model's folder (either architecture) from the folder itself
    for folder, trained in ((out, metrics), (baseline, base)):
        assert (
            main(["evaluate", str(folder), "--data", str(IMDB), "--where", "split=test", "--max-examples", "40"]) == 0
        )
        again = json.loads((folder / "evaluations" / "imdb_ratings" / "metrics.json").read_text())
        assert again["perplexity"] == pytest.approx(trained["validation"]["perplexity"], rel=1e-4)
    capsys.readouterr()
    assert main(["predict", str(out), "the movie was", "--max-new-tokens", "5"]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["text"] == "the movie was" and row["argument"] == 1 and row["continuation"].strip()

    # fastformer export: generate-ready programs (prefill + one-token decode with the state as tensors), loaded back
    # from disk, generate what generate() does on a left-padded batch
    from fastformer.models.fastformer.exportable import greedy_decode

    exported = tmp_path / "exported"
    assert main(["export", str(out), str(exported)]) == 0
    written = json.loads((exported / "export.json").read_text())
    assert written["generation"]["state"][:2] == ["seen_tokens", "query_lse_0"]
    prefill = torch.export.load(exported / "prefill.pt2").module()
    decode = torch.export.load(exported / "decode.pt2").module()
    tokenizer.padding_side = "left"  # prompts padded on the left, as for generate()
    batch = tokenizer(["the movie was", "i did not like this film at all"], return_tensors="pt", padding=True)
    assert batch["attention_mask"][0, 0] == 0
    expected = model.generate(**batch, max_new_tokens=6, do_sample=False)
    got = greedy_decode(prefill, decode, batch["input_ids"], batch["attention_mask"], 6)
    assert torch.equal(got, expected)
    # batches of other sizes and lengths than the export's example; the state's shapes do not depend on the context
    heads, head_size = model.config.num_attention_heads, model.config.hidden_size // model.config.num_attention_heads
    for batch_size, length, seed in ((3, 12, 1), (1, 40, 2), (5, 3, 3)):
        ids = torch.randint(
            5, model.config.vocab_size, (batch_size, length), generator=torch.Generator().manual_seed(seed)
        )
        ids[0, : length // 2] = tokenizer.pad_token_id  # left padding
        mask = (ids != tokenizer.pad_token_id).long()
        expected = model.generate(ids, attention_mask=mask, max_new_tokens=6, do_sample=False)
        assert torch.equal(greedy_decode(prefill, decode, ids, mask, 6), expected)
        _, *state = prefill(ids, mask)
        assert len(state) == len(written["generation"]["state"]) and state[0].tolist() == mask.sum(-1).tolist()
        assert [tuple(t.shape[1:]) for t in state[1:5]] == [(heads,), (heads, head_size), (heads,), (heads, head_size)]


def test_lm_command_line_errors(tmp_path):
    with pytest.raises(SystemExit, match="--train: language modelling needs a file"):
        main(["train", "lm", "--output-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="unrecognized arguments: --label-field"):
        main(["train", "lm", "--train", str(IMDB), "--label-field", "rating"])
    with pytest.raises(SystemExit, match="unrecognized arguments: --block-size"):
        main(["train", "--block-size", "64"])
    with pytest.raises(SystemExit, match="not a saved model folder"):
        main(["generate", str(tmp_path), "hello"])


def test_resume_from_a_checkpoint_ends_where_an_uninterrupted_run_ends(tmp_path):
    import shutil

    args = [
        "train",
        "lm",
        "--train",
        str(IMDB),
        "--where",
        "train:split=train",
        "--max-train-texts",
        "200",
        "--max-eval-texts",
        "20",
        "--max-steps",
        "12",
        "--evaluations",
        "2",
        "--seed",
        "5",
        *TINY,
    ]
    whole = tmp_path / "whole"
    assert main([*args, "--output-dir", str(whole)]) == 0
    cut = tmp_path / "cut"  # the same run, as if killed after its first checkpoint (step 6)
    shutil.copytree(whole / "tokenizer", cut / "tokenizer")
    shutil.copy(whole / ".fastformer-run", cut / ".fastformer-run")
    shutil.copytree(whole / "checkpoints" / "checkpoint-6", cut / "checkpoints" / "checkpoint-6")
    # being written when the run was killed: stamped (before the Trainer writes), no trainer_state.json yet
    (cut / "checkpoints" / "checkpoint-9").mkdir()
    shutil.copy(whole / "checkpoints" / "checkpoint-6" / "fingerprint.json", cut / "checkpoints" / "checkpoint-9")
    assert main([*args, "--output-dir", str(cut), "--resume"]) == 0
    metrics = json.loads((cut / "metrics.json").read_text())
    assert metrics["train"]["resumed_from"].endswith("checkpoint-6")
    ids = torch.arange(5, 69).view(2, 32)
    logits = [AutoModelForCausalLM.from_pretrained(d).eval()(ids).logits for d in (whole, cut)]
    assert torch.equal(logits[0], logits[1])


def test_the_causal_softmax_control_trains_generates_and_fine_tunes_with_init_from(tmp_path, capsys):
    """`--architecture softmax`: the same fastformer model with causal softmax attention (the control for the causal
    Fastformer): it trains, generates by reading its prefix again (no decoding state), and a classifier starts from
    its encoder as from the Fastformer's."""
    from fastformer.engine.init_from import InitFromError, fine_tuning_config, load_encoder
    from fastformer.models.fastformer import FastformerForSequenceClassification

    out = tmp_path / "softmax"
    args = ["--train", str(IMDB), "--where", "train:split=train", "--max-train-texts", "100", "--max-eval-texts", "10"]
    args += ["--max-steps", "6", "--evaluations", "1", "--architecture", "softmax", "--output-dir", str(out), *TINY]
    assert main(["train", "lm", *args]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["architecture"] == "softmax" and math.isfinite(metrics["validation"]["perplexity"])
    model = AutoModelForCausalLM.from_pretrained(out).eval()
    assert type(model).__name__ == "FastformerForCausalLM" and model.config.attention_type == "softmax"
    assert model.config.causal and not model.config.use_cache and not model.config.keeps_decoding_state
    with pytest.raises(ValueError, match="keeps no decoding state"):
        model(torch.tensor([[5, 6, 7]]), use_cache=True)

    tokenizer = AutoTokenizer.from_pretrained(out)
    ids = tokenizer(["the movie was"], add_special_tokens=False, return_tensors="pt")["input_ids"]
    generated, expected = model.generate(ids, max_new_tokens=5, do_sample=False), ids
    with torch.no_grad():
        for _ in range(5):  # greedy decoding by hand, the whole prefix every step
            expected = torch.cat([expected, model(expected).logits[:, -1:].argmax(-1)], 1)
    assert torch.equal(generated, expected)
    capsys.readouterr()
    assert main(["generate", str(out), "the movie was", "--max-new-tokens", "4"]) == 0
    with pytest.raises(SystemExit, match="a softmax folder; export takes"):
        main(["export", str(out), str(tmp_path / "exported")])

    config = fine_tuning_config(out, dict(num_labels=2), {}, "softmax", tokenizer, 64)
    classifier, fresh = load_encoder(FastformerForSequenceClassification, out, config)
    source = model.state_dict()
    encoder = {k: v for k, v in classifier.state_dict().items() if k.startswith("fastformer.") and "pooler" not in k}
    assert encoder and all(torch.equal(v, source[k]) for k, v in encoder.items())
    assert classifier.config.causal and classifier.config.attention_type == "softmax"
    with pytest.raises(InitFromError, match="--architecture fastformer: --init-from .* attention_type 'softmax'"):
        fine_tuning_config(out, dict(num_labels=2), {}, "fastformer", tokenizer, 64)
    # the command line's path: a causal softmax classifier fine-tuned from the folder
    fine_tuned = tmp_path / "classifier"
    args = ["train", "--train", str(IMDB), "--where", "train:split=train", "--label-field", "rating"]
    args += ["--binary-threshold", "7", "--max-train-examples", "64", "--max-eval-examples", "16", "--epochs", "1"]
    args += ["--max-length", "48", "--architecture", "softmax", "--init-from", str(out), "--no-progress"]
    assert main([*args, "--output-dir", str(fine_tuned)]) == 0
    result = json.loads((fine_tuned / "metrics.json").read_text())
    assert result["init_from"]["architectures"] == ["FastformerForCausalLM"]
    saved = json.loads((fine_tuned / "config.json").read_text())
    assert saved["attention_type"] == "softmax" and saved["causal"]


def test_train_lm_continues_a_saved_model_with_every_weight_and_refuses_what_would_not_continue(tmp_path):
    """`train lm --init-from FOLDER` (continued pretraining): the model starts as the folder's, every tensor equal
    (the next-token head too), with the folder's tokenizer and a fresh optimizer; a folder it could not continue (other
    sizes, attention, too few positions, not a language model, the gpt2 baseline) is refused in one line before the
    run folder is made."""
    from safetensors.torch import load_file

    from fastformer.engine.init_from import continuing_config, fine_tuning_config, load_encoder, load_whole
    from fastformer.models.fastformer import FastformerForCausalLM, FastformerForSequenceClassification

    data = ["--train", str(IMDB), "--where", "train:split=train", "--max-train-texts", "100", "--max-eval-texts", "10"]
    first = tmp_path / "first"
    short = ["--max-steps", "4", "--evaluations", "1"]
    assert main(["train", "lm", *data, *short, "--output-dir", str(first), *TINY]) == 0
    saved = load_file(first / "model.safetensors")
    tokenizer = AutoTokenizer.from_pretrained(first)
    config = continuing_config(first, {"hidden_dropout_prob": 0.0}, "fastformer", tokenizer, 64)
    model = load_whole(FastformerForCausalLM, first, config)
    state = model.state_dict()
    assert saved and all(torch.equal(state[k], v) for k, v in saved.items())
    assert torch.equal(model.lm_head.weight, saved["fastformer.word_embeddings.weight"])  # (tied)
    assert model.config.hidden_dropout_prob == 0.0

    # (a different --vocab-size is moot: the folder's tokenizer comes with it)
    more = ["--max-steps", "2", "--evaluations", "1", "--block-size", "32", "--batch-size", "8", "--no-progress"]
    second = tmp_path / "second"
    args = ["train", "lm", *data, *more, "--init-from", str(first), "--vocab-size", "300"]
    assert main([*args, "--output-dir", str(second)]) == 0
    metrics = json.loads((second / "metrics.json").read_text())
    assert metrics["init_from"]["folder"] == str(first) and metrics["init_from"]["newly_initialised"] == []
    assert json.loads((second / "run_config.json").read_text())["init_from"] == str(first)
    assert AutoTokenizer.from_pretrained(second).get_vocab() == tokenizer.get_vocab()
    assert json.loads((second / "config.json").read_text())["hidden_size"] == 32
    # the continued model keeps its start's 64 positions; evaluate and explain read blocks of the run's 32 tokens
    assert json.loads((second / "config.json").read_text())["max_position_embeddings"] == 64
    scored = tmp_path / "scored.json"
    evaluate = ["evaluate", str(second), "--data", str(IMDB), "--where", "split=test", "--max-examples", "3"]
    assert main([*evaluate, "--output", str(scored)]) == 0
    assert json.loads(scored.read_text())["block_size"] == 32
    text = " ".join(["the film was long and the plot was thin ."] * 12)
    assert main(["explain", str(second), text, "--output-dir", str(tmp_path / "pages"), "--json", "--top-k", "0"]) == 0
    assert json.loads((tmp_path / "pages" / "arg-1.json").read_text())["tokens_read"] == 32

    head = fine_tuning_config(first, dict(num_labels=2), {}, "fastformer", tokenizer, 64)
    classifier, _ = load_encoder(FastformerForSequenceClassification, first, head)
    not_lm = tmp_path / "classifier"
    classifier.save_pretrained(not_lm)
    tokenizer.save_pretrained(not_lm)
    refusals = [
        (["--model", "hidden_size=64", "--init-from", str(first)], r"--model hidden_size=64: .* has hidden_size=32"),
        (["--architecture", "softmax", "--init-from", str(first)], r"--architecture softmax: .* attention_type"),
        (["--block-size", "128", "--init-from", str(first)], r"--block-size 128: .* max_position_embeddings 64"),
        (["--init-from", str(not_lm)], r"holds a FastformerForSequenceClassification, not a causal language model"),
        (["--architecture", "gpt2", "--init-from", str(first)], r"--init-from: continues a fastformer folder"),
    ]
    for extra, message in refusals:
        out = tmp_path / "refused"
        with pytest.raises(SystemExit) as refused:
            main(["train", "lm", *data, "--max-steps", "1", "--no-progress", *extra, "--output-dir", str(out)])
        assert len(str(refused.value).splitlines()) == 1
        assert __import__("re").search(message, str(refused.value)), str(refused.value)
        assert not out.exists()
