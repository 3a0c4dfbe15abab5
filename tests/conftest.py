import gc
import os
import sys

import pytest
import torch

# two quiet cores (CI): one thread per pytest-xdist worker when the suite runs on both, else two; the processes a test
# starts (`fastformer train`, torchrun's workers) inherit one thread too, instead of two each beside the other worker
threads = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
torch.set_num_threads(max(1, min(threads, torch.get_num_threads())))
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_collection_modifyitems(items):
    """Files with `slow` tests first, the most first (the order within a file kept): pytest-xdist hands whole files
    (--dist loadfile) to workers in collection order, so the long files start first and the short ones fill in at the
    end, instead of a long file starting last on one worker while the other has nothing left."""
    slow: dict[str, int] = {}
    for item in items:
        slow[item.fspath.strpath] = slow.get(item.fspath.strpath, 0) + (item.get_closest_marker("slow") is not None)
    first_seen = {path: i for i, path in enumerate(dict.fromkeys(item.fspath.strpath for item in items))}
    items.sort(key=lambda item: (-slow[item.fspath.strpath], first_seen[item.fspath.strpath]))


# modules imported on a test's first use that leave many long-lived objects (a first tiny training run took a
# process from 177k tracked objects to 471k): the test that first imports one freezes them at its end
HEAVY_MODULES = ("transformers.trainer", "matplotlib.pyplot", "torch._dynamo", "sklearn.linear_model")
frozen_with: set[str] = set()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """Keep the cycle collector off what a worker holds for good. Once torch, transformers and matplotlib are imported
    a worker holds ~450k long-lived objects, and every full collection walked them all: the one accelerate runs at
    each Trainer.train and the automatic ones (a tiny training run 1.41 s, 0.77 s with them frozen). So after a test
    that first imported one of HEAVY_MODULES, and after each file (its module fixtures already torn down): collect
    the garbage, then gc.freeze() what is left. Frozen objects are still freed when their last reference goes; only a
    reference cycle among them would outlive its file, which a test process can afford."""
    newly_imported = {name for name in HEAVY_MODULES if name in sys.modules} - frozen_with
    if newly_imported or nextitem is None or nextitem.path != item.path:
        frozen_with.update(newly_imported)
        gc.collect()
        gc.freeze()
