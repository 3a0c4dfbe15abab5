"""A TF-IDF folder is plain data (tfidf.json + tfidf.safetensors) read back field by field: what save_tfidf writes
loads and predicts the same; a crafted or damaged file is one line naming the field, never handed to scikit-learn."""

import json
import re

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from fastformer.tasks.classification.tfidf import load_tfidf, save_tfidf

TEXTS = ["a moving film", "a dull film", "moving and fine", "dull and slow", "fine acting", "slow plot"] * 3
LABELS = [1, 0, 1, 0, 1, 0] * 3


@pytest.fixture()
def folder(tmp_path):
    pipeline = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True), LogisticRegression())
    pipeline.fit(TEXTS, LABELS)
    save_tfidf(pipeline, ["neg", "pos"], tmp_path)
    return tmp_path, pipeline


def test_saved_files_load_and_predict_the_same(folder):
    path, pipeline = folder
    loaded, names = load_tfidf(path)
    assert names == ["neg", "pos"]
    np.testing.assert_allclose(loaded.predict_proba(TEXTS), pipeline.predict_proba(TEXTS))


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s, a: s["vectorizer"].update(token_pattern="(a+)+$"), "vectorizer.token_pattern='(a+)+$'"),
        (lambda s, a: s["vectorizer"].update(preprocessor="x"), "vectorizer.preprocessor='x' is not a setting"),
        (lambda s, a: s["vectorizer"].update(ngram_range=[1, 99]), "vectorizer.ngram_range=[1, 99]"),
        (lambda s, a: s.pop("labels"), "damaged, lacks 'labels'"),
        (lambda s, a: s.update(vocabulary=s["vocabulary"][:-1]), "idf is"),
        (lambda s, a: a.update(coef=a["coef"][:, :3]), "coef is (1, 3)"),
    ],
)
def test_a_crafted_or_damaged_file_is_one_line_naming_the_field(folder, change, message):
    path, _ = folder
    saved = json.loads((path / "tfidf.json").read_text())
    arrays = dict(load_file(str(path / "tfidf.safetensors")))
    change(saved, arrays)
    (path / "tfidf.json").write_text(json.dumps(saved))
    save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(path / "tfidf.safetensors"))
    with pytest.raises(ValueError, match=re.escape(message)):
        load_tfidf(path)
