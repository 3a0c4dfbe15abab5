"""The news task's torch code (its `Task` class is task.py's): the news tokens, the training rows with negative
sampling, the ranking Trainer, scoring every impression with MIND's official metrics, the leaderboard's prediction
file, and a trained folder loaded to rank a MIND folder.

Training rows: for each clicked candidate of a training impression, the click and K unclicked candidates of the same
impression (drawn anew each epoch, seeded; repeated when the impression has fewer than K, as the authors' NRMS code
does), with the user's last `max_history` clicks; softmax cross-entropy picks the click out of the K + 1. Clicks whose
impression has no unclicked candidate cannot form a row and are counted (`train.clicks_without_negatives`).

Evaluation encodes every news of the split once, then scores each impression from those vectors (user vector .
news vector). With `--popularity` (PP-Rec's popularity-aware score) each candidate also gets a learned score of its
click count in the training impressions; a training row leaves its own impression's click out of the count, so the
model cannot learn "clicked = counted". The counts are saved with the model (news_clicks.tsv) and used for every split
it ranks later: news without a click there count 0.

Candidates naming news that news.tsv lacks cannot be scored: they are ranked last, in candidate order, and counted.
History clicks naming unknown news are left out of the user's history, and counted.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from fastformer.data.mind import MindData, known_history, load_mind
from fastformer.engine.splits import hold_out
from fastformer.metrics.ranking import METRICS, mind_metrics, rank_scores, write_rankings
from fastformer.tasks.news.config import NewsConfig

# ---------------------------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------------------------


class NewsTokens:
    """Token ids of news texts, made once per news id and reused by training rows and evaluation."""

    def __init__(self, tokenizer, fields: list[str], max_length: int):
        self.tokenizer, self.fields, self.max_length = tokenizer, tuple(fields), max_length
        self.ids: dict[str, list[int]] = {}

    def add(self, data: MindData) -> None:
        new = [n for n in data.news.values() if n.news_id not in self.ids]
        if new:
            # the tokenizer's own special tokens: none for a tokenizer a run trains, [CLS] ... [SEP] for a BERT's
            # (a `convert-bert` folder), as that encoder was trained to read
            encoded = self.tokenizer([n.text(self.fields) for n in new], truncation=True, max_length=self.max_length)[
                "input_ids"
            ]
            self.ids.update(zip((n.news_id for n in new), encoded, strict=True))

    def batch(self, news_ids: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(U, L) token ids and attention mask of the given news, padded to the longest (at least 1)."""
        rows = [self.ids[n] for n in news_ids]
        width = max([1] + [len(r) for r in rows])
        pad = self.tokenizer.pad_token_id
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            input_ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, : len(r)] = 1
        return input_ids, mask


def padded_index(rows: list[list[int]]) -> torch.Tensor:
    """(len(rows), longest row, at least 1) long tensor of the rows, padded with -1 (the model's padding index)."""
    out = torch.full((len(rows), max([1] + [len(r) for r in rows])), -1, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out


NEWS_CLICKS_FILE = "news_clicks.tsv"


def training_clicks(data: MindData) -> Counter:
    """How often each news was clicked in the labelled impressions of `data`: the popularity the model scores."""
    return Counter(
        c for imp in data.impressions if imp.labels for c, y in zip(imp.candidates, imp.labels, strict=True) if y == 1
    )


def popularity_prior(data: MindData, clicks: Counter, buckets: int) -> list[float]:
    """Each click-count bucket's log click rate over the labelled candidates of `data` (counts leaving the candidate's
    own click out, as training rows do; add-one smoothed): the popularity scores a model starts from, so that the
    personal score learns what popularity does not already say. (Learned from 0 at the paper's learning rate, 1e-4,
    the scores would move by ~0.01 in a short run: too little to matter.)"""
    from fastformer.models.fastformer.modeling_news import popularity_bucket

    clicked, shown = [1] * buckets, [2] * buckets
    for imp in data.impressions:
        if not imp.labels:
            continue
        known = [(c, y) for c, y in zip(imp.candidates, imp.labels, strict=True) if c in data.news]
        ids = popularity_bucket(torch.tensor([clicks[c] - y for c, y in known], dtype=torch.long), buckets).tolist()
        for bucket, (_, y) in zip(ids, known, strict=True):
            clicked[bucket] += y
            shown[bucket] += 1
    return [float(torch.tensor(c / n).log()) for c, n in zip(clicked, shown, strict=True)]


def write_news_clicks(path: Path, clicks: Mapping[str, int]) -> None:
    """news_id <TAB> clicks, most clicked first."""
    path.write_text("".join(f"{n}\t{c}\n" for n, c in sorted(clicks.items(), key=lambda item: (-item[1], item[0]))))


def read_news_clicks(path: Path) -> dict[str, int]:
    """The counts `write_news_clicks` wrote; a malformed line is an error naming the file and line."""
    clicks = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        parts = line.split("\t")
        if len(parts) != 2 or not parts[1].isdigit():
            raise ValueError(f"{path}:{number}: expected 'news_id<TAB>clicks', got {line!r}")
        clicks[parts[0]] = int(parts[1])
    return clicks


NO_TRAINABLE_CLICK = "no click with an unclicked candidate in its impression to train on"


def trainable_click(data: MindData) -> bool:
    """Whether some impression of `data` has a click beside an unclicked candidate, both of known news (what a
    ClickRows row is): checked before the run begins, as ClickRows is built only after."""
    for impression in data.impressions:
        if impression.labels is None:
            continue
        known = {y for c, y in zip(impression.candidates, impression.labels, strict=True) if c in data.news}
        if known == {0, 1}:
            return True
    return False


class ClickRows(torch.utils.data.Dataset):
    """One row per clicked candidate: history, the click first, then K unclicked candidates of its impression.

    With `clicks` (training_clicks of the same data), each row also gives its candidates' click counts, the row's
    own click left out (the clicked candidate counts one less): at test time, an impression's clicks are not in the
    counts either."""

    def __init__(self, data: MindData, max_history: int, negatives: int, seed: int, clicks: Counter | None = None):
        self.negatives, self.seed, self.epoch, self.clicks = negatives, seed, 0, clicks
        self.rows: list[tuple[list[str], str, list[str]]] = []
        self.clicks_without_negatives = 0
        for impression in data.impressions:
            if impression.labels is None:
                continue
            pairs = [(c, y) for c, y in zip(impression.candidates, impression.labels, strict=True) if c in data.news]
            unclicked = [c for c, y in pairs if y == 0]
            history = known_history(impression, data.news, max_history)
            for clicked in (c for c, y in pairs if y == 1):
                if unclicked:
                    self.rows.append((history, clicked, unclicked))
                else:
                    self.clicks_without_negatives += 1
        if not self.rows:  # (refused before the run began: trainable_click)
            raise ValueError(f"{data.folder}: {NO_TRAINABLE_CLICK}")

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        history, clicked, unclicked = self.rows[i]
        rng = random.Random(f"{self.seed}:{self.epoch}:{i}")  # new negatives each epoch, the same after a resume
        pool = unclicked * (self.negatives // len(unclicked) + 1) if len(unclicked) < self.negatives else unclicked
        row = {"history": history, "candidates": [clicked, *rng.sample(pool, self.negatives)]}
        if self.clicks is not None:  # the unclicked were not clicked in this impression: their counts stand
            row["candidate_clicks"] = [self.clicks[clicked] - 1, *(self.clicks[n] for n in row["candidates"][1:])]
        return row


class ClickCollator:
    """Rows -> a batch that names each distinct news once (news_input_ids) and indexes it (history / candidates)."""

    def __init__(self, tokens: NewsTokens):
        self.tokens = tokens

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        position: dict[str, int] = {}
        for row in rows:
            for n in (*row["history"], *row["candidates"]):
                position.setdefault(n, len(position))
        news_input_ids, news_attention_mask = self.tokens.batch(list(position))
        history_index = padded_index([[position[n] for n in r["history"]] for r in rows])
        candidate_index = padded_index([[position[n] for n in r["candidates"]] for r in rows])  # all 1 + K long
        batch = dict(
            news_input_ids=news_input_ids,
            news_attention_mask=news_attention_mask,
            history_index=history_index,
            candidate_index=candidate_index,
            labels=torch.zeros(len(rows), dtype=torch.long),  # the click is each row's first candidate
        )
        if "candidate_clicks" in rows[0]:
            batch["candidate_clicks"] = torch.tensor([r["candidate_clicks"] for r in rows], dtype=torch.long)
        return batch


# ---------------------------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------------------------


@torch.no_grad()
def encode_all_news(model, tokens: NewsTokens, news_ids: list[str], batch_size: int) -> torch.Tensor:
    """(len(news_ids), hidden) news vectors, each news encoded once; batches of similar length."""
    device = next(model.parameters()).device
    order = sorted(range(len(news_ids)), key=lambda i: len(tokens.ids[news_ids[i]]))
    vectors = torch.empty(len(news_ids), model.config.hidden_size, device=device)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        input_ids, mask = tokens.batch([news_ids[i] for i in chunk])
        vectors[chunk] = model.encode_news(input_ids.to(device), mask.to(device)).float()
    return vectors


@torch.no_grad()
def score_impressions(
    model,
    data: MindData,
    tokens: NewsTokens,
    max_history: int,
    batch_size: int = 256,
    clicks: Mapping[str, int] | None = None,
):
    """Click scores of every candidate of every impression (None-free lists; -inf for news the split lacks).
    `clicks`: the news click counts of a model that scores popularity."""
    from fastformer.models.fastformer.modeling_news import candidate_clicks

    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    referenced = sorted({n for imp in data.impressions for n in (*imp.history, *imp.candidates) if n in data.news})
    row = {n: i for i, n in enumerate(referenced)}
    vectors = encode_all_news(model, tokens, referenced, batch_size).to(next(model.parameters()).dtype)  # (U, hidden)
    scores: list[list[float]] = []
    for start in range(0, len(data.impressions), batch_size):
        chunk = data.impressions[start : start + batch_size]
        history_index = padded_index([[row[n] for n in known_history(imp, data.news, max_history)] for imp in chunk])
        candidate_index = padded_index([[row.get(n, -1) for n in imp.candidates] for imp in chunk])
        counts = candidate_clicks(model, [imp.candidates for imp in chunk], clicks)
        logits = model(
            news_vectors=vectors,
            history_index=history_index.to(device),
            candidate_index=candidate_index.to(device),
            candidate_clicks=None if counts is None else counts.to(device),
            return_dict=True,
        ).logits.float()
        known = (candidate_index >= 0).to(device)
        logits = logits.masked_fill(~known, float("-inf")).cpu()
        scores.extend(logits[i, : len(imp.candidates)].tolist() for i, imp in enumerate(chunk))
    model.train(was_training)
    return scores


def evaluate_split(model, data: MindData, tokens: NewsTokens, max_history: int, **scoring):
    """(metrics, ranks): MIND's metrics over the labelled impressions, and each impression's 1-based ranks.
    `scoring`: score_impressions' batch_size and clicks."""
    start = time.perf_counter()
    scores = score_impressions(model, data, tokens, max_history, **scoring)
    ranks = [rank_scores(s) for s in scores]
    metrics = mind_metrics([imp.labels for imp in data.impressions], ranks)
    metrics["unscorable_candidates"] = sum(c not in data.news for imp in data.impressions for c in imp.candidates)
    metrics["seconds"] = round(time.perf_counter() - start, 2)
    return metrics, ranks


# ---------------------------------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------------------------------


def load_splits(cfg: NewsConfig) -> dict[str, MindData]:
    splits = {"train": load_mind(cfg.train, strict=cfg.strict)}
    if cfg.validation:
        splits["validation"] = load_mind(cfg.validation, strict=cfg.strict)
    else:  # a seeded hold-out of the training impressions, reading the same news
        train = splits["train"]
        held, rest = hold_out(train.impressions, cfg.validation_fraction, cfg.seed)
        splits["validation"] = MindData(train.news, held, train.report, f"{train.folder} (held out)")
        splits["train"] = MindData(train.news, rest, train.report, train.folder)
    if cfg.test:
        splits["test"] = load_mind(cfg.test, strict=cfg.strict)
    if cfg.max_train_impressions:
        splits["train"].impressions = splits["train"].impressions[: cfg.max_train_impressions]
    if cfg.max_eval_impressions:
        for name in ("validation", "test"):
            if name in splits:
                splits[name].impressions = splits[name].impressions[: cfg.max_eval_impressions]
    if not any(imp.labels and 0 < sum(imp.labels) < len(imp.labels) for imp in splits["validation"].impressions):
        raise ValueError(
            f"{splits['validation'].folder}: no validation impression has both a click and a non-click, so no AUC "
            "picks the best epoch; give a --validation folder or a larger --validation-fraction"
        )
    return splits


def ranking_trainer(cfg: NewsConfig, tokens: NewsTokens, rows: ClickRows, validation: MindData, clicks=None):
    """(Trainer subclass, callbacks): evaluation by MIND's metrics over the validation impressions, and new negatives
    each epoch."""
    from transformers import Trainer, TrainerCallback

    class NextEpochNegatives(TrainerCallback):
        def on_epoch_begin(self, args, state, control, **kwargs):
            rows.epoch = int(state.epoch or 0)

    class RankingTrainer(Trainer):
        """Evaluation = MIND's metrics over the validation impressions (not a loss over sampled rows)."""

        def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval") -> dict[str, float]:
            from fastformer.engine.training import own_forward

            with own_forward(self.model) as model:  # float32 as the run's end scores (not --bf16's autocast)
                metrics, _ = evaluate_split(
                    model, validation, tokens, cfg.max_history, batch_size=cfg.eval_batch_size, clicks=clicks
                )
            logged = {f"{metric_key_prefix}_{k}": float(metrics[k]) for k in METRICS}
            self.log(logged)
            self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, logged)
            return logged

    return RankingTrainer, [NextEpochNegatives()]


def check_news_teacher(cfg: NewsConfig, tokenizer) -> None:
    """A --teacher that reads what the student reads: a trained recommender with the run's vocabulary, positions for
    --max-length, news fields and popularity scoring; refused in one line (before anything is written)."""
    from fastformer.engine.teacher import TeacherError, check_hidden_teaching, teacher_folder_config

    config = teacher_folder_config(cfg.teacher, tokenizer, "FastformerForNewsRecommendation", cfg.max_length)
    check_hidden_teaching(cfg, config)
    theirs = list(getattr(config, "news_fields", None) or ["title"])
    if theirs != list(cfg.news_fields):
        ours = ",".join(cfg.news_fields)
        raise TeacherError(f"--teacher {cfg.teacher}: it reads {','.join(theirs)}, this run --news-fields {ours}")
    if bool(getattr(config, "popularity_buckets", 0)) != bool(cfg.popularity):
        says = (
            "does not score popularity and this run does"
            if cfg.popularity
            else "scores popularity and this run does not"
        )
        raise TeacherError(f"--teacher {cfg.teacher}: it {says} (--popularity)")


def news_text_states(outputs, inputs: dict):
    """--distill-hidden: the news encoder's hidden states over the batch's titles (embeddings' output first) and its
    (U, L) mask of real tokens (the user encoder reads news vectors, not text: not compared)."""
    return outputs.news_hidden_states, inputs["news_attention_mask"]


def load_news_teacher(folder: str | Path):
    """The trained recommender at `folder` (checked by `check_news_teacher`), frozen in eval mode."""
    from fastformer.models.fastformer import FastformerForNewsRecommendation

    return FastformerForNewsRecommendation.from_pretrained(str(folder)).eval().requires_grad_(False)


def news_head_fields(cfg: NewsConfig) -> dict[str, Any]:
    """The recommender's own config fields (beside the news encoder's)."""
    return dict(
        max_history=cfg.max_history,
        news_fields=list(cfg.news_fields),  # kept in config.json, so evaluate / predict read the same text
        news_max_length=cfg.max_length,  # and as much of it (the positions may be more: an --init-from encoder's)
        popularity_buckets=8 if cfg.popularity else 0,  # up to 127+ clicks; --model popularity_buckets=N to change
    )


# ---------------------------------------------------------------------------------------------------------------
# trained folders
# ---------------------------------------------------------------------------------------------------------------


def load_model(model_dir: str | Path):
    """(model, tokenizer) of a folder written by `fastformer train news`; its config's `news_max_length` says how many
    tokens of each news text the run read (its --max-length)."""
    from transformers import AutoTokenizer

    from fastformer.engine.folder import run_settings
    from fastformer.models.fastformer import FastformerForNewsRecommendation

    model = FastformerForNewsRecommendation.from_pretrained(str(model_dir)).eval()
    if getattr(model.config, "news_max_length", None) is None:  # a folder of an earlier version: its run's setting
        model.config.news_max_length = run_settings(model_dir).get("max_length") or model.config.max_position_embeddings
    return model, AutoTokenizer.from_pretrained(str(model_dir))


def load_news_clicks(model, model_dir: str | Path) -> dict[str, int] | None:
    """The click counts saved beside a model that scores popularity (None for one that does not)."""
    if not getattr(model.config, "popularity_buckets", 0):
        return None
    path = Path(model_dir) / NEWS_CLICKS_FILE
    if not path.is_file():
        raise ValueError(f"{model_dir}: the model scores popularity, but its counts {NEWS_CLICKS_FILE} are missing")
    return read_news_clicks(path)


def rank_split(model_dir: str | Path, data_path: str | Path, output: str | Path | None = None, strict: bool = False):
    """Rank every impression of a MIND split with a trained folder; write the leaderboard's prediction file to
    `output` when given. Returns (metrics over the labelled impressions, the data's MindReport)."""
    model, tokenizer = load_model(model_dir)
    data = load_mind(data_path, strict=strict)
    fields = getattr(model.config, "news_fields", None) or ["title"]
    tokens = NewsTokens(tokenizer, fields, model.config.news_max_length)
    tokens.add(data)
    clicks = load_news_clicks(model, model_dir)
    metrics, ranks = evaluate_split(model, data, tokens, model.config.max_history, clicks=clicks)
    if output:
        write_rankings(output, [i.impression_id for i in data.impressions], ranks)
    return metrics, data.report
