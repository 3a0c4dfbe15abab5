"""The word-level tokenizer: NLTK's splitting on hard cases, vocabulary choice and coverage, save / reload."""

import pytest
from transformers import AutoTokenizer

from fastformer.data.word_tokenizer import (
    SPECIAL_TOKENS,
    choose_vocabulary,
    count_words,
    split_words,
    train_word_tokenizer,
)

# Cases where our split equals NLTK's word tokenizer (NLTKWordTokenizer, which word_tokenize runs per sentence).
AGREES_WITH_NLTK = [
    "I don't think it's great -- can't say; they're (mostly) fine!",  # clitics, punctuation, dashes
    "Costs $1,000.50 or 3.5% on 12/25/2020, e.g. U.S.A. at 10:30am.",  # numbers, abbreviations
    "Well-known o'clock rock'n'roll y'all, we've and she'd, I'll.",  # inner apostrophes vs clitics
    "Really?! Yes... ok",  # repeated punctuation, ellipsis
    "'quoted' and style, «french» — dash",  # single quotes, other symbols
    "café naïve 2nd_place mail bob@x.org",  # non-ASCII letters, inner periods
]


@pytest.mark.parametrize("text", AGREES_WITH_NLTK)
def test_split_matches_nltk(text):
    nltk_tokenize = pytest.importorskip("nltk.tokenize").NLTKWordTokenizer().tokenize
    assert split_words(text) == nltk_tokenize(text.lower())


def test_hard_cases_spelled_out():
    assert split_words("I don't, can't, it's") == ["i", "do", "n't", ",", "ca", "n't", ",", "it", "'s"]
    assert split_words("Don’t") == ["do", "n't"]  # curly apostrophe straightened first
    assert split_words("1,000.50 3.5% 12/25/2020") == ["1,000.50", "3.5", "%", "12/25/2020"]
    # documented departures from NLTK: URLs stay whole (NLTK: 'https', ':', '//www.example.com/a', ...), double
    # quotes stay '"' (NLTK: `` and ''), and a sentence-final period is split off (NLTK needs punkt for that)
    assert split_words("see https://www.example.com/a?b=1, ok") == ["see", "https://www.example.com/a?b=1", ",", "ok"]
    assert split_words('He said "no." Then left.') == ["he", "said", '"', "no", ".", '"', "then", "left", "."]


def test_vocabulary_keeps_frequent_and_known_words_and_reports_coverage():
    counts = count_words(["the cat sat", "the cat ran", "a zebra"])  # the 2, cat 2, sat ran a zebra 1
    words, report = choose_vocabulary(counts, vocab_size=100, min_count=2, known={"zebra", "unseen"})
    assert words == ["cat", "the", "zebra"]  # by frequency, then alphabetically; rare 'zebra' kept as known
    assert report["training_tokens"] == 8 and report["training_words"] == 6
    assert report["token_coverage"] == round(5 / 8, 4) and report["dropped_by_cap"] == 0
    capped, report = choose_vocabulary(counts, vocab_size=len(SPECIAL_TOKENS) + 1, min_count=1)
    assert capped == ["cat"] and report["dropped_by_cap"] == 5
    with pytest.raises(ValueError, match="no room"):
        choose_vocabulary(counts, vocab_size=3)


def test_round_trip_through_save_pretrained(tmp_path):
    texts = ["I don't like it.", "It's great, isn't it?", "Great great film!"]
    tokenizer, _ = train_word_tokenizer(texts, vocab_size=100, min_count=1)
    assert tokenizer.pad_token_id == 0 and tokenizer.convert_ids_to_tokens([1]) == ["[UNK]"]
    text = "It's a GREAT film, don't you think?"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == [
        "it",
        "'s",
        "[UNK]",
        "great",
        "film",
        ",",
        "do",
        "n't",
        "[UNK]",
        "[UNK]",
        "?",
    ]
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    assert reloaded(text, add_special_tokens=False)["input_ids"] == ids
    assert reloaded.decode(ids) == "it 's [UNK] great film , do n't [UNK] [UNK] ?"
