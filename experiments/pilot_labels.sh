#!/bin/bash
# docs/length_depth.md round 14: a pilot with labels on every input position.
#   pilot_labels.sh <ut|tf|ut_rel|tf_rel> <problem> <name> [core] [more hparams, k=v,...]
# (more: keys added, or given a value in place of the family's)
# ut: the length-scaled UT of pilot S3 (n + 1 steps, +-1 in training, the input
#     every step, a causal encoder, no step signal); tf: the Transformer control
#     (transformer_algorithmic_tiny, 2 + 2, d = 128). Both: a causal encoder,
#     shared random position offsets below 400, a length curriculum from 3
#     positions (one more every 500 steps), input_label_loss_weight=1.0, 12,000
#     steps, dev and valid_long evaluated every 1,000. ut_rel, tf_rel (round 16):
#     the same with relative positions (max_relative_position=2) in place of
#     the sinusoids. Output: $EXP/length/<name>. Idempotent: the same command
#     resumes a stopped run. SEED (default 1) sets the random seed; EVAL_SPLITS
#     (default dev,valid_long) the splits evaluated every 1,000 steps.
set -euo pipefail
here=$(dirname "$0")
. "$here/env.sh"
family=$1
problem=$2
name=$3
core=${4:-}
more=${5:-}
positions=position_start_index=random,position_start_max=400
case $family in
    *_rel) positions=position_embedding=none,max_relative_position=2 ;;
esac
common=$positions,causal_encoder=True
common=$common,curriculum_start_length=3,curriculum_steps_per_length=500,input_label_loss_weight=1.0
case $family in
    ut | ut_rel)
        model=(--model=universal_transformer --hparams_set=universal_transformer_algorithmic_tiny)
        hp=rec_steps_per_symbol=1.0,rec_steps_offset=1,rec_steps_random=1,rec_input_every_step=True
        hp=$hp,rec_decoder_steps=4,num_rec_steps=208,step_timing_signal_type=none,$common
        ;;
    tf | tf_rel)
        model=(--model=transformer --hparams_set=transformer_algorithmic_tiny)
        hp=$common
        ;;
    *)
        echo "pilot_labels.sh: family must be ut, tf, ut_rel or tf_rel, got '$family'" >&2
        exit 1
        ;;
esac
"$here/datagen_once.sh" "$problem" "$EXP/algo"
mkdir -p "$EXP/length"
# `more` adds keys or replaces the family's value of a key it names.
for pair in ${more//,/ }; do
    hp=$(printf ',%s,' "$hp" | sed "s/,${pair%%=*}=[^,]*,/,/; s/^,//; s/,$//")
done
[ -n "$more" ] && hp=$hp,$more
pin "$core" "$BIN/t2t-train" --problem="$problem" "${model[@]}" --hparams="$hp" \
    --random_seed="${SEED:-1}" --train_steps=12000 --local_eval_frequency=1000 \
    --save_checkpoints_steps=250 --eval_splits="${EVAL_SPLITS:-dev,valid_long}" --eval_steps=-1 \
    --data_dir="$EXP/algo" --output_dir="$EXP/length/$name"
