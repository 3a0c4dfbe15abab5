"""The one table of tasks: name -> its `Task` class (engine/task.py), which says everything else (settings, help,
the architectures of its folders, its verbs). `fastformer train`, `evaluate`, `predict`, `explain`, `export` and
`generate` all read it, so a new task is one folder under tasks/ and one line here. The task classes import the
standard library (and their settings) only: torch and transformers load when a task runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from fastformer.engine.task import NotARunFolder, Task, VerbNotSupported, check_model_files
from fastformer.tasks.classification.task import ClassificationTask
from fastformer.tasks.distill.task import DistillationTask
from fastformer.tasks.lm.task import LanguageModelingTask
from fastformer.tasks.news.task import NewsTask
from fastformer.tasks.pretrain.task import PretrainingTask
from fastformer.tasks.summarize.task import SummarizationTask

TASKS: dict[str, type[Task]] = {
    task.name: task
    for task in (
        ClassificationTask,
        LanguageModelingTask,
        PretrainingTask,
        DistillationTask,
        NewsTask,
        SummarizationTask,
    )
}

__all__ = ["TASKS", "VERBS", "NotARunFolder", "VerbNotSupported", "task_for_verb", "task_of_folder"]


VERBS = ("evaluate", "predict", "explain", "export", "generate")  # the CLI's verbs on a trained folder


def task_for_verb(path: str | Path, verb: str) -> tuple[str, str | None]:
    """task_of_folder(path), refused in one line when the folder's task does not `verb` (a task class declares its
    verbs)."""
    task, architecture = task_of_folder(path)
    entry = TASKS.get(task)
    if entry is not None and verb not in entry.verbs:
        hint = f"; {entry.instead.replace('FOLDER', str(path))}" if entry.instead else ""
        raise VerbNotSupported(f"{path}: holds a {task} run, which does not {verb} ({entry.offers()}){hint}")
    return task, architecture


def task_of_folder(path: str | Path) -> tuple[str, str | None]:
    """(task name, architecture or None) of a folder written by `fastformer train`: what its manifest or marker says,
    else (folders of earlier versions) what a task recognises of its files, or its config.json's architectures."""
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
    for entry in TASKS.values():  # a folder of an earlier version: the task that knows its files
        found = entry.older_folder_architecture(folder, architecture)
        if found:
            return entry.name, found
    config = folder / "config.json"
    if config.is_file():
        names = json.loads(config.read_text()).get("architectures") or []
        for entry in TASKS.values():
            if any(n in entry.architectures for n in names):
                return entry.name, architecture
    raise NotARunFolder(
        f"{folder}: not a folder written by `fastformer train` (no run_complete.json, config.json or a TF-IDF model)"
    )
