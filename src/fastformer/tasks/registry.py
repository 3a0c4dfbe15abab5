"""The one table of tasks: name -> its config, its module, and how to recognise its folders. `fastformer train`,
`evaluate` and `predict` all read it, so every task's folder trains, evaluates and predicts. Imports the stdlib only
(the task modules are imported when a task is used)."""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from fastformer.engine.verbs import TextExplanationSettings, TextPredictionSettings
from fastformer.tasks.classification.config import ClassificationConfig, ClassificationEvaluation
from fastformer.tasks.distill.config import DistillationConfig
from fastformer.tasks.lm.config import LanguageModelEvaluation, LanguageModelingConfig, LanguageModelPrediction
from fastformer.tasks.news.config import NewsConfig, NewsEvaluation, NewsExplanation, NewsPrediction
from fastformer.tasks.pretrain.config import PretrainingConfig
from fastformer.tasks.summarize.config import SummarizationConfig, SummarizationEvaluation


@dataclass(frozen=True)
class TaskEntry:
    name: str
    module: str  # defines TASK (an engine.skeleton.Task), train(cfg) and the functions of its verbs
    config_class: type
    help: str
    architectures: tuple[str, ...]  # config.json "architectures" of its trained folders (folders of older versions)
    # what a trained folder of it can do besides being trained (VERBS): verb -> the settings class of its flags
    # (engine/verbs.py's, or the task's own extending one), None where the command's own flags are all it reads
    verbs: dict[str, type | None] = field(default_factory=dict)
    instead: str = ""  # said when a verb it lacks is asked for

    def load(self):
        return importlib.import_module(self.module)


TASKS = {
    "classification": TaskEntry(
        "classification",
        "fastformer.tasks.classification.task",
        ClassificationConfig,
        "text classification (default; with no --train, the built-in generated task)",
        ("FastformerForSequenceClassification",),
        dict(
            evaluate=ClassificationEvaluation,
            predict=TextPredictionSettings,
            explain=TextExplanationSettings,
            export=None,
        ),
    ),
    "lm": TaskEntry(
        "lm",
        "fastformer.tasks.lm.task",
        LanguageModelingConfig,
        "causal language model (Fastformer or the GPT-2 baseline of the same size)",
        ("FastformerForCausalLM", "GPT2LMHeadModel"),
        dict(
            evaluate=LanguageModelEvaluation,
            predict=LanguageModelPrediction,
            explain=TextExplanationSettings,
            export=None,
            generate=None,
        ),
    ),
    "pretrain": TaskEntry(
        "pretrain",
        "fastformer.tasks.pretrain.task",
        PretrainingConfig,
        "self-supervised pretraining (masked LM or ELECTRA) of an encoder that `train ... --init-from` fine-tunes",
        ("FastformerForMaskedLM", "FastformerForReplacedTokenDetection"),
        {},
        "fine-tune it: `fastformer train ... --init-from FOLDER` (or load it with from_pretrained)",
    ),
    "distill": TaskEntry(
        "distill",
        "fastformer.tasks.distill.task",
        DistillationConfig,
        "distillation of a teacher Transformer (BERT) into a Fastformer student of its size (`convert-bert`)",
        ("FastformerModel",),
        {},
        "fine-tune it: `fastformer train ... --init-from FOLDER` (or load it with AutoModel.from_pretrained)",
    ),
    "news": TaskEntry(
        "news",
        "fastformer.tasks.news.task",
        NewsConfig,
        "news recommendation on MIND (the hierarchical recommender; NRMS-style softmax baseline)",
        ("FastformerForNewsRecommendation",),
        dict(evaluate=NewsEvaluation, predict=NewsPrediction, explain=NewsExplanation),
    ),
    "summarize": TaskEntry(
        "summarize",
        "fastformer.tasks.summarize.task",
        SummarizationConfig,
        "abstractive summarization (encoder-decoder; softmax encoder and Lead-3 baselines)",
        ("FastformerForConditionalGeneration",),
        dict(
            evaluate=SummarizationEvaluation,
            predict=TextPredictionSettings,
            explain=TextExplanationSettings,
            export=None,
        ),
    ),
}


VERBS = ("evaluate", "predict", "explain", "export", "generate")  # the CLI's verbs on a trained folder


class NotARunFolder(ValueError):
    pass


class VerbNotSupported(NotARunFolder):
    """A run folder whose task does not do what was asked (predict on a pretraining run, ...)."""


def task_for_verb(path: str | Path, verb: str) -> tuple[str, str | None]:
    """task_of_folder(path), refused in one line when the folder's task does not `verb` (a task declares its verbs
    in TASKS)."""
    task, architecture = task_of_folder(path)
    entry = TASKS.get(task)
    if entry is not None and verb not in entry.verbs:
        does = f"it does {', '.join(entry.verbs)}" if entry.verbs else "no other command reads it"
        hint = f"; {entry.instead.replace('FOLDER', str(path))}" if entry.instead else ""
        raise VerbNotSupported(f"{path}: holds a {task} run, which does not {verb} ({does}){hint}")
    return task, architecture


def check_model_files(folder: Path) -> None:
    """A damaged folder is one line naming the file, before anything loads it (`engine.folder.model_files_problem`)."""
    from fastformer.engine.folder import model_files_problem

    problem = model_files_problem(Path(folder))
    if problem:
        raise NotARunFolder(problem)


def task_of_folder(path: str | Path) -> tuple[str, str | None]:
    """(task name, architecture or None) of a folder written by `fastformer train`: what its manifest or marker says,
    else (folders of earlier versions) its config.json's architectures or a TF-IDF model."""
    from fastformer.engine.folder import RunFolderError, folder_task

    folder = Path(path)
    if not folder.is_dir():
        raise NotARunFolder(f"{folder}: no such folder")
    run_config = folder / "run_config.json"
    architecture = None
    if run_config.is_file():
        try:
            architecture = json.loads(run_config.read_text()).get("architecture")
        except json.JSONDecodeError:
            pass
    try:
        task = folder_task(folder)
    except RunFolderError as error:  # an unfinished run
        raise NotARunFolder(str(error)) from None
    check_model_files(folder)
    if task in TASKS:
        return task, architecture
    if (folder / "tfidf.json").is_file() or (folder / "model.joblib").is_file():
        return "classification", "tfidf"
    if (folder / "nbsvm.json").is_file():
        return "classification", "nbsvm"
    if architecture == "lead3":  # a Lead-3 folder of an earlier version: metrics and summaries, no model
        return "summarize", "lead3"
    config = folder / "config.json"
    if config.is_file():
        names = json.loads(config.read_text()).get("architectures") or []
        for entry in TASKS.values():
            if any(n in entry.architectures for n in names):
                return entry.name, architecture
    raise NotARunFolder(
        f"{folder}: not a folder written by `fastformer train` (no run_complete.json, config.json or a TF-IDF model)"
    )
