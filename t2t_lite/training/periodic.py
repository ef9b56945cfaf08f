"""What happens after a training step: periodic actions, each with its own cadence.

The trainer's loop runs a step, then asks its `Schedule` which actions run
now, in the order they run:

1. log: a progress line (loss, rate, time left) and its summaries, every
   --log_step_count_steps steps, at the first step (a line within seconds
   of the start), and before any save or evaluation (their host sync reads
   the step outputs anyway);
2. save: a checkpoint every --save_checkpoints_steps steps; else, when
   --save_checkpoints_secs is set, by that clock alone; else at every
   evaluation's step; and always at the last step (--train_steps, the time
   budget or a stop signal);
3. evaluate: every --local_eval_frequency steps but the last (the final
   evaluation follows it); keep-best considers each evaluation.

The clock of a save by seconds is kept here (`clock_due`, `saved`); the
stop conditions (a signal, the time budget) are `stopping.StopConditions`,
which also has every worker agree on the clock, so that a collective save
happens on all of them at once.
"""

import dataclasses
import time

LOG, SAVE, EVALUATE = "log", "save", "evaluate"


@dataclasses.dataclass(frozen=True)
class Every:
    """A cadence: every `steps` steps and/or every `secs` seconds (0: not by that)."""

    steps: int = 0
    secs: float = 0.0

    def by_steps(self, step: int) -> bool:
        return bool(self.steps) and step % self.steps == 0


@dataclasses.dataclass(frozen=True)
class Moment:
    """A step just trained: whether it is the run's first or last in this process,
    and whether the save clock is due (as every worker agreed)."""

    step: int
    first: bool
    last: bool
    clock: bool = False


class Schedule:
    """The cadences of the log, save and evaluate actions, and the save clock."""

    def __init__(self, log: Every, save: Every, evaluate: Every):
        self.log, self.save, self.evaluate = log, save, evaluate
        self.last_save = time.monotonic()

    @classmethod
    def from_config(cls, config) -> "Schedule":
        """The schedule of a TrainConfig's flags (module docstring)."""
        by_steps = config.save_checkpoints_steps or (
            0 if config.save_checkpoints_secs else config.local_eval_frequency
        )
        return cls(
            log=Every(steps=config.log_step_count_steps),
            save=Every(steps=by_steps, secs=config.save_checkpoints_secs),
            evaluate=Every(steps=config.local_eval_frequency),
        )

    def clock_due(self) -> bool:
        """Whether this process's save clock has run out (before the workers agree)."""
        return bool(self.save.secs) and time.monotonic() - self.last_save >= self.save.secs

    def saved(self) -> None:
        """A checkpoint was written: the save clock starts again."""
        self.last_save = time.monotonic()

    def due(self, moment: Moment) -> tuple[str, ...]:
        """The actions that run after moment.step, in the order they run."""
        save = self.save.by_steps(moment.step) or moment.clock or moment.last
        evaluate = self.evaluate.by_steps(moment.step) and not moment.last
        log = moment.first or self.log.by_steps(moment.step) or save or evaluate
        chosen = ((LOG, log), (SAVE, save), (EVALUATE, evaluate))
        return tuple(name for name, runs in chosen if runs)
