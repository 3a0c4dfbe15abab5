"""Readers of the official dataset formats. Imports the stdlib only."""

from fastformer.data.text_classification import DataError, Example, LabelMap, read_examples

__all__ = ["DataError", "Example", "LabelMap", "read_examples"]
