"""See what a Fastformer reads: its additive-attention weights per word of a text, as data, an HTML page and a picture.

    from fastformer.interpret import explain
    explanation = explain(model, tokenizer, "the film was a delight")
    explanation.top_words(5); explanation.save_html("why.html"); explanation.save_png("why.png")

A news recommender is explained per user (`explain_user`): which clicked news made up the user vector, their share of
each candidate's score, and which title words made each news vector.
"""

from fastformer.interpret.explain import explain
from fastformer.interpret.explanation import Explanation, View
from fastformer.interpret.news import NewsExplanation, explain_user

__all__ = ["Explanation", "NewsExplanation", "View", "explain", "explain_user"]
