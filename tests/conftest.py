import os

import torch

# two quiet cores (CI): one thread per pytest-xdist worker when the suite runs on both, else two
threads = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
torch.set_num_threads(max(1, min(threads, torch.get_num_threads())))
