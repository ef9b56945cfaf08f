"""The block t2t-train logs before its first step: what will be trained, on what, how.

A run of hours should say at once what it is doing: the data (examples and
tokens per split, as datagen counted them), the vocabulary, the model and
its size, where it runs and in what precision, and the plan (steps,
evaluation and checkpoint cadence, time budget).
"""

import keras
import tensorflow as tf

from t2t_lite import experiment as experiment_lib
from t2t_lite import sequences
from t2t_lite.data import problem as problem_lib
from t2t_lite.data import tfrecord
from t2t_lite.training import periodic
from t2t_lite.training.config import PRECISIONS, TrainConfig


def startup_summary(
    experiment: experiment_lib.Experiment,
    problem: problem_lib.Problem,
    data_dir: str,
    model: keras.Model,
    strategy: tf.distribute.Strategy,
    config: TrainConfig,
    start_step: int,
) -> str:
    """The summary's lines (joined), from the run's own objects."""
    hp = experiment.hparams
    splits = []
    for split in sorted(problem.splits):
        stats = tfrecord.read_stats(problem.filepaths(data_dir, split))
        if stats is None:
            splits.append(f"{split} (counts not recorded: data from an older t2t-datagen)")
        else:
            splits.append(
                f"{split} {stats['examples']:,} examples ({stats['inputs_tokens']:,} source, "
                f"{stats['targets_tokens']:,} target tokens)"
            )
    replicas = strategy.num_replicas_in_sync
    try:
        devices = ", ".join(strategy.extended.worker_devices)
    except RuntimeError:  # the default strategy: TensorFlow's placement on this machine
        gpus = tf.config.list_logical_devices("GPU")
        devices = gpus[0].name if gpus else "the CPU"
    batch = hp.batch_size * replicas * config.accumulation_steps
    checkpoints = checkpoint_cadence(config)
    budget = f"; time budget {config.train_minutes:g} min" if config.train_minutes else ""
    resume = f"resuming at step {start_step:,}" if start_step else "from scratch"
    model_line = (
        f"model {experiment.model}, hparams set {experiment.hparams_set}: "
        f"{model.count_params():,} parameters"
    )
    device_line = (
        f"strategy {config.strategy} on {devices} ({replicas} replica(s)); precision "
        f"{PRECISIONS[config.mixed_precision]}; XLA {'on' if config.xla_compile else 'off'}"
    )
    batch_line = (
        f"batches of {hp.batch_size:,} tokens per replica ({batch:,} per update) in "
        f"{len(sequences.bucket_lengths(hp.max_length, hp.length_bucket_step))} length "
        f"buckets (length_bucket_step {hp.length_bucket_step:g}); max_length {hp.max_length}"
    )
    if hp.curriculum_start_length:
        batch_line += (
            f"; length curriculum from {hp.curriculum_start_length} positions, one more "
            f"every {hp.curriculum_steps_per_length:,} steps"
        )
    plan_line = (
        f"plan: {resume} to {config.train_steps:,}; evaluate every "
        f"{config.local_eval_frequency} steps; checkpoint {checkpoints}{budget}"
    )
    lines = [
        f"problem {problem.name}, data in {data_dir}: {'; '.join(splits)}",
        f"vocabulary {problem.vocab_size:,} tokens",
        model_line,
        device_line,
        batch_line,
        plan_line,
    ]
    return "Training:\n  " + "\n  ".join(lines)


def checkpoint_cadence(config: TrainConfig) -> str:
    """When the loop saves, as its Schedule decides (periodic.py): by steps, by
    the clock, or both, and always at the last step."""
    save = periodic.Schedule.from_config(config).save
    cadence = [f"every {save.steps} steps"] * bool(save.steps)
    cadence += [f"every {save.secs:g} s"] * bool(save.secs)
    return " and ".join([*cadence, "at the last step"])
