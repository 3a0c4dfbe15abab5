"""Causal language modelling: a causal Fastformer or the GPT-2 baseline of the same size."""
