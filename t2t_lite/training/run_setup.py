"""Setting up a training run: strategy, run-directory ownership, experiment and data.

Everything a run needs before a model exists; the trainer builds the model,
optimizer, checkpoints and compiled steps on top of it.
"""

import dataclasses
import os

import tensorflow as tf
from absl import logging

from t2t_lite import experiment as experiment_lib
from t2t_lite import files, run_dir, run_lock
from t2t_lite.data import problem as problem_lib
from t2t_lite.data import tfrecord
from t2t_lite.problems import datagen
from t2t_lite.training import distribution
from t2t_lite.training.config import TrainConfig, split_metric

# How long a trainer waits for another writer of its data dir (a trainer or a
# t2t-datagen generating the same problem) before it gives up with one line:
# longer than the datagen of any registered problem on a CPU.
DATA_WAIT_S = 2 * 3600.0


@dataclasses.dataclass(frozen=True)
class RunSetup:
    """A run ready to train: its strategy, lock, and problem bound to its data."""

    strategy: tf.distribute.Strategy
    chief: bool  # writes checkpoints, summaries and metrics
    problem: problem_lib.Problem
    lock: run_lock.RunLock
    data_dir: str
    output_dir: str


def prepare(
    experiment: experiment_lib.Experiment, data_dir: str, output_dir: str, config: TrainConfig
) -> RunSetup:
    """Makes the strategy, takes the run lock (chief), checks and writes
    experiment.json, generates missing data (chief), binds the problem,
    checks that no split is empty and saves the vocabulary into the run.
    """
    strategy = distribution.make_strategy(config.strategy, list(config.devices))
    chief = distribution.is_chief(strategy)
    problem = experiment.build_problem()
    asked = [("--eval_splits", split) for split in config.eval_splits]
    if config.keep_best:
        asked.append(("--keep_best", split_metric(config.keep_best)[0]))
    for flag, split in asked:
        if split not in problem.splits:
            raise ValueError(
                f"{flag}: {problem.name} has no split {split!r}; "
                f"its splits are {', '.join(sorted(problem.splits))}"
            )
    lock = run_lock.RunLock(output_dir)
    if chief:  # one trainer per run dir; the chief holds it for its workers
        files.check_writable_dir(output_dir, "--output_dir")
        lock.acquire()
    if chief:
        run_dir.claim(experiment, output_dir)
    else:
        experiment.check_matches(output_dir)
    if problem.missing_data(data_dir):  # first: a problem may bind its data dir here
        if not chief:
            raise FileNotFoundError(
                f"no {problem.name} data in {data_dir!r}: run t2t-datagen before "
                "starting the workers (only the chief would generate it)"
            )
        files.check_writable_dir(data_dir, "--data_dir")
        # A writer at work there (another trainer, a t2t-datagen) is waited for;
        # then what it left is looked at again, with nobody else writing.
        with datagen.data_dir_lock(data_dir, wait_s=DATA_WAIT_S) as left_by_the_dead:
            missing = problem.missing_data(data_dir)
            expected = problem.data_files(data_dir)
            if missing and len(missing) < len(expected):
                _refuse_partial(problem, data_dir, missing, len(expected), left_by_the_dead)
            if missing:
                logging.info(
                    "No data for %s in %s: generating it (seed %d, as t2t-datagen's default).",
                    problem.name,
                    data_dir,
                    datagen.DEFAULT_SEED,
                )
                # Not the training seed: data must not depend on which trainer got here first.
                problem.generate_data(data_dir, seed=datagen.DEFAULT_SEED)
    problem.bind(data_dir)
    for split in problem.splits:  # an empty split would train or evaluate on nothing
        paths = problem.split_files(data_dir, split)
        _check_no_emptied_shard(paths)
        checked = [tfrecord.check_features(path) for path in paths]  # every shard, not the first
        if not any(checked):
            raise ValueError(
                f"the {split} split of {problem.name} in {data_dir!r} has no examples "
                f"({', '.join(paths)}): regenerate it with t2t-datagen from more data"
            )
    if chief:  # decoding and export read the vocabulary from the run dir
        run_dir.save_vocabulary(problem, output_dir)
    return RunSetup(strategy, chief, problem, lock, data_dir, output_dir)


def _check_no_emptied_shard(paths: list[str]) -> None:
    """A zero-byte shard of a split that datagen counted at least one example per
    shard for was emptied or replaced since: one error naming it. (Without the
    counts, from an older datagen, a warning: a split smaller than its shard
    count has empty shards by right.)"""
    stats = tfrecord.read_stats(paths) if paths else None
    for path in paths:
        if tf.io.gfile.stat(path).length:
            continue
        if stats is not None and stats["examples"] >= len(paths):
            raise ValueError(
                f"{path} is empty (0 bytes), but t2t-datagen wrote "
                f"{stats['examples']:,} examples into {len(paths)} shards; restore the file or "
                "regenerate the data with t2t-datagen"
            )
        logging.warning("%s is empty (0 bytes): it holds no example.", path)


def _refuse_partial(
    problem: problem_lib.Problem,
    data_dir: str,
    missing: list[str],
    total: int,
    left_by_the_dead: list[str],
) -> None:
    """Some of the data is there: regenerating would overwrite the rest, so say what is missing.

    Called holding the data dir's lock: files a writer left under temporary
    names (`left_by_the_dead`, removed) are of one that died, and that datagen
    is redone, as it would have been before it started.
    """
    ours = [p for p in left_by_the_dead if os.path.basename(p).startswith(f"{problem.name}-")]
    # Still there under an older temporary name: no live writer (the lock is ours).
    interrupted = ours + tf.io.gfile.glob(f"{data_dir.rstrip('/')}/{problem.name}-*.incomplete*")
    if interrupted:
        logging.warning(
            "%s: a datagen that did not finish (its process is gone) left %s; "
            "generating the data again.",
            data_dir,
            ", ".join(interrupted[:3]),
        )
        return
    shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    raise FileNotFoundError(
        f"{data_dir!r} holds part of {problem.name}'s data: {len(missing)} of {total} files "
        f"missing ({shown}); restore them, or regenerate all of it with t2t-datagen "
        f"--problem={problem.name} --data_dir={data_dir} (it rewrites every file)"
    )
