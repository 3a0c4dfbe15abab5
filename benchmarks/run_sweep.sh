# Sourced by the sweep scripts: `sweep` reads "<name> <fastformer train arguments>" lines on stdin and runs those whose
# name matches ONLY (all where it is unset; ONLY='NAME|NAME' just those), JOBS
# side by side with THREADS threads each, into $OUT/<name> (log: $OUT/<name>.log, appended to, so a resumed run keeps
# its earlier part and a second campaign refused by a running run's lock leaves its log whole; --resume: a killed run
# continues);
# each finished run's metrics.json is copied to $RESULTS/<name>.json, to be committed, and a run whose file exists
# there is skipped. DRY_RUN=1 lists the runs instead. `sweep_relisting LISTER` (JOBS=1) runs the first pending run that
# the function LISTER lists (ONLY applied), then lists again: a run listed only once an earlier one has finished (a
# student taught by its teacher) joins the same campaign. `converted_teacher DIR` makes the distillation's teacher
# folder a sweep starts from; `mind_folders DATA ROOT` the news sweeps' MIND folders.
run_one() {
  local name=$1; shift
  [ -f "$RESULTS/$name.json" ] && return 0
  mkdir -p "$OUT" "$RESULTS"
  if OMP_NUM_THREADS=$THREADS fastformer train "$@" --output-dir "$OUT/$name" --no-progress --resume \
    >> "$OUT/$name.log" 2>&1; then
    cp "$OUT/$name/metrics.json" "$RESULTS/$name.json"
    echo "done: $name $(date +%T)"
  elif [ $? = 143 ]; then  # SIGTERM: the run wrote a checkpoint at the step it stopped at
    echo "stopped: $name (SIGTERM; the sweep again continues it)"
  else
    echo "failed: $name (see $OUT/$name.log)"
  fi
}
only_listed() {  # the lines on stdin whose run name matches ONLY (an extended regular expression; every line unset)
  grep -E "^(${ONLY:-.*}) "
}
sweep() {
  if [ "${DRY_RUN:-0}" = 1 ]; then only_listed; return; fi
  export -f run_one; export OUT RESULTS THREADS
  only_listed | xargs -r -P "$JOBS" -L 1 bash -c 'run_one "$@"' _
}
sweep_relisting() {  # LISTER
  if [ "${DRY_RUN:-0}" = 1 ] || [ "$JOBS" != 1 ]; then "$1" | sweep; return 0; fi
  export -f run_one; export OUT RESULTS THREADS
  local tried=" " line
  while true; do  # the first listed run with no results file that has not failed once in this campaign
    line=$("$1" | only_listed | while read -r name rest; do
      if [ ! -f "$RESULTS/$name.json" ] && [[ "$tried" != *" $name "* ]]; then echo "$name $rest"; break; fi
    done)
    [ -n "$line" ] || return 0
    tried+="${line%% *} "
    echo "$line" | xargs -L 1 bash -c 'run_one "$@"' _
  done
}
converted_teacher() {  # DIR [ATTENTION]: all-MiniLM-L6-v2 converted into DIR from the package's model.zip, if missing
  # (ATTENTION softmax, the default: exactly, the distillation's teacher; fastformer: the swap, not distilled)
  if [ "${DRY_RUN:-0}" = 1 ] || [ -d "$1" ]; then return 0; fi
  local zip
  zip=$(python -c "import importlib.util as u; print(u.find_spec('all_minilm_l6_v2').submodule_search_locations[0])")
  # (two campaigns started together both convert: the later one's refusal, the folder written by the earlier, is fine)
  fastformer convert-bert "$zip/model.zip" "$1" --attention "${2:-softmax}" || [ -f "$1/config.json" ]
}
mind_folders() {  # DATA ROOT: MINDRec's valid and test files converted into ROOT/mind-valid and ROOT/mind-test, if missing
  # (the conversion prints its counts on stdout: not in a DRY_RUN listing, whose lines are the runs alone)
  local split
  for split in valid test; do
    [ -f "$2/mind-$split/behaviors.tsv" ] || [ "${DRY_RUN:-0}" = 1 ] \
      || fastformer convert-mindrec "$1/mindrec20_$split.json.gz" "$2/mind-$split"
  done
}
