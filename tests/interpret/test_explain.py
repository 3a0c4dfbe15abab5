"""`fastformer explain` and `fastformer.interpret`: words as the tokenizer splits them, weights per word that add up,
the faithfulness check, one folder of each task with a text input explained from the command line (HTML, PNG, JSON),
and the page rendered by a real browser (headless Chromium): not blank, one element per word, its script run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest

from fastformer.cli.main import main
from fastformer.interpret.words import split_words
from tests.helpers import SHARED

SST = SHARED / "data" / "sst5"
IMDB = SHARED / "data" / "imdb" / "imdb_ratings.jsonl.gz"
PUBMED = SHARED / "data" / "pubmed"
MIND = SHARED / "data" / "mind"
SMALL = [
    "--model",
    "hidden_size=16",
    "--model",
    "num_attention_heads=2",
    "--model",
    "intermediate_size=16",
    "--no-progress",
]
REVIEW = "The food wasn't great, but the staff at the U.S. branch were friendly — I'd go back in 2025!"


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    out = tmp_path_factory.mktemp("explain") / "sst"
    assert (
        main(
            [
                "train",
                "--train",
                str(SST / "sst_train.txt"),
                "--validation",
                str(SST / "sst_dev.txt"),
                "--max-train-examples",
                "200",
                "--max-eval-examples",
                "20",
                "--epochs",
                "1",
                "--vocab-size",
                "800",
                "--max-length",
                "40",
                "--output-dir",
                str(out),
                *SMALL,
            ]
        )
        == 0
    )
    return out


def _tokenizer(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder))


def test_words_are_the_tokenizers_words_with_their_spans(classifier):
    tokenizer = _tokenizer(classifier)
    tokenized = split_words(tokenizer, REVIEW, max_length=None)
    pre_tokenized = tokenizer.backend_tokenizer.pre_tokenizer.pre_tokenize_str(
        tokenizer.backend_tokenizer.normalizer.normalize_str(REVIEW)
    )
    assert len(tokenized.words) == len(pre_tokenized)
    for word in tokenized.words:
        assert REVIEW[word.start : word.end] == word.text and word.read
    # word pieces sum into their word; tokens are all inside words (no special tokens are added)
    weights = np.full(len(tokenized.input_ids), 1 / len(tokenized.input_ids))
    per_word, outside = tokenized.word_weights(weights)
    assert per_word.shape == (len(tokenized.words),) and outside == 0
    np.testing.assert_allclose(per_word.sum(), 1.0)
    cut = tokenized.without_words({0, 2})
    assert cut.startswith(" food ") and "wasn" not in cut and "'t great" in cut
    # truncation: words after the first max_length tokens are kept but marked unread
    short = split_words(tokenizer, REVIEW, max_length=5)
    assert len(short.input_ids) == 5 and len(short.words) == len(tokenized.words)
    assert short.read_words < len(short.words) and not short.words[-1].read
    assert short.word_weights(np.ones((3, 5)))[0].shape == (3, short.read_words)


def test_word_level_tokenizer_words():
    from fastformer.data.word_tokenizer import build_word_tokenizer

    tokenizer = build_word_tokenizer(["the", "food", "was", "n't", "great", "do"])
    tokenized = split_words(tokenizer, "The food wasn't great. Don't!", max_length=None)
    assert [w.text for w in tokenized.words] == ["The", "food", "was", "n't", "great", ".", "Do", "n't", "!"]


def test_explanation_weights_add_up_and_faithfulness_cuts_the_top_words(classifier):
    from fastformer.interpret import View, explain
    from fastformer.tasks.classification.classifier import load_model

    model, tokenizer, _ = load_model(classifier)
    explanation = explain(model, tokenizer, REVIEW, faithfulness_k=3, trials=7)
    n = explanation.read_words
    assert n == len(explanation.words) and explanation.prediction["label"] in model.config.label2id
    np.testing.assert_allclose(explanation.pooling.sum(), 1.0, rtol=1e-5)
    for layer in explanation.layers:
        assert layer["alpha"].shape == layer["beta"].shape == (2, n)
        np.testing.assert_allclose(layer["alpha"].sum(-1), 1.0, rtol=1e-5)
        np.testing.assert_allclose(layer["beta"].sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(explanation.weights(View("alpha", 0)), explanation.layers[0]["alpha"].mean(0))
    np.testing.assert_allclose(explanation.weights(View("beta", 1, 1)), explanation.layers[1]["beta"][1])
    check = explanation.faithfulness
    assert check["k"] == 3 and check["random"]["trials"] == 7
    label = explanation.prediction["label"]
    assert check["original"] == pytest.approx(explanation.prediction["probabilities"][label], abs=1e-5)
    top = [word for word, _ in explanation.top_words(3)]
    assert sorted(check["top_weighted"][0]["words"]) == sorted(top)  # pooling: the 3 words of largest weight
    # the fall is measured on the text without those words: recompute it by hand
    from fastformer.tasks.classification.classifier import Classifier

    ranked = np.argsort(-explanation.pooling, kind="stable")[:3]
    cut = split_words(tokenizer, REVIEW, None).without_words(set(ranked.tolist()))
    after = Classifier(classifier)([cut])[0]["probabilities"][label]
    assert check["top_weighted"][0]["drop"] == pytest.approx(check["original"] - after, abs=1e-4)  # (rounded)
    with pytest.raises(ValueError, match="head 3 does not exist"):
        explanation.weights(View("alpha", 0, 2))
    assert "&lt;span class=&#x27;w&#x27;" in explanation._repr_html_()  # a notebook shows the page, in a frame
    with pytest.raises(ValueError, match="no tokens"):
        explain(model, tokenizer, "   ")


class _Words(HTMLParser):
    """Counts word elements (span.w) and collects their titles from a page's DOM."""

    def __init__(self):
        super().__init__()
        self.words, self.titles, self.read = 0, [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "span" and "w" in classes:
            self.words += 1
            self.read += "unread" not in classes
            self.titles.append(attrs.get("title") or "")


def _chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if found is None and os.environ.get("FASTFORMER_REQUIRE_BROWSER"):
        pytest.fail("FASTFORMER_REQUIRE_BROWSER is set (CI) but no Chromium is installed: .ci/run installs it")
    if found is None:
        pytest.skip("needs Chromium (Debian: apt-get install chromium; .ci/run installs it)")
    return found


def _browser(binary: str, profile, *args: str) -> subprocess.CompletedProcess:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ]
    return subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=120)


def test_the_page_renders_in_a_real_browser(classifier, tmp_path, capsys):
    """The page of a long text (paged, part of it after the truncation point) as Chromium shows it."""
    binary = _chromium()
    text = " ".join([REVIEW] * 6)  # ~130 words, more than the 40 tokens the model reads
    assert (
        main(["explain", str(classifier), text, "--output-dir", str(tmp_path), "--page-words", "50", "--png", "--json"])
        == 0
    )
    page = tmp_path / "arg-1.html"
    assert "http" not in page.read_text().replace("http-equiv", "")  # self-contained: nothing fetched
    words = len(json.loads((tmp_path / "arg-1.json").read_text())["words"])
    dom = _browser(binary, tmp_path / "profile", "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Uncaught" not in dom.stderr, dom.stderr[-2000:]  # the page's script ran without an error
    parsed = _Words()
    parsed.feed(dom.stdout)
    tokenizer = _tokenizer(classifier)
    assert parsed.words == words == len(split_words(tokenizer, text, None).words)  # one element per word
    assert 0 < parsed.read < parsed.words  # the words after the truncation point are shown, marked unread
    # the page's script ran in the browser: it titles every read word with its weight
    assert sum("of the pooled vector" in t for t in parsed.titles) == parsed.read
    # a link opens another view: the script shades and titles each word with that view's weights
    data = json.loads((tmp_path / "arg-1.json").read_text())
    view = _browser(binary, tmp_path / "profile", "--dump-dom", page.as_uri() + "#kind=beta&layer=2&head=1")
    shown = _Words()
    shown.feed(view.stdout)
    expected = data["layers"][1]["beta"][0]
    titled = [float(t.split()[1]) for t in shown.titles if t.startswith("weight ")]
    assert titled == pytest.approx([round(w, 4) for w in expected], abs=1e-4)
    assert titled != pytest.approx([round(w, 4) for w in data["pooling"]], abs=1e-4)
    shot = tmp_path / "page.png"
    result = _browser(binary, tmp_path / "profile", "--window-size=1000,900", f"--screenshot={shot}", page.as_uri())
    assert result.returncode == 0 and shot.stat().st_size > 0, result.stderr[-2000:]
    from matplotlib.image import imread

    pixels = imread(str(shot))[..., :3]
    assert pixels.std() > 0.05  # not blank
    shaded = (pixels[..., 2] > pixels[..., 0] + 0.15).mean()  # the blue shading of the words is on screen
    assert shaded > 0.001
    assert (tmp_path / "arg-1.png").stat().st_size > 10_000  # the static picture


def test_command_line_errors(classifier, tmp_path):
    with pytest.raises(SystemExit, match="give texts or --file"):
        main(["explain", str(classifier)])
    with pytest.raises(SystemExit, match="--head 3: the model has 2 heads"):
        main(["explain", str(classifier), "a text", "--head", "3", "--output-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="pooling weights have neither"):
        main(["explain", str(classifier), "a text", "--weights", "pooling", "--layer", "1"])
    with pytest.raises(SystemExit, match=r"--user: not read when explaining a classification run \(it reads --file,"):
        main(["explain", str(classifier), "a text", "--user", "U1"])
    with pytest.raises(SystemExit, match="no such file"):
        main(["explain", str(classifier), "--file", str(tmp_path / "missing.txt")])


def test_file_lines_and_a_chosen_view(classifier, tmp_path, capsys):
    source = tmp_path / "texts.txt"
    source.write_text("a lovely film\n\nthe plot is dull and slow\n")
    assert (
        main(
            [
                "explain",
                str(classifier),
                "--file",
                str(source),
                "--weights",
                "beta",
                "--layer",
                "1",
                "--head",
                "2",
                "--output-dir",
                str(tmp_path / "out"),
                "--top-k",
                "0",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "line-1:" in printed and "line-3:" in printed and "line-2" not in printed  # blank lines skipped
    assert "beta, layer 1, head 2" in printed
    page = (tmp_path / "out" / "line-3.html").read_text()
    assert "<option value='beta' selected>" in page and "<option value='1' selected>head 2</option>" in page


def test_a_language_model_and_a_summarizer_are_explained(tmp_path, capsys):
    lm = tmp_path / "lm"
    assert (
        main(
            [
                "train",
                "lm",
                "--train",
                str(IMDB),
                "--where",
                "train:split=train",
                "--max-train-texts",
                "60",
                "--max-eval-texts",
                "8",
                "--max-steps",
                "4",
                "--vocab-size",
                "300",
                "--block-size",
                "32",
                "--batch-size",
                "8",
                "--output-dir",
                str(lm),
                *SMALL,
            ]
        )
        == 0
    )
    summarizer = tmp_path / "summarizer"
    assert (
        main(
            [
                "train",
                "summarize",
                "--train",
                str(PUBMED / "cohan_sample_train.jsonl.gz"),
                "--split",
                "24",
                "4",
                "4",
                "--max-source-length",
                "64",
                "--max-target-length",
                "12",
                "--vocab-size",
                "400",
                "--batch-size",
                "8",
                "--epochs",
                "1",
                "--num-beams",
                "1",
                "--model",
                "decoder_layers=1",
                "--output-dir",
                str(summarizer),
                *SMALL,
            ]
        )
        == 0
    )
    capsys.readouterr()
    for folder in (lm, summarizer):
        out = tmp_path / f"explained-{folder.name}"
        assert (
            main(
                [
                    "explain",
                    str(folder),
                    "The patients were treated with a new drug for two weeks",
                    "--output-dir",
                    str(out),
                    "--json",
                    "--trials",
                    "3",
                ]
            )
            == 0
        )
        data = json.loads((out / "arg-1.json").read_text())
        layers = json.loads((folder / "config.json").read_text())["num_hidden_layers"]
        assert data["pooling"] is None and len(data["layers"]) == layers  # no pooling head: alpha and beta per layer
        assert np.allclose(np.array(data["layers"][-1]["alpha"]).sum(-1), 1.0, atol=1e-4)
        assert data["faithfulness"]["random"]["trials"] == 3
    printed = capsys.readouterr().out
    assert "arg-1: '" in printed  # the next token / the summary is named
    # a language model explains the next token after a long text: it reads the last tokens, those that token follows
    import torch
    from transformers import AutoModelForCausalLM

    from fastformer.interpret import View, explain

    model, tokenizer = AutoModelForCausalLM.from_pretrained(str(lm)).eval(), _tokenizer(lm)
    long_text = " ".join(["The patients were treated with a new drug for two weeks ."] * 6) + " They felt"
    explained = explain(model, tokenizer, long_text, faithfulness_k=2, trials=2)
    assert explained.tokens_read == 32 < explained.tokens_total and explained.skips_start
    assert explained.words[-1].read and not explained.words[0].read

    def next_token(text):  # the next-token distribution after the text's last 32 tokens
        last = tokenizer(text, add_special_tokens=False)["input_ids"][-32:]
        with torch.no_grad():
            return model(torch.tensor([last])).logits[0, -1].softmax(-1)

    expected = int(next_token(long_text).argmax())
    assert explained.prediction["next_tokens"][0]["token"] == tokenizer.decode([expected])
    # the faithfulness check re-scores a cut text by its last 32 tokens too
    cursor, pieces = 0, []
    ranked = np.argsort(-explained.weights(View("alpha", len(explained.layers) - 1)), kind="stable")[:2]
    for i in sorted(explained.read_indices[r] for r in ranked):
        pieces.append(explained.text[cursor : explained.words[i].start])
        cursor = explained.words[i].end
    after = float(next_token("".join(pieces) + explained.text[cursor:])[expected])
    original = explained.faithfulness["original"]
    alpha = next(t for t in explained.faithfulness["top_weighted"] if t["view"].startswith("alpha"))
    assert alpha["drop"] == pytest.approx(original - after, abs=1e-5)
    assert "The model reads the last 32 of the text's" in explained.to_html()
    # a run that read fewer source tokens than its encoder has positions (an --init-from encoder's 8,192) is
    # explained reading as many as its run did, and shows the summary `predict` writes (it read them all)
    shorter = tmp_path / "summarizer-16"
    shutil.copytree(summarizer, shorter)
    run = json.loads((shorter / "run_config.json").read_text())
    (shorter / "run_config.json").write_text(json.dumps({**run, "max_source_length": 16}))
    document = " ".join(["The patients were treated with a new drug for two weeks ."] * 6)
    out = tmp_path / "explained-16"
    assert main(["explain", str(shorter), document, "--output-dir", str(out), "--json", "--top-k", "0"]) == 0
    data = json.loads((out / "arg-1.json").read_text())
    assert data["tokens_read"] == 16 < 64 < data["tokens_total"]  # (64: the positions it read before)
    capsys.readouterr()
    assert main(["predict", str(shorter), document]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["summary"] == data["prediction"]["summary"]


@pytest.mark.parametrize("popularity", [False, True], ids=["paper", "popularity"])
def test_a_news_recommender_is_explained_per_user(tmp_path, capsys, popularity):
    mind = tmp_path / "mind"
    assert main(["convert-mindrec", str(MIND / "mindrec20_test.json.gz"), str(mind)]) == 0
    folder = tmp_path / "news"
    assert (
        main(
            [
                "train",
                "news",
                "--train",
                str(mind),
                "--epochs",
                "1",
                "--max-train-impressions",
                "40",
                "--max-eval-impressions",
                "10",
                "--vocab-size",
                "600",
                "--batch-size",
                "16",
                "--output-dir",
                str(folder),
                *SMALL,
                "--model",
                "hidden_size=64",  # the default GloVe needs >= 50
                *(["--popularity"] if popularity else []),
            ]
        )
        == 0
    )
    from fastformer.data.mind import load_mind

    user = next(i.user_id for i in load_mind(mind).impressions if len(i.history) >= 2)
    out = tmp_path / "explained"
    assert (
        main(["explain", str(folder), "--user", user, "--data", str(mind), "--output-dir", str(out), "--png", "--json"])
        == 0
    )
    data = json.loads((out / f"user-{user}.json").read_text())
    assert data["candidates"] and data["clicked"]
    assert abs(sum(c["weight"] for c in data["clicked"]) - 1) < 1e-5
    assert data["scores_popularity"] is popularity
    for candidate in data["candidates"]:  # the clicked news' shares and the popularity score make up the score
        assert sum(candidate["shares"]) + candidate["popularity"] == pytest.approx(candidate["score"], abs=1e-3)
        assert abs(sum(candidate["word_weights"]) - 1) < 1e-4
    popularity_scores = {c["popularity"] for c in data["candidates"]}
    assert popularity_scores == {0.0} if not popularity else len(popularity_scores) > 1  # learned, and not one value
    assert (out / f"user-{user}.png").stat().st_size > 0
    page = (out / f"user-{user}.html").read_text()
    words = sum(len(c["words"]) for c in data["clicked"] + data["candidates"])
    assert page.count("<span class='w'") == words
    assert ("of it, popularity" in page) is popularity
    with pytest.raises(SystemExit, match="give --user ID and --data"):
        main(["explain", str(folder), "--user", user])
    # news ids the folder's news.tsv does not know: unknown clicks leave the history, unknown candidates are not
    # ranked; an impression left with no known candidate is one line (it was an IndexError)
    impression = next(i for i in load_mind(mind).impressions if i.user_id == user)
    unknown = set(impression.candidates) - set(impression.history)
    partial = tmp_path / "mind-partial"
    shutil.copytree(mind, partial)
    news = (partial / "news.tsv").read_text().splitlines(keepends=True)
    (partial / "news.tsv").write_text("".join(line for line in news if line.split("\t", 1)[0] not in unknown))
    with pytest.raises(SystemExit) as refused:
        main(["explain", str(folder), "--user", user, "--data", str(partial), "--output-dir", str(tmp_path / "x")])
    assert "none of its" in str(refused.value.code) and "\n" not in str(refused.value.code)


def test_models_explain_cannot_read_are_refused_by_name(classifier):
    from fastformer.interpret import explain
    from fastformer.models.fastformer import FastformerConfig, FastformerForSequenceClassification, FastformerModel

    tokenizer = _tokenizer(classifier)
    small = dict(vocab_size=len(tokenizer), hidden_size=16, num_attention_heads=2, intermediate_size=16)
    softmax = FastformerForSequenceClassification(FastformerConfig(**small, attention_type="softmax"))
    with pytest.raises(ValueError, match="softmax attention"):
        explain(softmax, tokenizer, "a text")
    with pytest.raises(ValueError, match="not FastformerModel"):
        explain(FastformerModel(FastformerConfig(**small)), tokenizer, "a text")


def test_a_refused_explanation_writes_nothing(classifier, tmp_path):
    """`explain` on a run whose layers mix by softmax attention used to leave an empty MODEL_DIR/explanations behind
    its refusal; every input is explained now before the folder is made."""
    from fastformer.models.fastformer import FastformerConfig, FastformerForSequenceClassification

    folder = tmp_path / "softmax-run"
    shutil.copytree(classifier, folder)
    config = FastformerConfig.from_pretrained(str(folder))
    config.attention_type = "softmax"
    FastformerForSequenceClassification(config).save_pretrained(str(folder))  # the run's files, softmax weights
    with pytest.raises(SystemExit) as refused:
        main(["explain", str(folder), "a fine film", "a dull one"])
    assert "softmax attention" in str(refused.value.code) and "\n" not in str(refused.value.code)
    assert not (folder / "explanations").exists()
    out = tmp_path / "pages"
    with pytest.raises(SystemExit, match="--head 9: the model has 2 heads"):
        main(["explain", str(classifier), "a fine film", "--head", "9", "--output-dir", str(out)])
    assert not out.exists()


def test_a_label_or_text_with_markup_cannot_break_the_pages_data(classifier):
    """A label named "<!--<script" (and text holding "</script>") used to leave the page's data unread: inside
    <script>, those sequences change how the browser parses on. The data holds no "<" at all, and reads back."""
    import json

    from fastformer.interpret import View, explain
    from fastformer.interpret.page import explanation_page
    from fastformer.tasks.classification.classifier import load_model

    model, tokenizer, _ = load_model(classifier)
    explanation = explain(model, tokenizer, "A film </script><!--<script> & more", faithfulness_k=0)
    explanation.prediction["label"] = "<!--<script"
    page = explanation_page(explanation, View("pooling"))
    opening = '<script id="explanation-data" type="application/json">'
    data = page.split(opening, 1)[1].split("</script>", 1)[0]
    assert "<" not in data and ">" not in data
    assert json.loads(data)["prediction"]["label"] == "<!--<script"


def test_a_long_text_is_cut_past_what_the_model_reads(classifier):
    """A 1 MB line used to put the whole text in the page, its data and every faithfulness re-scoring (97 s, 1.95 GB,
    a 47 MB page): the explanation keeps UNREAD_WORDS_SHOWN words past the model's input, and predicts the same."""
    from fastformer.interpret import View, explain
    from fastformer.interpret.words import UNREAD_WORDS_SHOWN
    from fastformer.tasks.classification.classifier import load_model

    model, tokenizer, _ = load_model(classifier)
    long_text = " ".join([REVIEW] * 2000)
    explanation = explain(model, tokenizer, long_text, faithfulness_k=2, trials=2)
    assert len(explanation.words) == explanation.read_words + UNREAD_WORDS_SHOWN
    assert explanation.words_not_shown > 10 * UNREAD_WORDS_SHOWN
    assert len(explanation.text) < len(long_text) / 50 and long_text.startswith(explanation.text)
    short = explain(model, tokenizer, explanation.text, faithfulness_k=0)
    assert short.prediction == explanation.prediction  # the model's input did not change
    page = explanation.to_html(View("pooling"))
    assert f"nor the {explanation.words_not_shown} words after them" in page and len(page) < 2_000_000
    # read by its end (a language model's prefix): the start is cut, UNREAD_WORDS_SHOWN unread words kept before it
    tail = split_words(tokenizer, long_text, 40, head=0)
    assert tail.not_shown_after == -1 and tail.words_not_shown > 10 * UNREAD_WORDS_SHOWN
    assert len(tail.words) == tail.read_words + UNREAD_WORDS_SHOWN and long_text.endswith(tail.text)
    assert tail.input_ids == tokenizer(long_text, add_special_tokens=False)["input_ids"][-40:]
    assert split_words(tokenizer, tail.text, 40, head=0).input_ids == tail.input_ids  # the same tokens read


def test_the_page_says_how_many_words_the_model_does_not_know(classifier):
    """Words whose tokens are all [UNK] (an 800-piece vocabulary trained on SST meets Cyrillic) are counted, and the
    page says why they get alike weights."""
    from transformers import AutoModelForSequenceClassification

    from fastformer.interpret import explain

    model = AutoModelForSequenceClassification.from_pretrained(str(classifier)).eval()
    explanation = explain(model, _tokenizer(classifier), "a fine film and фильм хороший", faithfulness_k=0)
    assert explanation.unknown_words == 2 and explanation.to_dict()["unknown_words"] == 2
    assert "2 of the 6 words read are unknown to the model's vocabulary" in explanation.to_html()
    known = explain(model, _tokenizer(classifier), "a fine film", faithfulness_k=0)
    assert known.unknown_words == 0 and "unknown to the model's vocabulary" not in known.to_html()


def test_a_head_and_tail_classifier_is_explained_as_it_reads(tmp_path, capsys):
    """--truncation head+tail reads a long review's first 20 of 40 tokens and its last 20. explain used to read the
    first 40, so the label it showed could differ from predict's: it now reads the same tokens (the same
    probabilities as `predict`), shows the middle unread (and cuts most of it out of a long line, the model's input
    unchanged), and its faithfulness check re-scores texts cut the same way."""
    import re

    from fastformer.interpret import View, explain
    from fastformer.interpret.words import UNREAD_WORDS_SHOWN
    from fastformer.tasks.classification.classifier import Classifier

    out = tmp_path / "ht"
    args = ["train", "--train", str(SST / "sst_train.txt"), "--max-train-examples", "200", "--max-eval-examples",
            "20", "--epochs", "1", "--vocab-size", "800", "--max-length", "40", "--truncation", "head+tail",
            "--output-dir", str(out), *SMALL]  # fmt: skip
    assert main(args) == 0
    classifier = Classifier(out)
    head, tail = "a dull and boring start", "but a wonderful , moving and funny ending"
    text = " ".join([head, *["the plot goes on"] * 30, tail])
    predicted = classifier([text])[0]["probabilities"]
    explained = explain(classifier.model, classifier.tokenizer, text, max_length=40, truncation="head+tail", trials=3)
    assert explained.prediction["probabilities"] == pytest.approx(predicted, abs=6e-5)  # (predict: 4 places)
    head_only = explain(classifier.model, classifier.tokenizer, text, max_length=40, faithfulness_k=0)
    assert head_only.prediction["probabilities"] != pytest.approx(predicted, abs=6e-5)  # what explain showed
    read = explained.read_indices
    assert explained.tokens_read == 40 and explained.skips_middle and not head_only.skips_middle
    assert explained.words[read[0]].text == "a" and explained.words[read[-1]].text == "ending"
    assert not explained.words[len(explained.words) // 2].read  # the middle
    # the top-weighted words cut: the prediction's fall is the classifier's on that text, cut as the run cuts it
    cut = {read[r] for r in np.argsort(-explained.weights(View("pooling")), kind="stable")[:5]}
    pieces, cursor = [], 0
    for i in sorted(cut):
        pieces.append(text[cursor : explained.words[i].start])
        cursor = explained.words[i].end
    after = classifier(["".join(pieces) + text[cursor:]])[0]["probabilities"][explained.prediction["label"]]
    check = explained.faithfulness
    assert check["top_weighted"][0]["drop"] == pytest.approx(check["original"] - after, abs=1e-4)
    page = explained.to_html(View("pooling"))
    assert re.findall(r"data-i='(\d+)'", page) == [str(r) for r in range(len(read))]  # the read words' weights
    assert "from its head and its tail" in page
    # from the command line: the run's head+tail, as predict reads it
    capsys.readouterr()
    assert main(["predict", str(out), text]) == 0
    label = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["label"]
    assert main(["explain", str(out), text, "--output-dir", str(tmp_path / "pages"), "--json", "--top-k", "0"]) == 0
    assert capsys.readouterr().out.split("arg-1: ")[1].split(";")[0] == label
    data = json.loads((tmp_path / "pages" / "arg-1.json").read_text())
    assert data["prediction"]["probabilities"] == explained.prediction["probabilities"]
    # a long line keeps UNREAD_WORDS_SHOWN unread words on each side of what is cut out of its middle
    long_text = " ".join([head, *["the plot goes on"] * 2000, tail])
    cut_out = explain(classifier.model, classifier.tokenizer, long_text, max_length=40, truncation="head+tail",
                      faithfulness_k=2, trials=2)  # fmt: skip
    assert cut_out.words_not_shown > 10 * UNREAD_WORDS_SHOWN
    assert len(cut_out.words) == cut_out.read_words + 2 * UNREAD_WORDS_SHOWN
    assert cut_out.text.startswith(head) and cut_out.text.endswith(tail) and len(cut_out.text) < len(long_text) / 10
    again = explain(classifier.model, classifier.tokenizer, cut_out.text, max_length=40, truncation="head+tail",
                    faithfulness_k=0)  # fmt: skip
    assert again.prediction == cut_out.prediction  # the model's input did not change
    assert cut_out.prediction["probabilities"] == pytest.approx(classifier([long_text])[0]["probabilities"], abs=6e-5)
    page = cut_out.to_html()
    assert f"[&hellip; {cut_out.words_not_shown} words not shown &hellip;]" in page
    assert f"nor the {cut_out.words_not_shown} words in their middle" in page
    with pytest.raises(ValueError, match=r"truncation 'head\+tail' is a classifier's"):
        from fastformer.interpret.explain import NextTokenScorer

        NextTokenScorer(classifier.model, classifier.tokenizer, 40, {}, "head+tail")


def test_a_bert_tokenizers_special_tokens_are_read_as_the_run_read_them(tmp_path):
    """A run with a BERT tokenizer (`--tokenizer`: the shipped student's, [CLS] ... [SEP]) reads each news text and
    each document inside its special tokens; explain read them bare, so a recommender's scores and a summarizer's
    summary were not the ones `evaluate` and `predict` give. Now they are."""
    from fastformer.data.mind import load_mind
    from fastformer.interpret import explain, explain_user
    from fastformer.tasks.news.recommender import NewsTokens, load_model, score_impressions
    from fastformer.tasks.summarize.summarizer import generation_settings, summarize
    from tests.helpers import ROOT

    bert = ROOT / "pretrained" / "fastformer-minilm-l6-distilled"
    mind = tmp_path / "mind"
    assert main(["convert-mindrec", str(MIND / "mindrec20_test.json.gz"), str(mind)]) == 0
    news = tmp_path / "news"
    args = ["train", "news", "--train", str(mind), "--epochs", "1", "--max-train-impressions", "16",
            "--max-eval-impressions", "6", "--batch-size", "16", "--max-length", "12", "--tokenizer", str(bert),
            "--word-vectors", "none", "--output-dir", str(news), *SMALL]  # fmt: skip
    assert main(args) == 0
    model, tokenizer = load_model(news)
    assert tokenizer("a b")["input_ids"][0] == tokenizer.cls_token_id  # the run read [CLS] ... [SEP]
    data = load_mind(mind)
    impression = next(i for i in data.impressions if len(i.history) >= 2)
    explained = explain_user(model, tokenizer, data, impression.user_id, impression.impression_id)
    tokens = NewsTokens(tokenizer, ["title"], model.config.news_max_length)
    tokens.add(data)
    data.impressions = [impression]
    (scores,) = score_impressions(model, data, tokens, model.config.max_history)
    by_news = dict(zip(impression.candidates, scores, strict=True))
    for candidate in explained.candidates:
        assert candidate["score"] == pytest.approx(by_news[candidate["news"].news_id], abs=1e-5)
    summarizer = tmp_path / "summarizer"
    args = ["train", "summarize", "--train", str(PUBMED / "cohan_sample_train.jsonl.gz"), "--split", "8", "2", "2",
            "--max-source-length", "24", "--max-target-length", "8", "--tokenizer", str(bert), "--batch-size", "8",
            "--epochs", "1", "--num-beams", "1", "--output-dir", str(summarizer), *SMALL]  # fmt: skip
    assert main(args) == 0
    from fastformer.tasks.summarize.summarizer import load_model as load_summarizer

    model, tokenizer = load_summarizer(summarizer)
    document = " ".join(["The patients were treated with a new drug for two weeks ."] * 4)
    expected = summarize(model, tokenizer, [document], generation_settings(summarizer))[0]
    explained = explain(model, tokenizer, document, max_length=24, faithfulness_k=0)
    assert explained.prediction["summary"] == expected and explained.tokens_read == 22  # 24 with [CLS] and [SEP]
