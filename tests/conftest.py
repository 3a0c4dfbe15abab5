import os

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
