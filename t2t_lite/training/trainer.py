"""The custom training loop, written for tf.distribute (set-up: run_setup.py)."""

import os

import keras
import tensorflow as tf
from absl import logging

from t2t_lite import checkpoints, cli, run_dir, stamp
from t2t_lite import experiment as experiment_lib
from t2t_lite.data import batching, tfrecord
from t2t_lite.data import problem as problem_lib
from t2t_lite.training import (
    best,
    distribution,
    evaluation,
    periodic,
    report,
    run_setup,
    steps,
    stopping,
    summary,
)
from t2t_lite.training.config import TrainConfig

METRICS_FILE = run_dir.METRICS_FILE


NonFiniteLossError = report.NonFiniteLossError


class Trainer:
    """Owns the model, optimizer, checkpoints and compiled steps of one run."""

    def __init__(
        self,
        experiment: experiment_lib.Experiment,
        data_dir: str,
        output_dir: str,
        config: TrainConfig,
    ):
        self.experiment = experiment
        self.hp = experiment.hparams
        self.data_dir = data_dir
        self.output_dir = output_dir
        self.config = config
        run = run_setup.prepare(experiment, data_dir, output_dir, config)
        self.strategy, self.chief, self.problem, self.lock = (
            run.strategy,
            run.chief,
            run.problem,
            run.lock,
        )
        keras.utils.set_random_seed(config.random_seed)
        with self.strategy.scope():
            self.model, self.optimizer, self.step = steps.build_training_state(
                experiment, self.problem.vocab_size, config.mixed_precision, config.train_steps
            )
        self.checkpoint = checkpoints.make_checkpoint(self.model, self.optimizer, self.step)
        # Every worker takes part in saving; only the chief's copy is kept.
        self.save_dir = distribution.worker_dir(output_dir, self.strategy)
        for path in checkpoints.remove_save_leftovers(self.save_dir):
            logging.warning("Removed %s, left by a save that was interrupted.", path)
        for path in checkpoints.list_every_checkpoint(self.save_dir):
            logging.warning("Listed %s, which a save that was interrupted left unlisted.", path)
        self.manager = checkpoints.make_manager(
            self.checkpoint, self.save_dir, config.keep_checkpoint_max
        )
        self.best = best.BestCheckpoint.open(self.checkpoint, output_dir, self.strategy, config)
        # The chief's checkpoints, on every worker; a corrupt newest one is skipped.
        latest = checkpoints.restore_newest_readable(
            self.checkpoint, output_dir, self.model.weights
        )
        self._good_checkpoint = latest  # the newest checkpoint known to hold finite weights
        if latest:
            logging.info("Resumed from %s at step %d.", latest, int(self.step.numpy()))
        self._train_step = steps.make_train_step(
            self.model,
            self.optimizer,
            self.strategy,
            self.hp.label_smoothing,
            self.step,
            config.xla_compile,
            config.accumulation_steps,
            self.hp.clip_grad_norm,
        )
        # Signals and the actions' cadence; train() makes the run's own (budget, clocks).
        self.stop = stopping.StopConditions(self.strategy)
        self.schedule = periodic.Schedule.from_config(config)
        self._writers: dict[str, tf.summary.SummaryWriter] = {}  # "train", "eval_<split>"
        self._bleu = evaluation.BleuEvaluation(self.model, self.problem, config.eval_bleu_examples)
        self._ponder = evaluation.PonderImages(self.model)
        self._eval_data: dict[str, tf.distribute.DistributedDataset] = {}  # by split
        self._eval_step = evaluation.make_eval_step(
            self.model, self.strategy, self.hp.label_smoothing
        )

    # Datasets.

    def distributed_dataset(
        self, split: str, seed: int | None = None, length_limit: tf.Variable | None = None
    ) -> tf.distribute.DistributedDataset:
        max_length = self.hp.max_length if split == problem_lib.TRAIN else None

        def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
            return self.problem.dataset(
                self.data_dir,
                split,
                self.hp.batch_size,
                max_length=max_length,
                seed=seed,
                input_context=context,
                length_limit=length_limit,
                input_labels=self.hp.input_label_loss_weight > 0,
                length_bucket_step=self.hp.length_bucket_step,
            )

        return self.strategy.distribute_datasets_from_function(dataset_fn)

    # Loop.

    def train(self) -> dict[str, dict[str, float]]:
        """Trains to config.train_steps (or its time budget), evaluating every
        local_eval_frequency steps and checkpointing on its cadence; returns the
        final metrics. A SIGTERM or SIGINT saves a checkpoint and raises
        cli.Interrupted (the binaries print its one line and exit 143 or 130)."""
        config = self.config
        start_step = step = int(self.step.numpy())
        if start_step > config.train_steps:  # its figures would carry the smaller budget's name
            raise ValueError(past_budget(self.output_dir, start_step, config.train_steps))
        if self.best is not None and start_step < config.train_steps:
            self._check_best_metric()  # a typo is refused now, not at the first evaluation
        writer = self._summary_writer("train")
        curriculum = self._curriculum(start_step)
        # Reseed the shuffle on resume so a restarted run does not replay its data.
        train_data = self.distributed_dataset(
            problem_lib.TRAIN,
            seed=config.random_seed + start_step,
            length_limit=curriculum.limit if curriculum else None,
        )
        paths = self.problem.filepaths(self.data_dir, problem_lib.TRAIN)
        if start_step < config.train_steps:
            steps.trace_for_every_shape(
                self._train_step, train_data.element_spec, config.accumulation_steps
            )
        iterator = iter(train_data)
        logging.info("%s", self._startup_summary(start_step))
        trained = run_dir.trained_seconds(self.output_dir, start_step)
        self.stop = stopping.StopConditions(self.strategy, config.train_minutes, trained)
        self.schedule = periodic.Schedule.from_config(config)
        progress_report = report.Report(writer, start_step, config.train_steps)
        pending = []  # step outputs not yet read back to the host
        # A Python step count: reading the step variable would sync every step.
        micro_batches = range(config.accumulation_steps)
        with self.stop:  # catches SIGTERM/SIGINT while the loop runs
            reason, _ = self.stop.decide()  # a budget already spent trains no step
            to_train = range(start_step + 1, config.train_steps + 1) if not reason else ()
            for step in to_train:
                batches = tuple(tfrecord.next_element(iterator, paths) for _ in micro_batches)
                pending.append(self._train_step(batches))
                _advance(curriculum, step)
                reason, clock = self.stop.decide(step, self.schedule.clock_due())
                last = step == config.train_steps or bool(reason)
                moment = periodic.Moment(step, first=step == start_step + 1, last=last, clock=clock)
                due = self.schedule.due(moment)
                if periodic.LOG in due:
                    self.lock.heartbeat()
                    lr, left = float(self.optimizer.learning_rate), self.stop.budget_left()
                    progress_report.log(pending, step, lr, left, self._last_good())
                    pending = []
                if periodic.SAVE in due:
                    self._save(step)
                if periodic.EVALUATE in due:
                    reason = self._evaluate_in_loop(step, saved=periodic.SAVE in due)
                if reason:
                    break
        if reason and reason != stopping.BUDGET:
            raise cli.Interrupted(
                f"stopped by {reason} at step {step}; saved {self._good_checkpoint}; "
                "run the same command again to resume from it",
                reason,
            )
        if self.best is not None and config.eval_steps >= 0:  # the last step is a candidate
            split = self.best.spec.split  # (on whole splits, by the final evaluation)
            metrics = self._split_metrics(split, config.eval_steps)
            logging.info("eval %s at step %d (--keep_best): %s", split, step, _line(metrics))
            self.best.consider(step, metrics)
        if reason:
            seconds = self.stop.seconds()
            logging.info(
                f"Time budget of {config.train_minutes:g} minutes reached at step {step} "
                f"({seconds:.0f} s of training in all)."
            )
        return self.final_evaluation("time budget" if reason else "train_steps")

    def _startup_summary(self, start_step: int) -> str:
        return summary.startup_summary(
            self.experiment,
            self.problem,
            self.data_dir,
            self.model,
            self.strategy,
            self.config,
            start_step,
        )

    def _evaluate_in_loop(self, step: int, saved: bool) -> str | None:
        """The periodic evaluation of every split of _eval_splits at `step` (keep-best
        considers each) -> why to stop now (a signal during it: the step is saved
        if it was not), or None."""
        for split in self._eval_splits():
            metrics = self._evaluate_split(split, step, self.config.eval_steps)
            if metrics is None:  # a signal cut the evaluation short
                break
            if self.best is not None and split == self.best.spec.split:
                self.best.consider(step, metrics)
        reason, _ = self.stop.decide()  # a signal during the evaluation
        if reason and not saved:
            self._save(step)
        return reason

    def _check_best_metric(self) -> None:
        """--keep_best's metric, checked against an evaluation of one batch of its
        split (the metrics a model reports depend on the model and problem)."""
        if self.best.spec.metric in evaluation.CORE_METRICS:
            return
        self.best.check_metric(self._split_metrics(self.best.spec.split, max_steps=1))

    def _curriculum(self, step: int) -> batching.LengthCurriculum | None:
        """The length curriculum at `step` (None: no curriculum)."""
        hp = self.hp
        if not hp.curriculum_start_length:
            return None
        longest = min(hp.max_length, self.problem.max_length(problem_lib.TRAIN))
        curriculum = batching.LengthCurriculum(
            hp.curriculum_start_length, hp.curriculum_steps_per_length, longest, step
        )
        logging.info(
            "Length curriculum: examples up to %d positions at step %d.", curriculum.current, step
        )
        return curriculum

    def _last_good(self) -> str:
        if self._good_checkpoint is None:
            return "No checkpoint with finite weights has been written."
        return f"The newest checkpoint with finite weights, {self._good_checkpoint}, is untouched."

    def _save(self, step: int) -> None:
        if not checkpoints.all_finite([*self.model.weights, *self.optimizer.variables]):
            raise NonFiniteLossError(
                f"non-finite weights after step {step}; they were not saved. "
                f"{self._last_good()} {report.ADVICE}"
            )
        with self.stop.saving():  # a second signal now waits for the save
            self._good_checkpoint = checkpoints.save(self.manager, step)
            if self.chief:
                run_dir.record_trained_seconds(self.output_dir, step, self.stop.seconds())
        self.schedule.saved()
        if not self.chief:  # a worker's copy only served the collective save
            tf.io.gfile.rmtree(self.save_dir)

    def _summary_writer(self, name: str) -> tf.summary.SummaryWriter:
        """The writer of `name`'s summaries, made on first use. Summaries are the
        chief's: other workers get a writer that writes nothing."""
        if name not in self._writers:
            self._writers[name] = (
                tf.summary.create_file_writer(os.path.join(self.output_dir, name))
                if self.chief
                else tf.summary.create_noop_writer()
            )
        return self._writers[name]

    def close(self) -> None:
        """Closes the summary writers (their files end here, not in the garbage
        collection that a program's exit skips: cli.start) and releases the
        run directory's lock."""
        try:
            for writer in self._writers.values():
                writer.close()
        finally:
            self.lock.release()

    def _eval_splits(self) -> tuple[str, ...]:
        """The splits of every periodic evaluation (--eval_splits, and --keep_best's)."""
        splits = self.config.eval_splits or (self.problem.eval_split,)
        if self.best is not None and self.best.spec.split not in splits:
            splits = (*splits, self.best.spec.split)
        return splits

    def _split_metrics(self, split: str, max_steps: int) -> dict | None:
        """The split's metrics over max_steps batches (< 0: whole), on the model's
        weights. In the training loop's evaluations: None as soon as a stop signal
        arrives (between batches; one process only: the workers of a job finish
        an evaluation together)."""
        if split not in self._eval_data:  # built once; each evaluation iterates it anew
            self._eval_data[split] = self.distributed_dataset(split)
        dataset = self._eval_data[split]
        paths = self.problem.filepaths(self.data_dir, split)
        stopped = None
        if self.stop.catching and not distribution.is_multi_worker(self.strategy):
            stopped = lambda: self.stop.signal_name is not None
        steps.trace_for_every_shape(self._eval_step, dataset.element_spec)
        metrics = evaluation.evaluate(self._eval_step, dataset, paths, max_steps, stopped)
        if metrics is None:
            return None
        if self.problem.reports_bleu and self.config.eval_bleu_examples:
            metrics["bleu"] = self._bleu(paths)
        return metrics

    def _evaluate_split(self, split: str, step: int, max_steps: int) -> dict[str, float] | None:
        """Evaluates and logs the split at `step` (None: a stop signal cut it short)."""
        metrics = self._split_metrics(split, max_steps)
        if metrics is None:
            logging.info("eval %s at step %d: cut short by %s", split, step, self.stop.signal_name)
            return None
        logging.info("eval %s at step %d: %s", split, step, _line(metrics))
        writer = self._summary_writer(f"eval_{split}")
        with writer.as_default(step=step):
            for key, value in metrics.items():
                tf.summary.scalar(key, value)
            if self.chief and split == self.problem.eval_split and self._ponder.applies():
                self._ponder(self.problem.filepaths(self.data_dir, split))
        writer.flush()
        return metrics

    def final_evaluation(self, stopped_by: str = "train_steps") -> dict[str, dict[str, float]]:
        """Evaluates every non-train split in full; writes metrics.json in the run dir."""
        step = int(self.step.numpy())
        results = {
            split: self._evaluate_split(split, step, max_steps=-1)
            for split in sorted(self.problem.splits)
            if split != problem_lib.TRAIN
        }
        if self.best is not None and self.config.eval_steps < 0:  # the last step's candidacy
            self.best.consider(step, results[self.best.spec.split])
        if self.chief:  # with what the figures depend on, so a reader can refuse stale ones
            path = os.path.join(self.output_dir, METRICS_FILE)
            body = {"step": step, "stopped_by": stopped_by, **results}
            stamp.keep(path, self._metrics_depend_on("", self._good_checkpoint), body)
        if self.best is not None and self.best.path:
            self._evaluate_best(stopped_by, step, results)
        return results

    def _metrics_depend_on(self, keep_best: str, checkpoint: str) -> dict:
        config = self.config
        return run_dir.metrics_depend_on(
            self.problem,
            self.data_dir,
            config.random_seed,
            config.train_minutes,
            keep_best,
            checkpoint,
        )

    def _evaluate_best(self, stopped_by: str, step: int, last: dict) -> None:
        """Evaluates best/'s checkpoint on every non-train split in full into
        metrics_best.json (no summaries: the curves are the run's), then puts the
        newest checkpoint's weights back; the last step's figures (`last`, of
        `step`) serve when it is the best."""
        results = last
        if self.best.step != step:
            checkpoints.restore_model(self.model, self.best.path)
            results = {split: self._split_metrics(split, max_steps=-1) for split in last}
            checkpoints.restore_model(self.model, self._good_checkpoint)
        for split, metrics in results.items():
            logging.info("eval %s of the best, step %d: %s", split, self.best.step, _line(metrics))
        if self.chief:
            path = os.path.join(self.output_dir, run_dir.METRICS_BEST_FILE)
            body = {
                "step": self.best.step,
                "selected_by": self.best.kept,
                "stopped_by": stopped_by,
                **results,
            }
            stamp.keep(path, self._metrics_depend_on(str(self.best.spec), self.best.path), body)


def _advance(curriculum: batching.LengthCurriculum | None, step: int) -> None:
    """Moves the length curriculum (if any) to `step`, logging a longer limit."""
    if curriculum is not None and (limit := curriculum.advance(step)):
        logging.info("Length curriculum: examples up to %d positions from step %d.", limit, step)


def _line(metrics: dict[str, float]) -> str:
    return ", ".join(f"{key}={value:.4g}" for key, value in metrics.items())


def past_budget(output_dir: str, step: int, train_steps: int) -> str:
    """The one line refusing a run whose newest checkpoint is past --train_steps."""
    return (
        f"{output_dir!r} was trained to step {step}, past --train_steps={train_steps}; "
        f"its figures are step {step}'s, not step {train_steps}'s: pass "
        f"--train_steps={step} (or more), or use a new --output_dir"
    )


def train(
    experiment: experiment_lib.Experiment, data_dir: str, output_dir: str, config: TrainConfig
) -> dict[str, dict[str, float]]:
    """Trains (or resumes) the experiment in output_dir; returns final eval metrics."""
    trainer = Trainer(experiment, data_dir, output_dir, config)
    try:
        return trainer.train()
    finally:
        trainer.close()
