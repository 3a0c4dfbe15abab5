#!/usr/bin/env bash
# Summarization with the paper's inputs (issue "models that learn", item 5): SumPubMed, the Fastformer encoder reading
# 2,048 tokens, word-level inputs with GloVe 6B-50d vectors in the one table that encoder, decoder and output layer
# share, against the same model with a 16k WordPiece vocabulary and random embeddings, and Lead-3; everything else as
# benchmarks/summarization/summarization_pubmed.sh (4,000 / 500 / 500 in id order, hidden 256, 16 heads, 2-layer encoder, 4-layer
# Transformer decoder, batch 8, Adam 5e-4, 5 % warm-up, summaries cut at 128 tokens, beam 4 with no repeated
# trigrams, ROUGE on the first 50 test documents). EPOCHS (default 1: what fits in an hour on one thread) epochs.
# metrics.json has, beside ROUGE, the repetition counts (distinct-1/2, repeated-trigram rate) that tell whether the
# output is still degenerate, for the summaries and for the references.
# Usage: bash benchmarks/summarization/summarization_vectors.sh   (JOBS=2 THREADS=1; results in benchmarks/summarization/results/)
#        python benchmarks/summarization/summarize_summarization_results.py benchmarks/summarization/results  -> the RESULTS table
set -euo pipefail
PUBMED=${PUBMED:-../shared/data/pubmed/sumpubmed_first5000.jsonl.gz}
EPOCHS=${EPOCHS:-1}
JOBS=${JOBS:-2}
THREADS=${THREADS:-1}
OUT=${OUT:-runs/summarization-vectors}
RESULTS=${RESULTS:-benchmarks/summarization/results}
data="summarize --train $PUBMED --source-field text --target-field abstract --split 4000 500 500"
common="--rouge-splits test --epochs $EPOCHS --batch-size 8 --learning-rate 5e-4 --warmup 0.05 --vocab-size 16000 \
 --max-target-length 128 --num-beams 4 --max-eval-examples 50 --logging-steps 10 --max-source-length 2048"
tag=""; [ "$EPOCHS" != 1 ] && tag="-e$EPOCHS"
jobs() {
  echo "pubmed-lead3-seed0 $data --architecture lead3 --max-eval-examples 50"
  for seed in ${SEEDS:-1}; do
    echo "pubmed-fastformer2048-wordpiece$tag-seed$seed $data $common --seed $seed"
    echo "pubmed-fastformer2048-glove$tag-seed$seed $data $common --seed $seed --word-vectors glove-6b-50d"
  done
}
source "$(dirname "$0")/../run_sweep.sh"
jobs | sweep
