"""Why a training run stops before --train_steps: a signal, or its time budget.

SIGTERM (what a preempting scheduler or `timeout` sends) and SIGINT (Ctrl-C)
no longer kill the run: the handler only records the signal, the step in
flight finishes, and the trainer saves a checkpoint and exits. A second
signal while that checkpoint is written is recorded and ignored, so the save
completes (SIGKILL still kills; the next run cleans what a killed save left).

Under MultiWorkerMirroredStrategy every worker must save together (a save is
collective), so the workers agree on the decisions (stop, save by the clock)
with one all-reduce of three integers, every AGREE_EVERY steps (a blocking
host sync each step would stall the pipeline; a signal or the clock is then
acted on up to AGREE_EVERY - 1 steps late); a single process decides alone,
at every step. TensorFlow's PreemptionCheckpointHandler does this only for
MultiWorkerMirroredStrategy and TPUs, with its own checkpoint naming and
restore; this serves every strategy the trainer supports with its own
checkpoints.
"""

import contextlib
import signal
import threading
import time
from collections.abc import Iterator

import numpy as np
import tensorflow as tf
from absl import logging

from t2t_lite.training import distribution

SIGNALS = (signal.SIGTERM, signal.SIGINT)
BUDGET = "time budget"
AGREE_EVERY = 10  # steps between the workers' agreements under multi-worker training


class StopConditions:
    """A context that catches SIGTERM/SIGINT and keeps the run's training time.

    train_minutes: the budget (0: none); trained_seconds: training time of
    earlier runs of this run directory.
    """

    def __init__(
        self,
        strategy: tf.distribute.Strategy,
        train_minutes: float = 0.0,
        trained_seconds: float = 0.0,
    ):
        self.strategy = strategy
        self.budget_s = train_minutes * 60.0
        self.trained_seconds = trained_seconds
        self.signal_name: str | None = None
        # Inside the context (the training loop, whose evaluations a signal cuts short).
        self.catching = False
        self.start = time.monotonic()
        self._previous: dict = {}
        self._saving = False

    def __enter__(self) -> "StopConditions":  # noqa: PYI034 (typing.Self needs Python 3.11)
        if threading.current_thread() is threading.main_thread():  # Python's rule for handlers
            for number in SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        self.catching = True
        return self

    def __exit__(self, *exc) -> None:
        self.catching = False
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}

    def _handle(self, number, frame) -> None:
        name = signal.Signals(number).name
        if self.signal_name is None:
            self.signal_name = name
            logging.warning(
                "%s received: saving a checkpoint after this step, then stopping.", name
            )
        elif self._saving:
            logging.warning(
                "%s received while the checkpoint is written: finishing it first.", name
            )
        else:
            logging.warning("%s received again: stopping after this step as asked.", name)

    def seconds(self) -> float:
        """Training time of this run directory: earlier runs' and this one's."""
        return self.trained_seconds + time.monotonic() - self.start

    def budget_left(self) -> float | None:
        """Seconds of the time budget left (None: no budget)."""
        return self.budget_s - self.seconds() if self.budget_s else None

    def decide(self, step: int | None = None, clock: bool = False) -> tuple[str | None, bool]:
        """(why to stop now: "SIGTERM", "SIGINT", "time budget" or None; whether the
        checkpoint clock is due on any worker), agreed by every worker.

        step: the training step just run; under multi-worker training only every
        AGREE_EVERY-th step agrees (the others answer (None, False)). Without a
        step (after an evaluation, before the first step) it always decides.
        clock: whether this process's save clock is due (periodic.Schedule)."""
        if step is not None and step % AGREE_EVERY and distribution.is_multi_worker(self.strategy):
            return None, False
        local = np.array(
            [
                self.signal_name is not None,
                bool(self.budget_s) and self.seconds() >= self.budget_s,
                clock,
            ],
            np.int32,
        )
        signalled, over_budget, clock = (bool(flag) for flag in _agree(self.strategy, local))
        if signalled:
            return self.signal_name or "a signal on another worker", clock
        return (BUDGET if over_budget else None), clock

    @contextlib.contextmanager
    def saving(self) -> Iterator[None]:
        """A context around a save: a second signal now waits for it (the handler)."""
        self._saving = True
        try:
            yield
        finally:
            self._saving = False


def _agree(strategy: tf.distribute.Strategy, flags: np.ndarray) -> np.ndarray:
    """Each 0/1 flag: 1 where any worker raised it (one process: its own).

    tf.distribute reduces by SUM or MEAN only: the flags are summed over every
    replica and compared with 0.
    """
    if distribution.is_multi_worker(strategy):
        per_replica = strategy.run(lambda: tf.constant(flags))
        total = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None).numpy()
        return (total > 0).astype(flags.dtype)
    return flags
