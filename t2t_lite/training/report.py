"""t2t-train's progress lines and training summaries.

The loop collects each step's outputs (loss sum, token weight, gradient
norm, the model's own metrics) without reading them back; at each log
action (periodic.py) `Report.log` reads them, refuses a non-finite loss or
gradient, and writes one line and the summaries of the window since the
last: loss per token, learning rate, gradient norm, steps and tokens a
second, the model's metrics (ACT's ponder time), and the time left (from
the rate since the first logged step, so tracing does not count; or the
time budget's end, if sooner).
"""

import math
import time

import tensorflow as tf
from absl import logging

from t2t_lite import cli, progress


class NonFiniteLossError(cli.UserError):
    """Training produced a NaN or infinite loss or gradient."""


ADVICE = "Try a lower learning_rate_constant, more learning_rate_warmup_steps or clip_grad_norm."


class Report:
    """The progress lines and summaries of one training session from start_step
    to last_step, into `writer`."""

    def __init__(self, writer: tf.summary.SummaryWriter, start_step: int, last_step: int):
        self.writer = writer
        self.step = start_step  # of the last line
        self.last_step = last_step
        self.time = time.perf_counter()
        self.first: tuple[int, float] | None = None  # after the first (traced) step

    def log(
        self,
        pending: list,
        step: int,
        learning_rate: float,
        budget_left_s: float | None,
        last_good: str,
    ) -> None:
        """The line and summaries of the steps since the last, from their outputs
        `pending`; a non-finite loss or gradient is a NonFiniteLossError naming
        the steps and `last_good` (what is left on disk)."""
        loss_sum = sum(float(out[0]) for out in pending)
        weight = sum(float(out[1]) for out in pending)
        grad_norm = max(float(out[2]) for out in pending)
        if not (math.isfinite(loss_sum) and math.isfinite(grad_norm)):
            raise NonFiniteLossError(
                f"non-finite loss ({loss_sum}) or gradient norm ({grad_norm}) between steps "
                f"{self.step} and {step}; training stopped. {last_good} {ADVICE}"
            )
        seconds, steps = self._advance(step)
        loss = loss_sum / max(weight, 1.0)
        steps_per_sec, tokens_per_sec = steps / seconds, weight / seconds
        # The model's own metrics (ACT's ponder time and loop trips), averaged over the window.
        extra = {
            key: sum(float(out[3][key]) for out in pending) / len(pending) for key in pending[0][3]
        }
        model_metrics = "".join(f" {key}={value:.4g}" for key, value in sorted(extra.items()))
        logging.info(
            f"step {step}: loss={loss:.4f} lr={learning_rate:.3g} grad_norm={grad_norm:.3g} "
            f"steps/s={steps_per_sec:.2f} tokens/s={tokens_per_sec:.0f}"
            f"{model_metrics}{self._eta(budget_left_s)}"
        )
        scalars = {
            "loss": loss,
            "learning_rate": learning_rate,
            "grad_norm": grad_norm,
            "steps_per_sec": steps_per_sec,
            "tokens_per_sec": tokens_per_sec,
            **extra,
        }
        with self.writer.as_default(step=step):
            for name, value in scalars.items():
                tf.summary.scalar(name, value)

    def _advance(self, step: int) -> tuple[float, int]:
        """(seconds, steps) since the last line; this line's step and time kept."""
        now = time.perf_counter()
        seconds, steps = max(now - self.time, 1e-9), step - self.step
        self.step, self.time = step, now
        if self.first is None:
            self.first = (step, now)
        return seconds, steps

    def _eta(self, budget_left_s: float | None) -> str:
        """The time to the end as " eta=1h02m"; "" before there is a rate."""
        measured = progress.rate(self.first, self.step, self.time, self.last_step)
        if measured is None:
            return ""
        seconds = measured[1] or 0.0
        if budget_left_s is not None:
            seconds = min(seconds, max(budget_left_s, 0.0))
        return f" eta={progress.duration(seconds)}"
