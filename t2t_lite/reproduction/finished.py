"""A comparison run's kept figures: its metrics.json once it spent its budget, or
under --keep_best its metrics_best.json (the best checkpoint's, with its own step)."""

import os

import tensorflow as tf
from absl import logging

from t2t_lite import experiment, stamp
from t2t_lite import run_dir as run_dir_lib
from t2t_lite.run_dir import METRICS_BEST_FILE, METRICS_FILE
from t2t_lite.training import trainer


def figures(
    run_dir: str, exp: experiment.Experiment, data_dir: str, config: trainer.TrainConfig
) -> dict | None:
    """The metrics of a run of `exp` that already reached config.train_steps (or
    spent config.train_minutes) on data_dir with config's seed, else None (the
    trainer resumes or re-evaluates it).

    A run directory that holds another experiment, or figures of another data
    dir, seed or budget, is refused with one line: its figures would be stale.
    Figures taken before the data dir's files were rewritten are taken again.
    """
    exp.check_matches(run_dir)  # another model, problem or hparams: ValueError
    problem = exp.build_problem()
    last = _figures(os.path.join(run_dir, METRICS_FILE), problem, data_dir, config, "")
    if last is None:
        return None
    step, stopped_by, metrics = last
    if step is not None and step > config.train_steps:
        raise ValueError(trainer.past_budget(run_dir, step, config.train_steps))
    budget_spent = config.train_minutes and stopped_by == "time budget"
    if step != config.train_steps and not budget_spent:
        return None  # the trainer resumes it
    if not config.keep_best:
        return metrics
    # The best checkpoint's figures (its step is its own, not the run's last).
    best = _figures(
        os.path.join(run_dir, METRICS_BEST_FILE), problem, data_dir, config, config.keep_best
    )
    return None if best is None else best[2]


# The splits a table reads from every run (the trainer's final evaluation writes
# every split but train): a metrics file without one is damaged.
TABLE_SPLITS = ("dev", "test")

# What a run directory's flags set: a difference refuses the directory, where
# other data files (data_stamp) only make its figures be taken again.
_FLAGS = ("data_dir", "random_seed", "train_minutes", "keep_best")


def _figures(path: str, problem, data_dir: str, config, keep_best: str) -> tuple | None:
    """(step, stopped_by, figures) of a metrics file that depends on what
    config's data dir, seed, budget and `keep_best` give now; None if absent or
    stale (ValueError if made with other flags)."""
    found = run_dir_lib.read_metrics(path)  # a damaged file: ValueError naming it
    if found is None:
        return None
    kept, metrics = found
    try:
        step = metrics.pop("step", None)
        stopped_by = metrics.pop("stopped_by", None)
        if not isinstance(step, int | None):
            raise TypeError("its step has the wrong type")
        for split, figures in metrics.items():
            if split != "selected_by" and not (
                isinstance(figures, dict)
                and all(v is None or isinstance(v, int | float) for v in figures.values())
            ):
                raise TypeError(f"{split} is not an object of numbers")
        for split in TABLE_SPLITS:
            if split in problem.splits and split not in metrics:
                raise TypeError(f"its figures have no {split!r} split")
    except (AttributeError, TypeError) as err:
        raise ValueError(f"{path}: not {run_dir_lib.METRICS_KIND} ({err})") from None
    if not kept:  # written before metrics.json named its source: evaluate again
        logging.info("%s names no data_dir; evaluating its checkpoint on %s.", path, data_dir)
        return None
    # The checkpoint of the kept name as it is now; gone, its figures are taken again.
    folder = os.path.dirname(path)
    if keep_best:
        folder = os.path.join(folder, run_dir_lib.BEST_DIR)
    evaluated = os.path.join(folder, os.path.basename(str(kept.get("checkpoint", ""))))
    if "checkpoint" not in kept or not tf.io.gfile.exists(evaluated + ".index"):
        evaluated = ""
    wanted = run_dir_lib.metrics_depend_on(
        problem, data_dir, config.random_seed, config.train_minutes, keep_best, evaluated
    )
    names = stamp.differs(kept, wanted)
    refused = [name for name in names if name in _FLAGS]
    if refused:
        found = ", ".join(f"{key}={kept.get(key)!r}" for key in refused)
        asked = ", ".join(f"{key}={wanted.get(key)!r}" for key in refused)
        raise ValueError(
            f"{os.path.dirname(path)!r} holds a finished run with {found}, not {asked}; "
            "use a new --output_dir or the same flags"
        )
    if names:
        logging.info(
            "%s: its data files or checkpoint changed since; evaluating again (%s).",
            path,
            ", ".join(names),
        )
        return None
    return step, stopped_by, metrics
