"""What the commands on a trained folder ask of its task: each verb's settings, one dataclass whose fields are its
flags (the CLI derives them, as `train`'s from the run configs), handed to the folder's task module with the folder
and its architecture, so the task answers without knowing argparse. So `fastformer evaluate | predict | explain |
export | generate` name no task: a task that declares a verb in `tasks.registry.TASKS` provides its functions
(tests/cli/test_cli.py checks both ways):

- evaluate: `evaluate_folder(model_dir, architecture, settings: EvaluationSettings, output) -> dict` (the metrics;
  a task that writes per-example output writes it to `EVALUATION_FILE` beside `output`, the metrics.json path),
  `headline(metrics) -> dict` (what the command prints), and `EVALUATION_FIELDS`, the settings it reads (a flag it
  does not read is refused, never ignored);
- predict: `predictor(model_dir, architecture, settings: PredictionSettings)`, a function from a list of texts to one
  record each, or, for a task that predicts over a data folder instead of texts, `predict_folder(model_dir,
  architecture, settings, output) -> str` (what it wrote);
- explain: `explained_model(model_dir, architecture) -> (model, tokenizer, generate settings)` for a task explained
  per text, or `explain_folder(model_dir, architecture, settings: ExplanationSettings)` (an explanation with
  `save_html` / `save_png` / `save_json` and a `summary()` line) for one explained per user of a data folder;
- export: `export_model(folder, architecture)` and, with a fixed-size decoding state, `generation_export(model)`;
- generate: `generate_texts(folder, prompts, **generate_kwargs)`, the new text of each prompt.

Imports the stdlib only (and the settings machinery, which does too).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from fastformer.engine.settings import SettingError, Settings, setting

VERB_FUNCTIONS = {
    "evaluate": (("evaluate_folder", "headline", "EVALUATION_FIELDS"),),
    "predict": (("predictor",), ("predict_folder",)),
    "explain": (("explained_model",), ("explain_folder",)),
    "export": (("export_model",),),
    "generate": (("generate_texts",),),
}  # verb -> the alternative sets of names a task module provides for it


def provides(module, verb: str) -> bool:
    """Whether a task module provides every name of one of the verb's alternatives."""
    return any(all(hasattr(module, name) for name in names) for names in VERB_FUNCTIONS.get(verb, ((),)))


@dataclass
class EvaluationSettings(Settings):
    """`fastformer evaluate`'s flags, one field each (the command line is derived from them, as `train`'s from the
    run configs). None: the run's own setting, or the task's default. A task reads some of them (its
    EVALUATION_FIELDS); one it does not read is refused."""

    data: str | None = setting(
        None, "labelled data: a file in the training formats; lm: documents; news: a MIND folder or behaviors.tsv"
    )
    text_field: str | None = setting(None, "text column / JSON key (default: the run's own, from run_config.json)")
    label_field: str | None = setting(None, "label column / JSON key (default: the run's own)")
    source_field: str | None = setting(None, "summarize: document column / key (default: as training reads it)")
    target_field: str | None = setting(None, "summarize: summary column / key (default: as training reads it)")
    format: str | None = setting(None, "file format (default: from the file name; the task's training formats)")
    where: dict[str, str] | None = setting(None, "JSON Lines filter (--where KEY=VALUE)", flag=False)
    binary_threshold: float | None = setting(None, "numeric labels to pos / neg (default: the run's own)")
    max_examples: int | None = setting(None, "only the first N examples / pairs / documents", minimum=1)
    max_length: int | None = setting(None, "tokens read per text (default: the model's positions)", minimum=1)
    num_beams: int | None = setting(None, "summarize: beam size (default: the run's)", minimum=1)
    output: str | None = setting(None, "metrics JSON path (default: MODEL_DIR/evaluations/<data name>/metrics.json)")
    overwrite: bool = setting(False, "replace an existing --output (and the file the task writes beside it)")

    def check(self) -> None:
        if self.data is None:
            raise SettingError("data", "required: the labelled data to evaluate on")
        super().check()

    def given(self) -> dict[str, Any]:
        """The data and model settings that were set (what a task must read, or refuse)."""
        fixed = ("data", "output", "overwrite")
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in fixed and getattr(self, f.name) is not None
        }


@dataclass
class ExplanationSettings(Settings):
    """`fastformer explain`'s flags (besides the folder and the texts), one field each."""

    file: str | None = setting(None, "a file with one text per line (blank lines are skipped)")
    output_dir: str | None = setting(None, "where the pages go (default: MODEL_DIR/explanations)")
    png: bool = setting(False, "also write a static picture (matplotlib) per input")
    json: bool = setting(False, "also write the weights and prediction as JSON")
    weights: str | None = setting(
        None,
        "the weights the page opens on (default: pooling where the model pools, else alpha)",
        choices=("pooling", "alpha", "beta"),
    )
    layer: int | None = setting(None, "layer of alpha / beta, 1-based (default: the last)", minimum=1)
    head: int | None = setting(None, "one head, 1-based (default: the mean of the heads)", minimum=1)
    max_length: int | None = setting(None, "tokens read (default: the model's maximum)", minimum=1)
    top_k: int = setting(5, "faithfulness: words cut, the top-weighted against random ones (0: no check)", minimum=0)
    trials: int = setting(20, "faithfulness: random draws", minimum=1)
    page_words: int = setting(400, "words per page of a long text", minimum=1)
    user: str | None = setting(None, "news: the user whose ranking to explain")
    impression: str | None = setting(None, "news: which of the user's impressions (default: the first)")
    data: str | None = setting(None, "news: a MIND folder or behaviors.tsv with the user's impressions")

    def check(self) -> None:
        super().check()
        if self.weights == "pooling" and (self.layer or self.head):
            name = "layer" if self.layer else "head"
            raise SettingError(name, "chooses alpha / beta weights; pooling weights have neither layer nor head")


@dataclass
class PredictionSettings(Settings):
    """`fastformer predict`'s flags (besides the folder and the texts), one field each."""

    file: str | None = setting(None, "a file with one text per line (read as it is predicted)")
    data: str | None = setting(None, "news: a MIND folder or behaviors.tsv (labels not needed) to rank")
    max_new_tokens: int = setting(40, "lm: tokens generated per prompt", minimum=1)
    output: str | None = setting(None, "write here instead of printing (news: default MODEL_DIR/prediction.txt)")
    overwrite: bool = setting(False, "replace an existing --output file")
    progress: bool = setting(True, "progress bar (--no-progress: none)")
