"""What a task is: one class. Its class attributes say what the registry and the command line read (its name, help,
settings class, the architectures of its folders, the verbs a trained folder of it offers); its methods are the
parts of a training run that are its own and the commands on a trained folder.

A run (`Task.train`, the skeleton in engine/skeleton.py) calls, in order:

    load_data(cfg, report)             the data (report: what the readers found, saved in metrics.json "data")
    check_start(cfg, data)             refuse a start it cannot make (before the run folder changes)
    tokenizer_texts(cfg, data)         the texts a trained tokenizer learns from (made before the folder changes;
                                       not for a baseline)
    baseline(cfg, data, out, report)   an untrained baseline (TF-IDF, Lead-3) run instead of training, for the
                                       config's MODEL_FREE_ARCHITECTURES only
    build_model(cfg, data, tokenizer)  the model and its metrics: the engine builds `model_class_name` from a preset
                                       or --init-from, with the task's head_fields, model_fields, input_length
    prepare(cfg, data, tokenizer, model, out)  a `Prepared`: datasets, collator, Trainer arguments, counts
                                       (what build_model and prepare refuse still leaves the folder as it was:
                                       the run begins after them)
    evaluate_splits(cfg, model, tokenizer, data, prepared, out)  metrics per split; prediction files written to `out`
    summary(metrics)                   what `fastformer train` prints

The commands on a trained folder (`fastformer evaluate | predict | explain | export | generate`) call the method of
the verb, with the folder, its architecture and the verb's settings (engine/verbs.py), for the verbs in `verbs`;
a verb the task lacks is refused in one line before any of them runs (`tasks.registry.task_for_verb`):

    evaluate:  evaluate_folder(folder, architecture, settings, output) -> metrics, and headline(metrics) (printed);
               a task that writes per-example output writes `evaluation_file` beside `output` (metrics.json)
    predict:   predictor(folder, architecture, settings) -> texts -> one record each (reads_texts), else
               predict_folder(folder, architecture, settings, output) -> what it wrote (over a data folder)
    explain:   explained_model(folder, architecture) -> (model, tokenizer, explain() settings) (reads_texts), else
               explain_folder(folder, architecture, settings) -> an explanation (save_html / save_png / save_json,
               summary())
    export:    export_model(folder, architecture) -> the model to trace (None: nothing to trace), and
               generation_export(model) -> the generate-ready programs or why not ({} where the task has none)
    generate:  generate_texts(folder, prompts, **generate_kwargs) -> the new text of each prompt

Light at import (the standard library and the engine's torch-free modules), so the registry and `fastformer --help`
stay light: a task's methods import torch and transformers when called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from fastformer.engine.folder import model_files_problem
from fastformer.engine.skeleton import Prepared, run_task
from fastformer.engine.start import build_model, check_model_start


class NotARunFolder(ValueError):
    """A folder no command can read (missing, unfinished, damaged, not written by `fastformer train`)."""


class VerbNotSupported(NotARunFolder):
    """A run folder whose task does not do what was asked (predict on a pretraining run, ...)."""


def check_model_files(folder: str | Path) -> None:
    """A damaged model folder is one line naming the file, before anything loads it (`folder.model_files_problem`)."""
    problem = model_files_problem(Path(folder))
    if problem:
        raise NotARunFolder(problem)


class Task:
    """One task: what it is (class attributes) and what it does (methods); see the module docstring."""

    name: ClassVar[str] = ""
    help: ClassVar[str] = ""  # one line in `fastformer train --help`
    config_class: ClassVar[type] = object  # its training settings (engine/settings.py's RunConfig)
    # config.json "architectures" of its folders (of older versions); default: its model class's name
    architectures: ClassVar[tuple[str, ...]] = ()
    # the verbs a trained folder offers besides training: verb -> the settings class of its flags (engine/verbs.py's,
    # or the task's own extending one), None where the command's own flags are all it reads
    verbs: ClassVar[dict[str, type | None]] = {}
    instead: ClassVar[str] = ""  # said when a verb it lacks is asked for (FOLDER: the folder)
    reads_texts: ClassVar[bool] = True  # predict / explain read texts (False: a data folder, --data / --user)
    # where the texts of a JSON Lines / CSV / TSV `--file` are, without --text-field: (the run setting that named the
    # field its texts were read from, the field read where the run set none)
    text_field_default: ClassVar[tuple[str, str]] = ("text_field", "text")
    # its model, which the engine builds (engine/start.py): a class of fastformer.models.fastformer (None: the task
    # builds its own in `build_model`)
    model_class_name: ClassVar[str | None] = None
    evaluation_file: ClassVar[str | None] = None  # what evaluate_folder writes beside metrics.json
    prediction_file: ClassVar[str | None] = None  # what predict_folder writes in the run folder without --output

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.architectures and cls.model_class_name:
            cls.architectures = (cls.model_class_name,)

    @classmethod
    def older_folder_architecture(cls, folder: Path, architecture: str | None) -> str | None:
        """The architecture of a folder an earlier version wrote without a task manifest, when its files say it is
        this task's (`architecture`: what its run_config.json says), else None."""
        return None

    # --- a training run ---
    def train(self, cfg) -> dict[str, Any]:
        """Run the task end to end as `cfg` says; returns the metrics (also in OUTPUT/metrics.json)."""
        return run_task(self, cfg)

    def load_data(self, cfg, report: dict[str, Any]):
        raise NotImplementedError

    def check_start(self, cfg, data) -> None:
        """Refuse a start the run cannot make (an --init-from folder that cannot start its model), before the run
        folder changes."""
        check_model_start(self, cfg, data)

    def head_fields(self, cfg, data, tokenizer=None) -> dict[str, Any]:
        """The config fields of the task's head (labels, decoder, user encoder, ...); `tokenizer` None: for the start
        checks, before the run's tokenizer exists."""
        return {}

    def model_fields(self, cfg) -> dict[str, Any]:
        """The task's own defaults of a fresh model's config (beneath the preset's and --model's)."""
        return {}

    def input_length(self, cfg) -> int | None:
        """The most tokens the run's model reads per input (its positions; what a saved tokenizer truncates to)."""
        return None

    def build_model(self, cfg, data, tokenizer) -> tuple[Any, dict[str, Any]]:
        """(the run's model, its metrics.json entries): the engine's build of `model_class_name` (engine/start.py)."""
        return build_model(self, cfg, data, tokenizer)

    def baseline(self, cfg, data, out: Path, report: dict[str, Any]) -> dict[str, Any]:
        """Train and score a model-free architecture (one of the config's MODEL_FREE_ARCHITECTURES), writing its
        files into `out`; returns its metrics. Called only for those architectures."""
        raise NotImplementedError(f"the {self.name} task has no baseline architecture")

    def tokenizer_texts(self, cfg, data):
        raise NotImplementedError

    def prepare(self, cfg, data, tokenizer, model, out: Path) -> Prepared:
        raise NotImplementedError

    def evaluate_splits(self, cfg, model, tokenizer, data, prepared: Prepared, out: Path) -> dict[str, Any]:
        raise NotImplementedError

    def summary(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return {}

    def describe(self, cfg, data) -> dict[str, Any]:
        """What the data holds, printed before training (examples per split, labels and their counts, ...)."""
        return {}

    # --- the commands on a trained folder (those named in `verbs`) ---
    @classmethod
    def offers(cls) -> str:
        """What a trained folder of this task does besides training, as a refusal says it."""
        return f"it does {', '.join(cls.verbs)}" if cls.verbs else "no other command reads it"

    def refuse(self, verb: str) -> VerbNotSupported:
        """The one-line refusal of a verb this task does not offer."""
        return VerbNotSupported(f"a {self.name} run does not {verb} ({self.offers()})")

    def evaluate_folder(self, folder, architecture: str | None, settings, output: Path) -> dict[str, Any]:
        raise self.refuse("evaluate")

    def headline(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return metrics

    def predictor(self, folder, architecture: str | None, settings):
        raise self.refuse("predict")

    def predict_folder(self, folder, architecture: str | None, settings, output) -> str:
        raise self.refuse("predict")

    def explained_model(self, folder, architecture: str | None):
        raise self.refuse("explain")

    def explain_folder(self, folder, architecture: str | None, settings):
        raise self.refuse("explain")

    def export_model(self, folder, architecture: str | None):
        raise self.refuse("export")

    def generation_export(self, model) -> dict[str, Any]:
        return {}

    def generate_texts(self, folder, prompts: list[str], **generate_kwargs) -> list[str]:
        raise self.refuse("generate")
