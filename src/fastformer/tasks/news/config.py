"""The settings of a news-recommendation run (`fastformer train news`). Imports the stdlib only."""

from __future__ import annotations

from dataclasses import dataclass

from fastformer.engine.inputs import TeacherSettings, WordInputSettings
from fastformer.engine.settings import RunConfig, SettingError, redefault, setting
from fastformer.engine.verbs import EvaluationSettings, ExplanationSettings, PredictionSettings
from fastformer.presets import MIXERS

RANKING_METRICS = ("auc", "mrr", "ndcg@5", "ndcg@10")  # fastformer.metrics.ranking.METRICS


@dataclass
class NewsConfig(TeacherSettings):
    """News recommendation on MIND (`fastformer train news`); saved as run_config.json beside the model."""

    train: str | None = setting(
        None,
        "a MIND folder (news.tsv + behaviors.tsv) or a behaviors.tsv with news.tsv beside it",
        paths="file-or-folder",
    )
    validation: str | None = setting(
        None,
        "validation MIND folder; default: hold out --validation-fraction of the training impressions",
        paths="file-or-folder",
    )
    test: str | None = setting(None, "test MIND folder", paths="file-or-folder", shapes_weights=False)
    validation_fraction: float = setting(0.1, "hold-out fraction of the training impressions", above=0, below=1)
    max_train_impressions: int | None = setting(None, "use only the first N training impressions", minimum=1)
    max_eval_impressions: int | None = setting(None, "use only the first N validation / test impressions", minimum=1)
    news_fields: list[str] = setting(
        factory=lambda: ["title"],
        help="news fields the encoder reads, comma-separated: title, abstract, category, subcategory",
        choices=("title", "abstract", "category", "subcategory"),
    )
    max_length: int = setting(48, "tokens per news text (the paper: titles of up to 48 tokens)", minimum=1)
    max_history: int = setting(50, "most recent clicks the user encoder reads", minimum=0)
    negatives: int = setting(4, "unclicked candidates per click (K)", minimum=1)
    popularity: bool = setting(
        False,
        "add a learned score of each candidate's popularity (its clicks in the training impressions) to the personal "
        "score, as PP-Rec does (model field popularity_buckets=8; the counts are saved as news_clicks.tsv)",
    )
    architecture: str = setting("fastformer", "fastformer or softmax (NRMS-style encoders)", choices=MIXERS)
    # Word-level titles with GloVe beat WordPiece by 2.8 AUC over 3 seeds on MIND (docs/RESULTS.md, "News
    # recommendation"), so news takes them whenever the package is there; classification keeps WordPiece.
    word_vectors: str | None = redefault(
        WordInputSettings,
        "word_vectors",
        "auto",
        help=WordInputSettings.__dataclass_fields__["word_vectors"].metadata["help"]
        + "; auto: glove-6b-50d when installed, else none (WordPiece, random embeddings)",
    )
    learning_rate: float = redefault(RunConfig, "learning_rate", 1e-4)
    scheduler: str = redefault(RunConfig, "scheduler", "constant")
    bf16: bool = setting(
        False,
        "bfloat16 autocast on CPU for training, where the CPU has bfloat16 dot products (AVX512_BF16 or AMX on x86; "
        "on a GPU with bfloat16 it is "
        "always on); evaluation encodes each news "
        "once and stays float32; for a MiniLM-size --init-from encoder",
        fingerprint_at_default=False,
    )
    metric: str = setting("auc", "validation metric that picks the best checkpoint", choices=RANKING_METRICS)
    eval_batch_size: int = setting(256, "impressions scored per batch", minimum=1, shapes_weights=False)
    strict: bool = setting(False, "stop at the first malformed MIND line instead of counting it")
    output_dir: str = redefault(RunConfig, "output_dir", "runs/news")

    def __post_init__(self) -> None:
        super().__post_init__()
        # comma-separated, space-separated (several flag values) or a list
        items = [self.news_fields] if isinstance(self.news_fields, str) else self.news_fields
        self.news_fields = [f.strip() for item in items for f in item.split(",") if f.strip()]

    def check(self) -> None:
        super().check()
        if self.train is None:
            raise SettingError("train", "news recommendation needs a MIND folder with news.tsv and behaviors.tsv")
        if not self.news_fields:
            raise SettingError("news_fields", "name at least one field")


@dataclass
class NewsEvaluation(EvaluationSettings):
    """`fastformer evaluate` on a recommender's folder: a MIND folder says everything else."""

    data: str | None = redefault(EvaluationSettings, "data", None, help="a MIND folder or behaviors.tsv")


@dataclass
class NewsPrediction(PredictionSettings):
    """`fastformer predict` on a recommender's folder: every impression of a MIND folder ranked."""

    data: str | None = setting(None, "a MIND folder or behaviors.tsv (labels not needed) to rank")


@dataclass
class NewsExplanation(ExplanationSettings):
    """`fastformer explain` on a recommender's folder: one user's impression."""

    user: str | None = setting(None, "the user whose ranking to explain")
    impression: str | None = setting(None, "which of the user's impressions (default: the first)")
    data: str | None = setting(None, "a MIND folder or behaviors.tsv with the user's impressions")
