"""The training loop's periodic actions (training/periodic.py): which run after a
step, in which order, each on its own cadence."""

from t2t_lite.training import periodic
from t2t_lite.training.config import TrainConfig
from t2t_lite.training.periodic import EVALUATE, LOG, SAVE, Moment


def plan(config: TrainConfig, last_step: int, clock_steps=()) -> dict[int, tuple[str, ...]]:
    """step -> the actions after it, over a run of steps 1..last_step (the save
    clock due, as the workers agreed, at `clock_steps`); steps with none left out."""
    schedule = periodic.Schedule.from_config(config)
    due = {}
    for step in range(1, last_step + 1):
        moment = Moment(step, first=step == 1, last=step == last_step, clock=step in clock_steps)
        if actions := schedule.due(moment):
            due[step] = actions
    return due


def test_evaluations_save_unless_checkpoints_have_a_cadence_of_their_own():
    # Hand-derived: logs every 4 steps and at the first; evaluations every 3
    # (each with its save, as nothing else sets one); the last step saves, and
    # is not evaluated (the final evaluation follows it).
    config = TrainConfig(log_step_count_steps=4, local_eval_frequency=3)
    assert plan(config, 7) == {
        1: (LOG,),
        3: (LOG, SAVE, EVALUATE),
        4: (LOG,),
        6: (LOG, SAVE, EVALUATE),
        7: (LOG, SAVE),
    }
    # --save_checkpoints_steps=5: saves every 5 steps, evaluations save nothing.
    by_steps = TrainConfig(
        log_step_count_steps=100, local_eval_frequency=3, save_checkpoints_steps=5
    )
    assert plan(by_steps, 7) == {
        1: (LOG,),
        3: (LOG, EVALUATE),
        5: (LOG, SAVE),
        6: (LOG, EVALUATE),
        7: (LOG, SAVE),
    }


def test_the_save_clock_alone_takes_over_the_evaluations_saves():
    """--save_checkpoints_secs alone: saves when the clock is due, not at evaluations."""
    config = TrainConfig(log_step_count_steps=100, local_eval_frequency=2, save_checkpoints_secs=25)
    assert plan(config, 6, clock_steps={3}) == {
        1: (LOG,),
        2: (LOG, EVALUATE),
        3: (LOG, SAVE),
        4: (LOG, EVALUATE),
        6: (LOG, SAVE),
    }


def test_the_save_clock_runs_from_the_last_save(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(periodic.time, "monotonic", lambda: now[0])
    schedule = periodic.Schedule.from_config(TrainConfig(save_checkpoints_secs=25))
    now[0] = 124.0
    assert not schedule.clock_due()
    now[0] = 125.0
    assert schedule.clock_due()
    schedule.saved()
    now[0] = 149.0
    assert not schedule.clock_due()  # 24 s since the save
    off = periodic.Schedule.from_config(TrainConfig())
    now[0] = 1e9
    assert not off.clock_due()  # no clock without --save_checkpoints_secs
