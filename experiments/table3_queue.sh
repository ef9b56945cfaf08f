#!/bin/bash
# docs/translation.md: Table 3's runs as one job queue that two lanes share.
#   table3_queue.sh <core>      (start one per core; started again, it resumes)
# Jobs are queue_lib.sh's, in $EXP/q3. Each job is one row and seed of the
# table, the command of the notebook's round 4 into $EXP/table3/seed<k>, the
# layout the table's one command (`t2t-compare --models=table3 --seeds=1,2,3`)
# reads. The order is every row of seed 1, then seed 2, then seed 3 (ROWS and
# SEEDS narrow it); JOBS="row:seed ..." gives an order of its own instead.
# STEPS (3000), EVAL_EVERY (500) and HPARAMS (overrides after every row's own,
# t2t-compare --hparams) set the budget and recipe; OUT ($EXP/table3) and QUEUE
# ($EXP/q3) keep a table of another budget apart from this one.
# RECORDS=R keeps each job's figures in R (t2t-compare --records); the base's
# job also decodes the rows that read its runs (greedy, the average of 5), so
# that every row's figure is kept as its run finishes. With RECORDS,
# TEST_SPLIT=test also keeps each finished job's test figures there (the same
# command with --bleu_split=test), so that they outlive the run directory;
# they are not printed until the table is final (docs/translation.md, round 36).
# TEST_RECORDS=T sends those test figures to T instead of R (a rerun whose dev
# figures are kept apart from the table's: lab.sh table3-rerun, round 37).
set -uo pipefail
here=$(dirname "$0")
. "$here/env.sh"
. "$here/queue_lib.sh"
core=${1:-}
rows=(${ROWS:-t3_smoothing0 t3_learned t3_separate t3_base t3_heads1 t3_heads16 t3_keys16
    t3_layers1 t3_layers4 t3_width64 t3_width256 t3_dropout0})
seeds=(${SEEDS:-1 2 3})
jobs=()
for seed in "${seeds[@]}"; do
    for row in "${rows[@]}"; do jobs+=("$row:$seed"); done
done
[ -n "${JOBS:-}" ] && jobs=($JOBS)
table3_job() {  # table3_job <row>:<seed>
    local row=${1%:*} seed=${1#*:} models
    models=$row
    [ "$row" = t3_base ] && models=t3_base,t3_greedy,t3_average5
    table3_compare "$models" "$seed" "${RECORDS:-}" || return
    if [ -n "${RECORDS:-}" ] && [ -n "${TEST_SPLIT:-}" ]; then
        table3_compare "$models" "$seed" "${TEST_RECORDS:-$RECORDS}" \
            --bleu_split="$TEST_SPLIT" --missing=skip >/dev/null
    fi
}
table3_compare() {  # <models> <seed> <records or ""> [more flags]: one job's t2t-compare
    local models=$1 seed=$2 records=$3
    shift 3
    pin "$core" "$BIN/t2t-compare" --problems=translate_gettext --models="$models" \
        --random_seed="$seed" --train_steps="${STEPS:-3000}" --save_checkpoints_steps=100 \
        --local_eval_frequency="${EVAL_EVERY:-500}" --data_dir="$EXP/data" \
        ${HPARAMS:+--hparams="$HPARAMS"} --output_dir="${OUT:-$EXP/table3}/seed$seed" \
        ${records:+--records="$records"} "$@"
}
run_queue "${QUEUE:-$EXP/q3}" "${core:-any}" table3_job "${jobs[@]}"
