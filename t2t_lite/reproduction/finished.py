"""A comparison run's kept figures: its metrics.json once it spent its budget, or
under --keep_best its metrics_best.json (the best checkpoint's, with its own step)."""

import json
import os

import tensorflow as tf
from absl import logging

from t2t_lite import experiment, files
from t2t_lite.run_dir import METRICS_BEST_FILE, METRICS_FILE, METRICS_SOURCE
from t2t_lite.training import trainer


def figures(
    run_dir: str, exp: experiment.Experiment, data_dir: str, config: trainer.TrainConfig
) -> dict | None:
    """The metrics of a run of `exp` that already reached config.train_steps (or
    spent config.train_minutes) on data_dir with config's seed, else None (the
    trainer resumes or re-evaluates it).

    A run directory that holds another experiment, or figures of another data
    dir or seed, is refused with one line: its figures would be stale. Figures
    taken before the data dir's files were rewritten are taken again.
    """
    exp.check_matches(run_dir)  # another model, problem or hparams: ValueError
    last = _figures(os.path.join(run_dir, METRICS_FILE), exp, data_dir, config, "")
    if last is None:
        return None
    step, source, metrics = last
    if step is not None and step > config.train_steps:
        raise ValueError(trainer.past_budget(run_dir, step, config.train_steps))
    budget_spent = config.train_minutes and source.get("stopped_by") == "time budget"
    if step != config.train_steps and not budget_spent:
        return None  # the trainer resumes it
    if not config.keep_best:
        return metrics
    # The best checkpoint's figures (its step is its own, not the run's last).
    best = _figures(os.path.join(run_dir, METRICS_BEST_FILE), exp, data_dir, config,
                    config.keep_best)  # fmt: skip
    return None if best is None else best[2]


def _figures(path: str, exp, data_dir: str, config, keep_best: str) -> tuple | None:
    """(step, source, figures) of a metrics file made with config's data dir, seed,
    budget and `keep_best`; None if absent or stale (ValueError if made otherwise)."""
    if not tf.io.gfile.exists(path):
        return None
    try:
        metrics = json.loads(files.read_text(path))
        step = metrics.pop("step", None)
        source = metrics.pop(METRICS_SOURCE, None)
        if not isinstance(step, int | None) or not isinstance(source, dict | None):
            raise TypeError("its step or source has the wrong type")
        for split, figures in metrics.items():
            if split != "selected_by" and not (
                isinstance(figures, dict)
                and all(v is None or isinstance(v, int | float) for v in figures.values())
            ):
                raise TypeError(f"{split} is not an object of numbers")
    except (AttributeError, TypeError, ValueError) as err:
        raise ValueError(f"{path}: not a valid metrics file ({err})") from None
    if source is None:  # written before metrics.json named its source: evaluate again
        logging.info("%s names no data_dir; evaluating its checkpoint on %s.", path, data_dir)
        return None
    wanted = {
        "data_dir": files.absolute(data_dir),
        "random_seed": config.random_seed,
        "train_minutes": config.train_minutes,
        **({"keep_best": keep_best} if keep_best else {}),
    }
    differs = [key for key in sorted(wanted) if source.get(key) != wanted[key]]
    if differs:
        found = ", ".join(f"{key}={source.get(key)!r}" for key in differs)
        asked = ", ".join(f"{key}={wanted[key]!r}" for key in differs)
        raise ValueError(
            f"{os.path.dirname(path)!r} holds a finished run with {found}, not {asked}; "
            "use a new --output_dir or the same flags"
        )
    if source.get("data_stamp") != exp.build_problem().data_stamp(data_dir):
        logging.info("%s: the data files changed since; evaluating its checkpoint again.", path)
        return None
    return step, source, metrics
