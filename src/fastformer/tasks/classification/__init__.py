"""Text classification: Fastformer / softmax classifiers, TF-IDF + LR and NBSVM baselines."""
