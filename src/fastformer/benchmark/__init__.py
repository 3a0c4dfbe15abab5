"""The efficiency benchmark: a registry of token mixers, a runner with machine headers, plots."""

from fastformer.benchmark.registry import VARIANTS, Variant
from fastformer.benchmark.runner import Cell, machine_header, run, targets, write_results

__all__ = ["VARIANTS", "Cell", "Variant", "machine_header", "run", "targets", "write_results"]
