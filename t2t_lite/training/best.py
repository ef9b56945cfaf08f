"""The best checkpoint by a validation metric (--keep_best=SPLIT/METRIC).

A run's kept checkpoints are its newest few (--keep_checkpoint_max), so a run
that finds a rule and loses it late (a gradient spike) keeps only the lost
one. With --keep_best, every periodic evaluation of SPLIT (and one at the last
step) that improves METRIC writes the whole training state to

  <output_dir>/best/model.ckpt-<step>.*   the best checkpoint so far (one)
  <output_dir>/best/best.json             its step, the split, the metric and its value

so `--checkpoint_path=<output_dir>/best` reads it in t2t-decode, t2t-export and
t2t-visualize, and the trainer's final evaluation evaluates it too
(run_dir.METRICS_BEST_FILE). best.json is written after its checkpoint and
names it, so a kill between the two leaves the previous best whole: a
checkpoint best.json does not name is a leftover, removed at the next start.
"""

import dataclasses
import json
import math
import os

import tensorflow as tf
from absl import logging

from t2t_lite import checkpoints, cli, files, run_dir
from t2t_lite.training import config, distribution

BEST_FILE = "best.json"
# Metrics that are better lower; every other one (accuracies, BLEU) is better higher.
LOWER_IS_BETTER = ("loss", "perplexity")


@dataclasses.dataclass(frozen=True)
class Spec:
    """--keep_best's SPLIT/METRIC."""

    split: str
    metric: str

    @classmethod
    def parse(cls, text: str) -> "Spec":
        return cls(*config.split_metric(text))

    def __str__(self) -> str:
        return f"{self.split}/{self.metric}"

    def better(self, value: float, than: float) -> bool:
        """Whether `value` improves on `than` (strictly: a tie keeps the earlier step)."""
        if self.metric.endswith(LOWER_IS_BETTER):
            return value < than
        return value > than


class BestCheckpoint:
    """Keeps the checkpoint of the best evaluation of one split's metric.

    Every worker calls `consider` (a save is a collective operation); the
    chief's copy is the kept one, as with the run's other checkpoints.
    """

    def __init__(self, checkpoint: tf.train.Checkpoint, output_dir: str, strategy, text: str):
        self.spec = Spec.parse(text)
        self.checkpoint = checkpoint
        self.directory = os.path.join(output_dir, run_dir.BEST_DIR)
        self.save_dir = distribution.worker_dir(self.directory, strategy)
        self.chief = distribution.is_chief(strategy)
        self.kept = self._read()

    @classmethod
    def open(cls, checkpoint, output_dir: str, strategy, train_config) -> "BestCheckpoint | None":
        """The run's best checkpoint under train_config.keep_best (None: not kept)."""
        if not train_config.keep_best:
            return None
        return cls(checkpoint, output_dir, strategy, train_config.keep_best)

    @property
    def step(self) -> int | None:
        return None if self.kept is None else self.kept["step"]

    @property
    def path(self) -> str | None:
        """The kept checkpoint's prefix (None before the first evaluation)."""
        if self.kept is None:
            return None
        return os.path.join(self.directory, f"{checkpoints.CHECKPOINT_NAME}-{self.step}")

    def _read(self) -> dict | None:
        """best.json, checked against --keep_best; the chief removes what a kill left."""
        path = os.path.join(self.directory, BEST_FILE)
        kept = None
        if tf.io.gfile.exists(path):
            try:
                kept = json.loads(files.read_text(path))
                kept = {**kept, "step": int(kept["step"]), "value": float(kept["value"])}
            except (AttributeError, KeyError, TypeError, ValueError) as err:
                raise ValueError(
                    f"{path}: not a best.json (step, split, metric, value): {err}; "
                    f"move {self.directory} away to keep a new best"
                ) from None
        if kept is not None:
            spec = f"{kept.get('split')}/{kept.get('metric')}"
            if spec != str(self.spec):
                raise ValueError(
                    f"--keep_best={self.spec}: {path} keeps the best by {spec}; "
                    f"use --keep_best={spec} or move {self.directory} away"
                )
            if not tf.io.gfile.exists(self._prefix(kept["step"]) + ".index"):
                raise ValueError(
                    f"{path} names step {kept['step']}, whose checkpoint is not in "
                    f"{self.directory}; restore it or move {self.directory} away"
                )
        if self.chief and tf.io.gfile.exists(self.directory):
            for leftover in checkpoints.remove_save_leftovers(self.directory):
                logging.warning("Removed %s, left by a save that was interrupted.", leftover)
            self._remove_others(None if kept is None else kept["step"])
        return kept

    def _prefix(self, step: int) -> str:
        return os.path.join(self.directory, f"{checkpoints.CHECKPOINT_NAME}-{step}")

    def _remove_others(self, step: int | None) -> None:
        """Removes every checkpoint in best/ but `step`'s (None: all of them)."""
        for prefix in checkpoints.by_step(self.directory):
            if step is not None and prefix == self._prefix(step):
                continue
            for path in tf.io.gfile.glob(prefix + ".*"):
                tf.io.gfile.remove(path)
            logging.info("Removed %s, no longer the best checkpoint.", prefix)

    def check_metric(self, metrics: dict[str, float]) -> None:
        """Refuses --keep_best when an evaluation of its split (`metrics`) lacks its metric."""
        if self.spec.metric not in metrics:
            raise cli.UserError(
                f"--keep_best={self.spec}: the evaluation of {self.spec.split} has no "
                f"metric {self.spec.metric!r}; it has {', '.join(sorted(metrics))}"
            )

    def consider(self, step: int, metrics: dict[str, float]) -> bool:
        """Keeps the current state as the best if metrics (the split's evaluation at
        `step`) improve on the kept one -> whether it did."""
        self.check_metric(metrics)
        value = float(metrics[self.spec.metric])
        if math.isnan(value):  # never the best
            return False
        if self.kept is not None and not self.spec.better(value, self.kept["value"]):
            return False
        prefix = os.path.join(self.save_dir, f"{checkpoints.CHECKPOINT_NAME}-{step}")
        try:
            self.checkpoint.write(prefix)
        except Exception:  # a full disk: nothing of this step's copy stays
            checkpoints.remove_save_leftovers(self.save_dir)
            for path in tf.io.gfile.glob(prefix + ".*"):
                tf.io.gfile.remove(path)
            raise
        kept = {"step": step, "split": self.spec.split, "metric": self.spec.metric, "value": value}
        if not self.chief:  # a worker's copy only served the collective save
            tf.io.gfile.rmtree(self.save_dir)
        else:
            path = os.path.join(self.directory, BEST_FILE)
            files.write_atomically(path, files.strict_json(kept))  # after the checkpoint
            self._remove_others(step)
            logging.info(
                "Best %s so far at step %d: %.4g; kept in %s.",
                self.spec,
                step,
                value,
                self.directory,
            )
        self.kept = kept
        return True
