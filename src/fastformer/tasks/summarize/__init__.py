"""Abstractive summarization (encoder-decoder), with softmax-encoder and Lead-3 baselines."""
