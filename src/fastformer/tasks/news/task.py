"""News recommendation as one `Task` class: MIND impressions, the hierarchical Fastformer recommender (news encoder
+ user encoder, optional popularity), AUC / MRR / nDCG as MIND's scorer, the leaderboard's prediction file; and the
commands on a trained folder (evaluate, predict and explain over a MIND folder). The news tokens, click rows,
scoring and loading of a trained folder are recommender.py's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from fastformer.data.mind import load_mind
from fastformer.engine.skeleton import Prepared
from fastformer.engine.task import Task
from fastformer.tasks.news.config import NewsConfig, NewsEvaluation, NewsExplanation, NewsPrediction


class NewsTask(Task):
    """News recommendation on MIND: the hierarchical Fastformer recommender (or its NRMS-style softmax baseline)."""

    name = "news"
    help = "news recommendation on MIND (the hierarchical recommender; NRMS-style softmax baseline)"
    config_class = NewsConfig
    verbs: ClassVar[dict[str, type | None]] = dict(
        evaluate=NewsEvaluation, predict=NewsPrediction, explain=NewsExplanation
    )
    reads_texts = False  # predict and explain read a MIND folder (--data, --user)
    model_class_name = "FastformerForNewsRecommendation"
    evaluation_file = "prediction.txt"  # the leaderboard's format, beside metrics.json
    prediction_file = "prediction.txt"  # predict_folder's output inside the run folder when none is given

    def load_data(self, cfg: NewsConfig, report: dict[str, Any]):
        from fastformer.tasks.news.recommender import load_splits

        splits = load_splits(cfg)
        report.update({name: dict(folder=d.folder, **d.report.as_dict()) for name, d in splits.items()})
        if cfg.teacher:  # task distillation: a teacher that does not fit is refused before anything is written
            from fastformer.engine.inputs import make_tokenizer
            from fastformer.tasks.news.recommender import check_news_teacher

            check_news_teacher(cfg, make_tokenizer(cfg, ())[0])
        return splits

    def check_start(self, cfg: NewsConfig, splits) -> None:
        from fastformer.tasks.news.recommender import NO_TRAINABLE_CLICK, trainable_click

        if not trainable_click(splits["train"]):  # (ClickRows would say so only after the run began)
            raise ValueError(f"{splits['train'].folder}: {NO_TRAINABLE_CLICK}")
        super().check_start(cfg, splits)

    def head_fields(self, cfg: NewsConfig, data, tokenizer=None) -> dict[str, Any]:
        # with --init-from, the pretrained encoder reads the news; the user encoder and the pooling start fresh
        from fastformer.tasks.news.recommender import news_head_fields

        return news_head_fields(cfg)

    def model_fields(self, cfg: NewsConfig) -> dict[str, Any]:
        return dict(num_hidden_layers=1)  # the paper's MIND recommender: one layer in each encoder

    def input_length(self, cfg: NewsConfig) -> int:
        return cfg.max_length

    def tokenizer_texts(self, cfg: NewsConfig, splits):
        return (n.text(cfg.news_fields) for n in splits["train"].news.values())

    def prepare(self, cfg: NewsConfig, splits, tokenizer, model, out: Path) -> Prepared:
        import torch

        from fastformer.engine.teacher import teaching_trainer
        from fastformer.tasks.news.recommender import (
            ClickCollator,
            ClickRows,
            NewsTokens,
            load_news_teacher,
            news_text_states,
            popularity_prior,
            ranking_trainer,
            training_clicks,
        )

        tokens = NewsTokens(tokenizer, cfg.news_fields, cfg.max_length)
        for data in splits.values():
            tokens.add(data)
        config = model.config
        clicks = training_clicks(splits["train"]) if config.popularity_buckets else None
        rows = ClickRows(splits["train"], cfg.max_history, cfg.negatives, cfg.seed, clicks)
        train_counts = dict(
            impressions=len(splits["train"].impressions),
            rows=len(rows),
            clicks_without_negatives=rows.clicks_without_negatives,
        )
        if clicks is not None:
            prior = popularity_prior(splits["train"], clicks, config.popularity_buckets)
            with torch.no_grad():
                model.popularity.weight[:, 0] = torch.tensor(prior)
            train_counts.update(
                popularity_clicks=sum(clicks.values()),
                popularity_news=len(clicks),
                popularity_prior=[round(p, 4) for p in prior],
            )
        trainer_class, callbacks = ranking_trainer(cfg, tokens, rows, splits["validation"], clicks)
        # --teacher: its click distribution over each row's candidates, beside the click
        teacher = load_news_teacher(cfg.teacher) if cfg.teacher else None
        trainer_class, teaching = teaching_trainer(cfg, teacher, trainer_class, text_states=news_text_states)
        return Prepared(
            train_dataset=rows,
            eval_dataset=splits["validation"].impressions,  # read by RankingTrainer.evaluate, not the Trainer's loop
            data_collator=ClickCollator(tokens),
            arguments=dict(
                eval_strategy="epoch",
                save_strategy="epoch",
                metric_for_best_model=cfg.metric,
                greater_is_better=True,
                remove_unused_columns=False,  # rows hold news ids for the collator, not the model's inputs
            ),
            train_counts=train_counts,
            plot={"validation AUC": "eval_auc", "validation nDCG@10": "eval_ndcg@10"},
            trainer_class=trainer_class,
            trainer_kwargs=dict(callbacks=callbacks, **teaching),
            state=dict(tokens=tokens, rows=rows, clicks=clicks),
        )

    def evaluate_splits(self, cfg: NewsConfig, model, tokenizer, splits, prepared: Prepared, out: Path):
        from fastformer.metrics.ranking import write_rankings
        from fastformer.tasks.news.recommender import NEWS_CLICKS_FILE, evaluate_split, write_news_clicks

        metrics = {}
        clicks = prepared.state["clicks"]
        if clicks is not None:  # saved with the model: evaluate / predict / explain score popularity with them
            write_news_clicks(out / NEWS_CLICKS_FILE, clicks)
        for name in ("validation", "test"):
            if name in splits:
                metrics[name], ranks = evaluate_split(
                    model,
                    splits[name],
                    prepared.state["tokens"],
                    cfg.max_history,
                    batch_size=cfg.eval_batch_size,
                    clicks=clicks,
                )
                write_rankings(
                    out / f"prediction_{name}.txt", [i.impression_id for i in splits[name].impressions], ranks
                )
        return metrics

    def summary(self, metrics: dict[str, Any]) -> dict[str, Any]:
        keys = ("auc", "mrr", "ndcg@5", "ndcg@10", "impressions")
        return {n: {k: metrics[n][k] for k in keys} for n in ("validation", "test") if n in metrics}

    # --- the commands on a trained folder ---

    def evaluate_folder(
        self, model_dir: str | Path, architecture: str | None, settings, output: Path
    ) -> dict[str, Any]:
        """AUC, MRR, nDCG@5 and nDCG@10 (as MIND's official scorer) over a MIND folder's labelled impressions, its
        rankings to `evaluation_file` beside `output` (metrics.json); what the data held (and skipped) under
        "data"."""
        from fastformer.tasks.news.recommender import rank_split

        rankings = Path(output).with_name(self.evaluation_file)
        metrics, report = rank_split(model_dir, settings.data, output=rankings)
        if report.summary():
            print(f"{settings.data}:\n{report.summary()}")
        return dict(**metrics, data=report.as_dict())

    def headline(self, metrics: dict[str, Any]) -> dict[str, Any]:
        shown = ("impressions", "auc", "mrr", "ndcg@5", "ndcg@10", "single_class", "unlabelled")
        return {k: metrics[k] for k in shown if k in metrics}

    def predict_folder(self, model_dir: str | Path, architecture: str | None, settings, output: str | Path) -> str:
        """Rank the candidates of every impression of a MIND folder (labels not needed) into the leaderboard's
        prediction file (`impression_id [rank1,rank2,...]`, 1-based) at `output`; returns what was done, in a line
        or two."""
        from fastformer.tasks.news.recommender import rank_split

        if not settings.data:
            raise ValueError("a news recommender ranks a MIND folder: give --data")
        _, report = rank_split(model_dir, settings.data, output=output)
        return f"{report.impressions} impressions ranked -> {output}" + (
            f"\n{report.summary()}" if report.summary() else ""
        )

    def explain_folder(self, model_dir: str | Path, architecture: str | None, settings):
        """One user's impression explained: which clicked news made the user vector, each one's share of every
        candidate's score, and the title words behind each news vector (fastformer.interpret.news)."""
        from fastformer.interpret.news import explain_user
        from fastformer.tasks.news.recommender import load_model, load_news_clicks

        model, tokenizer = load_model(model_dir)
        clicks = load_news_clicks(model, model_dir)
        return explain_user(model, tokenizer, load_mind(settings.data), settings.user, settings.impression, clicks)
