"""Every script under benchmarks/ names only what the library has: each `from fastformer... import NAME` in it, at
module or function level, resolves. (Nothing imports these scripts, and ruff cannot see a missing name in a
function-level import: benchmarks/train_throughput.py imported a removed `build_trainer` unnoticed.)"""

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_every_library_name_a_benchmark_imports_exists(script):
    tree = ast.parse(script.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fastformer"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name) or importlib.util.find_spec(f"{node.module}.{alias.name}"), (
                    f"{script.name}:{node.lineno}: {node.module} has no {alias.name}"
                )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("fastformer"):
                    importlib.import_module(alias.name)


ARGPARSE_SCRIPTS = [s for s in SCRIPTS if "argparse" in s.read_text()]


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_every_benchmark_script_loads_and_an_argparse_one_answers_help(script, monkeypatch, capsys):
    """Loading runs its module level (a missing module-level name fails here, not in the middle of a long run);
    a script with a command line prints its --help and exits 0."""
    import sys

    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # (a dataclass in it looks its module up there)
    spec.loader.exec_module(module)
    if script in ARGPARSE_SCRIPTS:
        monkeypatch.setattr(sys, "argv", [str(script), "--help"])
        with pytest.raises(SystemExit) as exit:
            module.main()
        assert exit.value.code == 0 and "usage" in capsys.readouterr().out
