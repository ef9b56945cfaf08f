#!/bin/bash
# The lab notebooks' long runs on a machine that may come back bare between
# sessions (docs/translation.md, "State of the runs"): what to rebuild, and the
# two lanes, one per core, in the background.
#   lab.sh rebuild            corpus, snapshot, data: whatever of them is missing
#   lab.sh table3 <core>...   Table 3's queue (table3_queue.sh) on each core; each
#                             finished job's test figures go into the records too
#   lab.sh table3-rerun <core>...  the base's seeds 1 and 2 again, for the test
#                             table only: runs in $EXP/table3t, dev records apart
#                             (docs/records/translate_gettext_rerun), test records
#                             with the table's (docs/translation.md, round 37)
#   lab.sh state <core>...    the state table's queue (state_queue.sh) on each core
#   lab.sh state-best <core>...  the state table again, each run keeping its best
#                             checkpoint on valid_long (--keep_best), parity first:
#                             runs in $EXP/state_best, records docs/records/algo_best
#                             (and docs/records/algo for a last checkpoint not recorded)
#   lab.sh add-best <core>...  addition's UT and its same-size Transformer (spread
#                             positions, 4,000 steps; seeds ADD_SEEDS, default
#                             1 2 3), each run keeping its best
#                             checkpoint on valid_long's char-acc, UT seeds first: runs
#                             in $EXP/add_best, records docs/records/add_best (and
#                             docs/records/add for the last checkpoints)
#   lab.sh length <core>...   the length table (addition, parity, reverse, copy; 4,000
#                             steps), each run keeping its best checkpoint on
#                             valid_long's char-acc: runs in $EXP/length_table, records
#                             docs/records/length_best and docs/records/length (last)
#   lab.sh status             each queue's done count, each lane's last job and step
# EXP (/work/t2t_exp) holds everything; TABLE3_SNAP (snapM, 50d93da), STATE_SNAP
# (snapQ, 9c8aa88), BEST_SNAP and LENGTH_SNAP (snapV, 80191db: snapU's training, records
# with each run's trail) are the snapshots every run of a table keeps, so that a table's
# rows train with one code. A lane appends to
# $EXP/logs/<queue>_lane<core>.out. Records go to this checkout's docs/records.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
export EXP=${EXP:-/work/t2t_exp}
TABLE3_SNAP=${TABLE3_SNAP:-snapM}
TABLE3_COMMIT=${TABLE3_COMMIT:-50d93da}
STATE_SNAP=${STATE_SNAP:-snapQ}
STATE_COMMIT=${STATE_COMMIT:-9c8aa88}
BEST_SNAP=${BEST_SNAP:-snapV}
BEST_COMMIT=${BEST_COMMIT:-80191db}
LENGTH_SNAP=${LENGTH_SNAP:-snapV}
LENGTH_COMMIT=${LENGTH_COMMIT:-80191db}
mkdir -p "$EXP/logs"
TABLE3_RECORDS=$repo/docs/records/translate_gettext
# The state table with each run's checkpoint chosen on valid_long (round 41), parity first.
STATE_KEEP_BEST=valid_long/sequence_accuracy
BEST_ORDER="algorithmic_parity_binary20 algorithmic_permute_three20"
# Addition's target (round 42): the addition table's UT and its same-size
# Transformer, read on training's positions, each run's checkpoint chosen on
# valid_long's char-acc (evaluated every 500 of 4,000 steps).
# ADD_SEEDS (1 2 3) names the seeds: ADD_SEEDS=4 is the held-out seed (round 43).
ADD_JOBS=$(for r in universal_transformer_randomized transformer_equal_params_randomized; do
    for s in ${ADD_SEEDS:-1 2 3}; do echo "$r:algorithmic_addition_decimal40:$s"; done
done)
# The length table (round 42): problem by problem, the addition target's first,
# each problem's five rows seed by seed, evaluated every 1,000 steps. Parity
# last (round 44): with this table's recipe (final bit only, no labels, no
# curriculum) no model has fitted even the training lengths (P1, P2 and
# parity's first jobs here), so reverse and copy take the lanes first.
LENGTH_JOBS=$(for p in addition_decimal40 reverse_decimal40 identity_decimal40 parity_binary40; do
    for s in 1 2 3; do
        for r in ut_length_depth ut_fixed_depth transformer_equal_params \
            transformer_equal_compute transformer_by_task; do
            echo "$r:algorithmic_$p:$s"
        done
    done
done)
# The base's seeds whose runs were lost before their test figures were kept.
TABLE3_RERUN_SEEDS="1 2"
# Table 3's rows (the base first, round 28's order), three seeds each.
TABLE3_ROWS="t3_base t3_smoothing0 t3_learned t3_separate t3_heads1 t3_heads16 t3_keys16
             t3_layers1 t3_layers4 t3_width64 t3_width256 t3_dropout0"

state_jobs() {  # state_jobs [problems]: the state table's 30 jobs, <row>:<problem>:<seed>,
    local p r s  # round 22's order (S3 first) unless the problems' order is given
    for p in ${1:-algorithmic_permute_three20 algorithmic_parity_binary20}; do
        for r in ut_wavefront transformer_relative_equal_params transformer_relative \
            ut_relative_fixed transformer_relative_equal_compute; do
            for s in 1 2 3; do echo "$r:$p:$s"; done
        done
    done
}

table3_jobs() {  # table3_jobs "<seeds>" "<rows>": <row>:<seed>, seed-major as table3_queue.sh
    local seed row
    for seed in $1; do for row in $2; do echo "$row:$seed"; done; done
}

done_count() {  # done_count <queue dir> <job>...: how many of the jobs are marked done
    local queue=$1 job n=0
    shift
    for job in "$@"; do [ -e "$queue/$job.done" ] && n=$((n + 1)); done
    echo "$n of $# done"
}

snapshot() {  # snapshot <name> <commit>: installed once
    [ -x "$EXP/$1/venv/bin/t2t-train" ] || "$here/snapshot.sh" "$2" "$1"
}

rebuild() {
    if [ ! -d "$EXP/catalogs/debs" ]; then
        apt-get update -q >"$EXP/logs/apt.log"
        "$repo/examples/gettext_corpus.sh" "$EXP/catalogs" >"$EXP/logs/corpus.log" 2>&1
    fi
    snapshot "$TABLE3_SNAP" "$TABLE3_COMMIT"
    SNAP=$TABLE3_SNAP "$here/datagen_once.sh" translate_gettext "$EXP/data" \
        --train_files="$EXP/catalogs" --language_pair=en-de --vocab_size=8000
}

table3_env() {  # Table 3's snapshot, budget and recipe, for its queue and its rerun
    snapshot "$TABLE3_SNAP" "$TABLE3_COMMIT"
    export SNAP=$TABLE3_SNAP STEPS=3000 EVAL_EVERY=500 TEST_SPLIT=test \
        HPARAMS=batch_size=2048,learning_rate_decay_steps=1500
}

lanes() {  # lanes <queue script> <log name> <core>...: each in a session of its own
    local script=$1 name=$2 core
    shift 2
    for core in "$@"; do
        # A session is one scheduling group (the kernel's autogrouping), which
        # its processes' nice values do not lower: the group's own nice value,
        # set from inside the new session, makes the lane give way to anything
        # else the machine runs (CI, a test suite) and run at full speed alone.
        setsid nohup bash -c '[ -w /proc/self/autogroup ] && echo 19 >/proc/self/autogroup
            exec "$@"' lane "$here/$script" "$core" >>"$EXP/logs/${name}_lane$core.out" 2>&1 &
        echo "$name lane $core: pid $!, log $EXP/logs/${name}_lane$core.out"
    done
}

case ${1:-} in
rebuild) rebuild ;;
table3)
    shift
    table3_env
    export OUT=$EXP/table3b QUEUE=$EXP/q3b RECORDS=$TABLE3_RECORDS ROWS=$TABLE3_ROWS
    lanes table3_queue.sh table3b "$@"
    ;;
table3-rerun)
    shift
    table3_env
    export OUT=$EXP/table3t QUEUE=$EXP/q3t RECORDS=${TABLE3_RECORDS}_rerun \
        TEST_RECORDS=$TABLE3_RECORDS ROWS=t3_base SEEDS="$TABLE3_RERUN_SEEDS"
    lanes table3_queue.sh table3t "$@"
    ;;
state)
    shift
    snapshot "$STATE_SNAP" "$STATE_COMMIT"
    export SNAP=$STATE_SNAP RECORDS=$repo/docs/records/algo JOBS=$(state_jobs)
    lanes state_queue.sh state "$@"
    ;;
state-best)
    shift
    snapshot "$BEST_SNAP" "$BEST_COMMIT"
    export SNAP=$BEST_SNAP OUT=$EXP/state_best QUEUE=$EXP/qsb KEEP_BEST=$STATE_KEEP_BEST \
        RECORDS=$repo/docs/records/algo_best LAST_RECORDS=$repo/docs/records/algo \
        JOBS=$(state_jobs "$BEST_ORDER")
    lanes state_queue.sh state_best "$@"
    ;;
add-best)
    shift
    snapshot "$BEST_SNAP" "$BEST_COMMIT"
    export SNAP=$BEST_SNAP OUT=$EXP/add_best QUEUE=$EXP/qab KEEP_BEST=valid_long/accuracy \
        STEPS=4000 EVAL_EVERY=500 HPARAMS=position_eval=spread \
        RECORDS=$repo/docs/records/add_best LAST_RECORDS=$repo/docs/records/add JOBS=$ADD_JOBS
    lanes state_queue.sh add_best "$@"
    ;;
length)
    shift
    snapshot "$LENGTH_SNAP" "$LENGTH_COMMIT"
    export SNAP=$LENGTH_SNAP OUT=$EXP/length_table QUEUE=$EXP/ql KEEP_BEST=valid_long/accuracy \
        STEPS=4000 EVAL_EVERY=1000 RECORDS=$repo/docs/records/length_best \
        LAST_RECORDS=$repo/docs/records/length JOBS=$LENGTH_JOBS
    lanes state_queue.sh length "$@"
    ;;
status)
    echo "table3: $(done_count "$EXP/q3b" $(table3_jobs "1 2 3" "$TABLE3_ROWS"));" \
        "table3-rerun: $(done_count "$EXP/q3t" $(table3_jobs "$TABLE3_RERUN_SEEDS" t3_base));" \
        "state: $(done_count "$EXP/qs" $(state_jobs));" \
        "state-best: $(done_count "$EXP/qsb" $(state_jobs "$BEST_ORDER"));" \
        "add-best: $(done_count "$EXP/qab" $ADD_JOBS);" \
        "length: $(done_count "$EXP/ql" $LENGTH_JOBS)"
    for log in "$EXP"/logs/*_lane*.out; do
        [ -e "$log" ] || continue
        echo "$(basename "$log"): $(grep -E ' lane [0-9a-z]+: ' "$log" | tail -n 1)" \
            "| $(grep -o 'step [0-9]*: loss=[0-9.]*' "$log" | tail -n 1)"
    done
    ;;
*)
    sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'
    exit 1
    ;;
esac
