"""Distillation of a teacher Transformer into a Fastformer student (`fastformer train distill`)."""
