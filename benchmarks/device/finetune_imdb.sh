#!/usr/bin/env bash
# Issue 44's full IMDB-2 protocol on a lent GPU: the teacher (all-MiniLM-L6-v2 in its softmax form) and the distilled
# student fine-tuned with benchmarks/distill/finetune.sh's recipe (all 25,000 training reviews, 10 % held out, all
# 25,000 test reviews, 512 tokens, 2 epochs, batch 32, bf16; lr 5e-5 teacher, 2e-4 student), SEEDS of each, all at
# once on the one GPU (a 22M-parameter model at batch 32 x 512 leaves most of an H200 idle: six processes share it).
# On one CPU thread the same run takes 6-7 hours.
#
# The device tool carries at most 64 MiB a call, and what an earlier call carried stays on the machine while it is
# held (it goes back after 30 s idle: make the calls one after another). Three calls:
#   1. carry [".gpu/minilm"] (the teacher in float16: benchmarks/device/pack_distill.py), command `true`
#   2. carry [".gpu/student"] (`python benchmarks/device/student_shards.py pack STUDENT/model.safetensors
#      .gpu/student` and STUDENT's config.json, tokenizer.json, tokenizer_config.json copied beside), command `true`
#   3. carry [".gpu/imdb"] (../shared/data/imdb/imdb_ratings.jsonl.gz copied into it),
#      command `BUDGET=540 bash benchmarks/device/finetune_imdb.sh`
# (the tracked pretrained/*.safetensors blanked for the calls, as for h200.sh). Writes into $OUT (default
# runs/device): log.txt, results.tar.gz (each run's metrics.json, log_history.json, training.png, run_config.json).
# DRY=1: a few steps of each run on this machine's CPU, on 64 reviews (checks the script before a lease is spent).
WORK=${WORK:-/tmp/device-finetune}
BUDGET=${BUDGET:-540}
source benchmarks/device/lease.sh
SEEDS=${SEEDS:-1 2 3}
fastformer() { "$PY" -m fastformer "$@"; }  # what finetune.sh calls
export -f fastformer
export PY

say "machine"
{
  nvidia-smi -L 2>&1 || echo "no nvidia-smi"
  "$PY" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available() and torch.cuda.get_device_name(0))"
  ls -la .gpu .gpu/*
} >>"$LOG" 2>&1

ff convert-bert .gpu/minilm "$WORK/teacher" --attention softmax >>"$LOG" 2>&1 || say "teacher conversion failed"
mkdir -p "$WORK/student"
"$PY" benchmarks/device/student_shards.py unpack .gpu/student/student-*.safetensors "$WORK/student/model.safetensors" \
  >>"$LOG" 2>&1 || say "student unpacking failed"
cp .gpu/student/*.json "$WORK/student/" 2>>"$LOG"
say "starts ready"

# what is left for training, less about 90 s for reading, the test split's evaluation and packing; every run stops
# there (--time-limit: it saves, evaluates and reports the step it stopped at)
elapsed=$(($(date +%s) - START))
minutes=$(awk "BEGIN{print ($BUDGET - $elapsed - 90) / 60}")
extra=(--time-limit "$minutes")
if [ "${DRY:-0}" = 1 ]; then
  extra=(--max-train-examples 64 --max-eval-examples 32 --max-length 64)
  export EPOCHS=1
fi
say "training: at most $minutes minutes a run"
pids=()
for seed in $SEEDS; do
  for run in "teacher $WORK/teacher softmax 5e-5" "student $WORK/student fastformer 2e-4"; do
    set -- $run
    IMDB=.gpu/imdb/imdb_ratings.jsonl.gz LR=$4 EXTRA="${extra[*]}" \
      bash benchmarks/distill/finetune.sh "imdb2-h200-$1" "$2" "$3" "$seed" >"$WORK/$1-seed$seed.log" 2>&1 &
    pids+=($!)
  done
done
for pid in "${pids[@]}"; do wait "$pid"; done
say "runs exit"
tail -n 3 "$WORK"/*.log >>"$LOG" 2>&1
cp "$WORK"/*.log "$OUT/" 2>/dev/null

say "packing"
tar czf "$OUT/results.tar.gz" $(ls -d runs/distill/imdb2-h200-*/{metrics.json,log_history.json,training.png,run_config.json} \
  2>/dev/null)
say "done"
