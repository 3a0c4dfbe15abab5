#!/usr/bin/env bash
# Summarization on SumPubMed (../shared/data/pubmed/sumpubmed_first5000.jsonl.gz: split 4,000 / 500 / 500 in id
# order) and CNN/DailyMail (../shared/data/cnndm: 1,000 validation pairs to train on, 10% held out; the first 500
# test pairs to test on). Lead-3 on both; on SumPubMed, the Fastformer encoder reading 2,048 tokens and the same
# model with a softmax Transformer encoder reading 512 (as the paper truncates its Transformer), same decoder,
# tokenizer, data, steps and seed; on CNN/DailyMail, the Fastformer model.
# CPU budget (2 cores, under an hour a row): paper sizes (hidden 256, 16 heads, encoder 2 layers for PubMed / 4 for
# CNN/DM, 4-layer decoder, FFN 256), a 16k WordPiece vocabulary, summaries cut at 128 tokens, EPOCHS (default 1)
# over TRAIN documents (default all 4,000), beam 4, ROUGE on the first 50 test documents (validation ROUGE skipped:
# the best epoch is chosen by validation loss).
# Results: runs/summarization/*/metrics.json; table: python benchmarks/summarization/summarize_summarization.py runs/summarization
set -euo pipefail
PUBMED=${PUBMED:-../shared/data/pubmed/sumpubmed_first5000.jsonl.gz}
CNNDM=${CNNDM:-../shared/data/cnndm}
ROOT=runs/summarization
EPOCHS=${EPOCHS:-1}
TRAIN=${TRAIN:-4000}
EVAL=${EVAL:-50}
mkdir -p $ROOT
echo '{"rouge_splits": ["test"]}' > $ROOT/test-rouge-only.json
common=(--config $ROOT/test-rouge-only.json --epochs "$EPOCHS" --batch-size 8 --learning-rate 5e-4 --warmup 0.05 --vocab-size 16000
        --max-target-length 128 --num-beams 4 --max-eval-examples "$EVAL" --no-progress --logging-steps 10)
pubmed=(--train "$PUBMED" --source-field text --target-field abstract --split 4000 500 500)
[ -f $ROOT/pubmed-lead3/metrics.json ] || \
  fastformer train summarize "${pubmed[@]}" --architecture lead3 --max-eval-examples 500 --output-dir $ROOT/pubmed-lead3
[ -f $ROOT/cnndm-lead3/metrics.json ] || \
  fastformer train summarize --train "$CNNDM/validation_first1000.csv.gz" --test "$CNNDM/test_first500.csv.gz" \
    --architecture lead3 --output-dir $ROOT/cnndm-lead3
[ -f $ROOT/pubmed-fastformer-2048/metrics.json ] || \
  fastformer train summarize "${pubmed[@]}" "${common[@]}" --max-train-examples "$TRAIN" --max-source-length 2048 \
    --architecture fastformer --output-dir $ROOT/pubmed-fastformer-2048
[ -f $ROOT/pubmed-softmax-512/metrics.json ] || \
  fastformer train summarize "${pubmed[@]}" "${common[@]}" --max-train-examples "$TRAIN" --max-source-length 512 \
    --architecture softmax --tokenizer $ROOT/pubmed-fastformer-2048 --output-dir $ROOT/pubmed-softmax-512
[ -f $ROOT/cnndm-fastformer-1024/metrics.json ] || \
  fastformer train summarize --train "$CNNDM/validation_first1000.csv.gz" --test "$CNNDM/test_first500.csv.gz" \
    "${common[@]}" --max-source-length 1024 --model num_hidden_layers=4 --architecture fastformer \
    --output-dir $ROOT/cnndm-fastformer-1024
