#!/usr/bin/env bash
# One lease of a lent GPU (the device tool: one command, at most 10 minutes), in three parts, each with its own time
# box so that a part that fails or runs long costs only itself:
#   1. tests/ops/test_cuda.py: the op, the fused op, the fused block and a compiled layer on CUDA against the reference
#   2. `fastformer bench --sweep paper` on the GPU (the paper's Figure 2 was timed on a V100), float32 and bfloat16
#   3. issue 44's general distillation of all-MiniLM-L6-v2 into a local-mixing Fastformer at GPU scale: convert,
#      layer-wise stage, end-to-end stage (the same recipe as benchmarks/distill/run.sh, 8x the batch), each stopped
#      by --time-limit; the student comes back in float16 shards (the tool returns at most 16 MiB a file).
# Needs .gpu/ (python benchmarks/device/pack_distill.py MODEL_ZIP runs/distill-corpus.jsonl.gz .gpu): the teacher's
# folder in float16, the corpus cut to fit, the baselines' wheels. Writes into $OUT (default runs/device):
# log.txt, results.tar.gz (bench files, both stages' metrics, logs, plots, configs), student-N.safetensors.
# DRY=1: the same steps at toy size on this machine's CPU (checks the script before a lease is spent on it).
# PARTS="tests bench speed distill" (default: all): the parts to run; e.g. PARTS="tests speed distill" gives the
# distillation the bench's ~2 minutes once the sweep is measured (benchmarks/attention/results/gpu-h200/).
# speed: issue 44's teacher-against-student speed (benchmarks/distill/speed.py: a fine-tuning step and inference of
# MiniLM in both forms at 512, 2,048 and 8,192 tokens, bf16 autocast, peak GPU memory), into results.tar.gz.
# Measured in the lease of 2026-12-04 (H200, torch 2.11): tests 34 s, each bench dtype over its time box (the runner
# has since stopped losing a training sweep to the first step's one-time cost), distillation 11.7 steps/s at batch
# 128 x 256 (about 240k real tokens/s) after ~30 s of reading and converting per stage.
WORK=${WORK:-/tmp/device-work}
BUDGET=${BUDGET:-560}  # seconds this script may take in all; the distillation gets what the first parts leave
source benchmarks/device/lease.sh
mkdir -p "$WORK/bench"

say "machine"
{
  nvidia-smi -L 2>&1 || echo "no nvidia-smi"
  "$PY" -c "import torch, transformers, tokenizers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'tokenizers', tokenizers.__version__, 'cuda', torch.cuda.is_available() and torch.cuda.get_device_name(0))"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/whl/*.whl
} >>"$LOG" 2>&1

if [ "${DRY:-0}" = 1 ]; then
  device=cpu; lengths=(--lengths 128 256 --variants fastformer-paper softmax-sdpa --repeats 1); steps=(4 6); batch=4; eval_texts=8
  minutes=(0.2 0.3); dtypes=(float32)
else
  device=cuda; lengths=(--budget-s 2 --repeats 5); steps=(3000 6000); batch=128; eval_texts=200
  minutes=(); dtypes=(float32 bfloat16)
fi

PARTS=${PARTS:-tests bench speed distill}
part() { [[ " $PARTS " == *" $1 "* ]]; }

tests=0
if part tests; then
say "1. CUDA tests"
timeout 110 "$PY" -m pytest -q -p no:cacheprovider -n 0 tests/ops/test_cuda.py >>"$LOG" 2>&1
tests=$?
say "tests exit $tests"
fi
# a failing fused path must not cost the distillation: it then runs on the plain autograd path
impl=()
[ "$tests" != 0 ] && impl=(--model fastformer_implementation=eager)

if part bench; then
say "2. benchmark, paper sweep"
declare -A box=([float32]=70 [bfloat16]=50)
for dtype in "${dtypes[@]}"; do
  timeout "${box[$dtype]}" "$PY" -m fastformer bench --sweep paper --device "$device" --dtype "$dtype" "${lengths[@]}" \
    --out "$WORK/bench" >>"$LOG" 2>&1
  say "bench $dtype exit $?"
done
fi

if part speed; then
  say "speed: teacher against student"
  lengths_speed=(--lengths 512 2048 8192)
  [ "${DRY:-0}" = 1 ] && lengths_speed=(--lengths 64 --batch-tokens 128 --repeats 1)
  timeout 120 "$PY" benchmarks/distill/speed.py --device "$device" --model .gpu/minilm --texts .gpu/corpus.jsonl.xz \
    "${lengths_speed[@]}" --out "$WORK/bench" >>"$LOG" 2>&1
  say "speed exit $?"
fi

part distill || { (cd "$WORK" && tar czf "$OUT/results.tar.gz" bench); say "done"; exit 0; }
say "3. distillation"
D=$WORK/distill
mkdir -p "$D"
xz -dc .gpu/corpus.jsonl.xz >"$D/corpus.jsonl"
ff convert-bert .gpu/minilm "$D/minilm-fastformer" --max-positions 8192 >>"$LOG" 2>&1
ff convert-bert .gpu/minilm "$D/minilm-softmax" --attention softmax >>"$LOG" 2>&1
say "converted"
common=(--teacher "$D/minilm-softmax" --train "$D/corpus.jsonl" --exclude .gpu/heldout.jsonl
  --max-eval-texts "$eval_texts" --block-size 256 --batch-size "$batch" --evaluations 4 --bf16 --seed 1
  --no-progress --model local_mixing=3 "${impl[@]}")
# time for training in each stage: what is left, less about 35 s a stage for reading, evaluating, saving, and 30 s
# for packing; a third to the layer-wise stage
avail=$(($(left) - 100))
if [ ${#minutes[@]} = 0 ]; then
  minutes=("$(awk "BEGIN{print $avail / 3 / 60}")" "$(awk "BEGIN{print 2 * $avail / 3 / 60}")")
fi
say "training minutes: ${minutes[*]}"
ff train distill "${common[@]}" --stage layerwise --init-from "$D/minilm-fastformer" --learning-rate 5e-4 \
  --max-steps "${steps[0]}" --time-limit "${minutes[0]}" --output-dir "$D/layerwise" >>"$LOG" 2>&1
say "layerwise exit $?"
# the end-to-end stage's schedule fitted to its time: steps at the layer-wise stage's rate (the same work a step),
# 90 % of them, so the learning rate decays to its end before the limit (which stays, as a guard)
rate=$("$PY" -c "import json, sys; t = json.load(open(sys.argv[1]))['train']; print(t['steps'] / max(1e-9, t['train_runtime'] - t['evaluation_seconds']))" "$D/layerwise/metrics.json" 2>>"$LOG")
[ -n "$rate" ] && [ "${DRY:-0}" != 1 ] && steps[1]=$(awk "BEGIN{print int(0.9 * $rate * ${minutes[1]} * 60)}")
say "end-to-end: ${steps[1]} steps (layer-wise rate ${rate:-unknown} steps/s)"
ff train distill "${common[@]}" --stage end-to-end --init-from "$D/layerwise" --learning-rate 3e-4 \
  --max-steps "${steps[1]}" --time-limit "${minutes[1]}" --output-dir "$D/end-to-end" >>"$LOG" 2>&1
say "end-to-end exit $?"

say "packing"
"$PY" benchmarks/device/student_shards.py pack "$D/end-to-end/model.safetensors" "$OUT" >>"$LOG" 2>&1
(cd "$WORK" && tar czf "$OUT/results.tar.gz" bench \
  $(cd "$WORK" && ls -d distill/*/metrics.json distill/*/log_history.json distill/*/training.png distill/*/config.json \
    distill/*/run_config.json distill/end-to-end/tokenizer* distill/end-to-end/*.json 2>/dev/null | sort -u))
say "done"
