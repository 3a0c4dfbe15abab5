"""What the commands on a trained folder ask of its task: each verb's settings, one dataclass whose fields are its
flags (the CLI derives them, as `train`'s from the run configs), handed to the method of the verb on the folder's
`Task` class (engine/task.py) with the folder and its architecture, so the task answers without knowing argparse.
So `fastformer evaluate | predict | explain | export | generate` name no task. A task class declares its verbs in
`verbs`, each with its settings class: one below, or one extending it with the task's own fields
(tasks/NAME/config.py); the command offers the union of the tasks' flags and refuses, in one line, a flag the
folder's task does not read.

Imports the stdlib only (and the settings machinery, which does too).
"""

from __future__ import annotations

from dataclasses import dataclass

from fastformer.engine.settings import SettingError, Settings, setting

GERUNDS = {"evaluate": "evaluating", "predict": "predicting with", "explain": "explaining"}


@dataclass
class EvaluationSettings(Settings):
    """`fastformer evaluate`'s flags that every task reads; a task's own class extends it (or FileEvaluationSettings)
    with the fields it reads. None: the run's own setting, or the task's default."""

    data: str | None = setting(None, "the labelled data to evaluate on (the task says which formats)")
    output: str | None = setting(None, "metrics JSON path (default: MODEL_DIR/evaluations/<data name>/metrics.json)")
    overwrite: bool = setting(False, "replace an existing --output (and the file the task writes beside it)")

    def check(self) -> None:
        if self.data is None:
            raise SettingError("data", "required: the labelled data to evaluate on")
        super().check()


@dataclass
class FileEvaluationSettings(EvaluationSettings):
    """A task evaluated on a file in its training formats."""

    format: str | None = setting(None, "file format (default: from the file name; the task's training formats)")
    where: dict[str, str] | None = setting(None, "JSON Lines filter (--where KEY=VALUE)", flag=False)
    max_examples: int | None = setting(None, "only the first N examples / pairs / documents", minimum=1)


@dataclass
class PredictionSettings(Settings):
    """`fastformer predict`'s flags that every task reads (besides the folder and the texts)."""

    output: str | None = setting(None, "write here instead of printing (news: default MODEL_DIR/prediction.txt)")
    overwrite: bool = setting(False, "replace an existing --output file")
    progress: bool = setting(True, "progress bar (--no-progress: none)")


def text_field_setting():
    """--text-field of the verbs that read a --file of texts (predict, explain): a new field each class."""
    return setting(
        None,
        "JSON key, or CSV / TSV column (a header row's name; a position in a file without one), of a --file's texts; "
        "several joined by commas are read as one text (title,content; 1,2 for a label, title, body file) (default: "
        "the run's own)",
    )


def where_setting():
    """--where of the verbs that read a --file of texts: the items read into a filter (cli.settings.where_filter)."""
    return setting(None, "JSON Lines filter of --file (--where KEY=VALUE)", flag=False)


@dataclass
class TextPredictionSettings(PredictionSettings):
    """A task that predicts from texts: the command line's and / or a file's."""

    file: str | None = setting(
        None,
        "a file of texts, read as they are predicted: one a line, or by its name a JSON Lines / CSV / TSV / Parquet "
        "file's --text-field (.jsonl, .csv, .tsv, .parquet; .gz too); or a folder of text files, one text each",
    )
    text_field: str | None = text_field_setting()
    where: dict[str, str] | None = where_setting()


@dataclass
class ExplanationSettings(Settings):
    """`fastformer explain`'s flags that every task reads (besides the folder and the texts)."""

    output_dir: str | None = setting(None, "where the pages go (default: MODEL_DIR/explanations)")
    png: bool = setting(False, "also write a static picture (matplotlib) per input")
    json: bool = setting(False, "also write the weights and prediction as JSON")


@dataclass
class TextExplanationSettings(ExplanationSettings):
    """A task explained per text (fastformer.interpret: a classifier, a language model, a summarizer's encoder)."""

    file: str | None = setting(
        None,
        "a file of texts: one a line (blank lines are skipped), or by its name a JSON Lines / CSV / TSV / Parquet "
        "file's --text-field (.jsonl, .csv, .tsv, .parquet; .gz too); or a folder of text files, one text each",
    )
    text_field: str | None = text_field_setting()
    where: dict[str, str] | None = where_setting()
    weights: str | None = setting(
        None,
        "the weights the page opens on (default: pooling where the model pools, else alpha)",
        choices=("pooling", "alpha", "beta"),
    )
    layer: int | None = setting(None, "layer of alpha / beta, 1-based (default: the last)", minimum=1)
    head: int | None = setting(None, "one head, 1-based (default: the mean of the heads)", minimum=1)
    max_length: int | None = setting(
        None,
        "tokens read (default: as the run read: its --max-length, a summarizer's --max-source-length, a language "
        "model's --block-size, cut at the ends the run cut; else the model's maximum)",
        minimum=1,
    )
    top_k: int = setting(5, "faithfulness: words cut, the top-weighted against random ones (0: no check)", minimum=0)
    trials: int = setting(20, "faithfulness: random draws", minimum=1)
    page_words: int = setting(400, "words per page of a long text", minimum=1)

    def check(self) -> None:
        super().check()
        if self.weights == "pooling" and (self.layer or self.head):
            name = "layer" if self.layer else "head"
            raise SettingError(name, "chooses alpha / beta weights; pooling weights have neither layer nor head")


# what a task that reads texts offers after training: evaluate (the task's own settings) and these
TEXT_VERBS: dict[str, type | None] = dict(predict=TextPredictionSettings, explain=TextExplanationSettings, export=None)
