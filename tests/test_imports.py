"""Tiers import alone: the op and the layers need torch alone, the CLI's help needs neither, the models need
transformers; no import runs upward (a lower tier never imports a higher one)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "fastformer"

BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {blocked}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Block())
"""


def run(code: str, blocked=("transformers",)) -> subprocess.CompletedProcess:
    prelude = BLOCK.format(blocked=set(blocked))
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True)


def test_op_and_layers_work_without_transformers():
    result = run(
        "import torch, fastformer\n"
        "import fastformer.ops, fastformer.layers\n"
        "from fastformer.ops import fastformer_attention\n"
        "enc = fastformer.build_encoder('official', hidden_size=32, num_attention_heads=4)\n"
        "out, _ = enc(torch.randn(2, 5, 32))\n"
        "assert out.shape == (2, 5, 32)\n"
        "assert not any(m.split('.')[0] == 'transformers' for m in sys.modules)\n"
        "print('ok')\n"
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


@pytest.mark.parametrize("module", ["fastformer.ops", "fastformer.layers"])
def test_each_lower_tier_imports_torch_and_nothing_of_transformers(module):
    result = run(
        f"import {module}\nassert 'torch' in sys.modules\n"
        "print(sorted(m for m in sys.modules if m.startswith('fastformer')))\n"
    )
    assert result.returncode == 0, result.stderr
    loaded = eval(result.stdout)  # noqa: S307  (our own printout)
    assert not [
        m
        for m in loaded
        if m.startswith(("fastformer.models", "fastformer.engine", "fastformer.tasks", "fastformer.cli"))
    ]


def test_import_fastformer_is_lazy_and_names_load_on_use():
    result = run(
        "import fastformer\n"
        "assert 'torch' not in sys.modules, 'import fastformer loaded torch'\n"
        "assert fastformer.__version__\n"
        "fastformer.fastformer_attention\n"
        "assert 'torch' in sys.modules\n"
        "try:\n"
        "    fastformer.FastformerConfig\n"
        "except ModuleNotFoundError as e:\n"
        "    print('needs', e.name)\n",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "needs transformers"


def test_cli_help_loads_neither_torch_nor_transformers():
    result = run(
        "import contextlib, io\n"
        "from fastformer.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted(m for m in ('torch', 'transformers', 'sklearn', 'numpy') if m in sys.modules))\n",
        blocked=(),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_models_say_they_need_transformers():
    result = run("import fastformer.models.fastformer\n")
    assert result.returncode != 0 and "transformers" in result.stderr


def test_version_has_one_source():
    from importlib.metadata import version

    import fastformer

    assert fastformer.__version__ == version("fastformer")
    pyproject = (SOURCE.parents[1] / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and "fastformer.version.__version__" in pyproject


# tier -> tiers it must never import (a lower tier never reaches up)
FORBIDDEN = {
    "ops": ("layers", "models", "engine", "tasks", "cli", "benchmark", "data", "metrics", "interpret"),
    "layers": ("models", "engine", "tasks", "cli", "benchmark", "data", "metrics", "interpret"),
    "data": ("models", "engine", "tasks", "cli", "benchmark", "metrics", "layers", "ops", "interpret"),
    "metrics": ("models", "engine", "tasks", "cli", "benchmark", "interpret"),
    "models": ("engine", "tasks", "cli", "benchmark", "interpret"),
    "engine": ("tasks", "cli", "benchmark", "interpret"),  # the engine runs a task it is handed, and names none
    "tasks": ("cli", "benchmark"),  # a task hands its model to interpret/ (explain_folder)
    "interpret": ("cli", "benchmark", "engine", "tasks"),  # below the tasks: it explains models, whoever trained them
    "benchmark": ("cli", "interpret", "engine", "tasks"),
}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_import_runs_upward_and_no_private_helper_crosses_a_module():
    upward, private = [], []
    for path in SOURCE.rglob("*.py"):
        tier = path.relative_to(SOURCE).parts[0]
        for module in _imports(path):
            parts = module.split(".")
            if parts[0] == "fastformer" and len(parts) > 1 and parts[1] in FORBIDDEN.get(tier, ()):
                upward.append(f"{path.relative_to(SOURCE)} imports {module}")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fastformer"):
                private += [f"{path.relative_to(SOURCE)}: {a.name}" for a in node.names if _private(a.name)]
    assert not upward, upward
    assert not private, private


@pytest.mark.slow
def test_import_fastformer_then_auto_classes_resolve_a_folder(tmp_path):
    """What a user writes: `import fastformer`, then transformers' Auto classes and pipeline on a saved folder,
    in a fresh interpreter, without importing fastformer.models (the Auto classes register on their first call)."""
    from fastformer.models.fastformer import FastformerConfig, FastformerForSequenceClassification

    config = FastformerConfig(vocab_size=50, hidden_size=16, num_attention_heads=2, intermediate_size=16, num_labels=3)
    FastformerForSequenceClassification(config).save_pretrained(tmp_path)
    code = (
        "import sys, fastformer\n"
        "assert 'transformers' not in sys.modules\n"
        "from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification\n"
        f"model = AutoModelForSequenceClassification.from_pretrained({str(tmp_path)!r})\n"
        f"assert AutoConfig.from_pretrained({str(tmp_path)!r}).model_type == 'fastformer'\n"
        f"assert type(AutoModel.from_pretrained({str(tmp_path)!r})).__name__ == 'FastformerModel'\n"
        "print(type(model).__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "FastformerForSequenceClassification", result.stderr
    # transformers loaded first, fastformer second: the same
    code = code.replace(
        "import sys, fastformer\nassert 'transformers' not in sys.modules\n",
        "import sys, transformers.models.auto.modeling_auto, fastformer\n",
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "FastformerForSequenceClassification", result.stderr


def test_outside_the_tasks_only_the_registry_is_imported_and_no_task_is_named():
    """The engine, the command line, interpret/ and the benchmark know tasks only through tasks/registry.py (TASKS,
    task_for_verb, its errors), and compare no string to a task's name or to a task's own architecture: a new task
    is one folder and one registry line, with no edit outside tasks/."""
    from fastformer.tasks.registry import TASKS

    names = set(TASKS) | {a for e in TASKS.values() for a in e.config_class.MODEL_FREE_ARCHITECTURES} | {"gpt2"}
    reach_ins, comparisons = [], []
    for package in ("engine", "cli", "interpret", "benchmark"):
        for path in (SOURCE / package).rglob("*.py"):
            where = path.relative_to(SOURCE)
            reach_ins += [f"{where}: {m}" for m in _imports(path) if m.startswith("fastformer.tasks.")]
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Compare):
                    named = [c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and c.value in names]
                    comparisons += [f"{where}:{node.lineno}: {ast.unparse(node)}" for _ in named[:1]]
    assert not [r for r in reach_ins if not r.endswith(": fastformer.tasks.registry")], reach_ins
    assert not comparisons, comparisons


def test_no_private_name_of_transformers_is_used():
    """The Auto registration wraps public Auto classes only, and nothing imports a private transformers name: a
    transformers release may move its private names without notice (its range in pyproject.toml is bounded too)."""
    private = []
    for path in SOURCE.rglob("*.py"):
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("transformers"):
                private += [f"{path.name}: {a.name}" for a in node.names if _private(a.name)]
                private += [f"{path.name}: {node.module}" for part in node.module.split(".") if _private(part)]
        private += [f"{path.name}: {name}" for name in ("_BaseAutoModelClass", "_LazyAutoMapping") if name in text]
    assert not private, private


def test_a_bad_model_field_is_refused_before_torch_or_transformers_load():
    """`--model` is checked against the torch-free table of FastformerConfig's fields (fastformer/config_fields.py)."""
    result = run(
        "from fastformer.cli.main import main\n"
        "for bad in ('num_hidden_layers=0', 'hiden_size=3'):\n"
        "    try:\n"
        "        main(['train', '--model', bad])\n"
        "    except SystemExit as refused:\n"
        "        print(refused.code)\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n",
        blocked=(),
    )
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0, result.stderr
    assert "num_hidden_layers=0: must be >= 1" in lines[0] and "hiden_size: not a FastformerConfig field" in lines[1]
    assert lines[-1] == "[]"
