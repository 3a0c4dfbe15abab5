"""NBSVM against a hand computation of the log-count ratio and the scaled features, and its saved folder."""

import math

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

from fastformer.tasks.classification.nbsvm import NBSVM, log_count_ratio, scaled_features


def test_log_count_ratio_and_scaled_features_by_hand():
    texts = ["good good film", "good plot", "bad film", "bad bad plot"]
    positive = np.array([True, True, False, False])
    vectorizer = CountVectorizer(binary=True)
    x = vectorizer.fit_transform(texts)  # columns: bad film good plot
    assert vectorizer.get_feature_names_out().tolist() == ["bad", "film", "good", "plot"]
    # binarised counts: p = 1 + [0, 1, 2, 1] (the positive texts), q = 1 + [2, 1, 0, 1]; both sum to 8
    p, q = np.array([1, 2, 3, 2]), np.array([3, 2, 1, 2])
    expected = [math.log((p[i] / 8) / (q[i] / 8)) for i in range(4)]
    r = log_count_ratio(x, positive, alpha=1.0)
    np.testing.assert_allclose(r, expected)
    scaled = scaled_features(x, r).toarray()
    np.testing.assert_allclose(scaled[0], [0, expected[1], expected[2], 0])  # "good good film": binarised, scaled
    np.testing.assert_allclose(scaled[3], [expected[0], 0, 0, expected[3]])


def test_fitted_model_is_a_linear_model_on_the_binary_features_and_reloads(tmp_path):
    texts = ["good good film", "good plot", "bad film", "bad bad plot", "fine film", "awful plot"] * 3
    y = np.array([2, 2, 0, 0, 1, 1] * 3)
    vectorizer = CountVectorizer(binary=True, ngram_range=(1, 2))
    x = vectorizer.fit_transform(texts)
    model = NBSVM.fit(vectorizer, x, y, num_classes=3, c=1.0)
    assert model.ratios.shape == (3, x.shape[1])  # one-vs-rest: a ratio per class and feature
    probs = model.predict_proba(["good film", "awful plot"])
    np.testing.assert_allclose(probs.sum(1), 1.0)
    assert probs.argmax(1).tolist() == [2, 1]
    model.save(["neg", "mid", "pos"], tmp_path)
    loaded, labels = NBSVM.load(tmp_path)
    assert labels == ["neg", "mid", "pos"]
    assert loaded.vectorizer.ngram_range == (1, 2)  # the fitted vectorizer's own settings, not the defaults
    np.testing.assert_allclose(loaded.predict_proba(["good film", "awful plot"]), probs)
