"""Hugging Face models of the fastformer family."""
