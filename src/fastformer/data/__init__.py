"""Readers of the official dataset formats, and the run's tokenizers and word vectors.

What each module imports: the readers (files, text_classification, text_corpus, summarization, mind, mind_topics,
synthetic) and this package the stdlib only; tokenizer and word_tokenizer need `tokenizers` and `transformers`
(imported when called); word_vectors needs numpy (pyarrow for the packaged GloVe, torch for `embedding_matrix`).
"""

from fastformer.data.text_classification import DataError, Example, LabelMap, read_examples

__all__ = ["DataError", "Example", "LabelMap", "read_examples"]
