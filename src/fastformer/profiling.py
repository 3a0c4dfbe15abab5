"""Measuring what a piece of torch code costs: peak allocated memory and wall time."""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def _silenced_stderr_fd() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null: the profiler's C++ side logs a line at every start and stop."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def peak_memory_bytes(fn: Callable[[], object]) -> int:
    """Peak memory torch allocates while `fn()` runs, above what was allocated when it started.

    On CUDA this is the allocator's peak statistic. On CPU it is read from the profiler's allocation events
    ("Total Allocated"), which is deterministic, unlike the process's resident set size.
    """
    from torch.profiler import ProfilerActivity, profile

    with _silenced_stderr_fd(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        events = json.loads(Path(path).read_text())["traceEvents"]
    finally:
        os.remove(path)
    memory = [e["args"] for e in events if e.get("name") == "[memory]" and e["args"].get("Device Type", 0) == 0]
    if not memory:
        return 0
    start = memory[0]["Total Allocated"] - memory[0]["Bytes"]
    return max(m["Total Allocated"] for m in memory) - start


def time_call(fn: Callable[[], object], repeats: int = 5, warmup: int = 1) -> dict[str, float]:
    """Median, p20, p80, min and max wall time of `fn()` in seconds, after warm-up calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
    return dict(median=statistics.median(times), p20=pick(0.2), p80=pick(0.8), min=times[0], max=times[-1])
