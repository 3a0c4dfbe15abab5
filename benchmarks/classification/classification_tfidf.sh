#!/usr/bin/env bash
# TF-IDF + logistic regression on the three classification sets of docs/RESULTS.md (deterministic: one run each).
# Usage: bash benchmarks/classification/classification_tfidf.sh   -> runs/tfidf-{imdb8,imdb2,yelp5}/metrics.json
set -euo pipefail
IMDB=${IMDB:-../shared/data/imdb/imdb_ratings.jsonl.gz}
YELP=${YELP:-../shared/data/yelp5}
imdb=(--train "$IMDB" --where train:split=train --test "$IMDB" --where test:split=test --label-field rating)
fastformer train "${imdb[@]}" --architecture tfidf --output-dir runs/tfidf-imdb8
fastformer train "${imdb[@]}" --binary-threshold 7 --architecture tfidf --output-dir runs/tfidf-imdb2
fastformer train --train "$YELP/yelp_train_small.csv.gz" --validation "$YELP/yelp_dev.csv.gz" \
  --test "$YELP/yelp_test.csv.gz" --architecture tfidf --output-dir runs/tfidf-yelp5
