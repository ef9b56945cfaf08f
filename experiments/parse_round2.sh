#!/usr/bin/env bash
# Parsing round 2 (docs/parsing.md): one run of a recipe on NLTK's WSJ sample,
# resumable (the same line continues from the newest checkpoint).
#   parse_round2.sh datagen TREEBANK      both data dirs (XX and words targets, the whole vocabulary)
#   parse_round2.sh train P MODEL HPARAMS_SET SEED STEPS [HPARAMS]
# EXP (/tmp/t2t_exp) holds data_<problem>/ and r1/seed<k>/<problem>/<hparams set>/.
set -u
here=$(dirname "$0")
SNAP=${SNAP:-path}
. "$here/env.sh"
export TF_NUM_INTEROP_THREADS=1
case ${1:-} in
datagen)
    for p in parsing_from_files_xx parsing_from_files_words; do
        "$BIN/t2t-datagen" --problem=$p --data_dir="$EXP/data_$p" \
            --train_files="${2:?TREEBANK: the unzipped treebank/combined folder}" --vocab_size=16000
    done
    ;;
train)
    P=$2 M=$3 H=$4 S=$5 N=$6 X=${7:-}
    O=$EXP/r1/seed$S/$P/$H${X:+_$(echo "$X" | tr ',=' '_-')}
    mkdir -p "$O"
    nice -n 19 "$BIN/t2t-train" --problem="$P" --model="$M" --hparams_set="$H" ${X:+--hparams="$X"} \
        --data_dir="$EXP/data_$P" --output_dir="$O" --train_steps="$N" --local_eval_frequency=500 \
        --save_checkpoints_secs=600 --keep_checkpoint_max=20 --log_step_count_steps=100 \
        --random_seed="$S" >> "$O/train.log" 2>&1
    echo "exit $? $(date -u)" >> "$O/train.log"
    ;;
*)
    sed -n 2,7p "$0"
    exit 1
    ;;
esac
