"""The op and the layers need torch alone; the models need transformers."""

import subprocess
import sys

BLOCK_TRANSFORMERS = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'transformers':
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
"""


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK_TRANSFORMERS + code], capture_output=True, text=True)


def test_op_and_layers_work_without_transformers():
    result = run(
        "import torch, fastformer\n"
        "from fastformer.ops import fastformer_attention\n"
        "enc = fastformer.build_encoder('official', hidden_size=32, num_attention_heads=4)\n"
        "out, _ = enc(torch.randn(2, 5, 32))\n"
        "assert out.shape == (2, 5, 32)\n"
        "assert not hasattr(fastformer, 'FastformerConfig')\n"
        "assert not any(m.split('.')[0] == 'transformers' for m in sys.modules)\n"
        "print('ok')\n"
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_models_say_they_need_transformers():
    result = run("import fastformer.models.fastformer\n")
    assert result.returncode != 0 and "transformers" in result.stderr
