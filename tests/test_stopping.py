"""Checkpoint cadence, time budgets and stopping on SIGTERM/SIGINT with nothing lost."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf
from conftest import LOOP_HPARAMS, ROOT

from t2t_lite import checkpoints, cli, experiment, run_dir
from t2t_lite.training import stopping, trainer
from t2t_lite.visualization import curves

HPARAMS = LOOP_HPARAMS


def make_trainer(data_dir, output_dir, steps, **config):
    exp = experiment.Experiment.resolve(
        "transformer", "test_identity_small", "transformer_test", HPARAMS
    )
    settings = {"eval_steps": 2, "local_eval_frequency": 4, "log_step_count_steps": 100}
    settings.update(keep_checkpoint_max=20, **config)
    return trainer.Trainer(
        exp, data_dir, output_dir, trainer.TrainConfig(train_steps=steps, **settings)
    )


def saved_steps(output_dir) -> list[int]:
    return sorted(int(p.rsplit("-", 1)[1]) for p in checkpoints.by_step(str(output_dir)))


def every_checkpoint_reads(output_dir) -> None:
    for path in checkpoints.by_step(str(output_dir)):
        t = make_trainer_for_read(output_dir)
        checkpoints.restore_model(t, path)


def make_trainer_for_read(output_dir):
    exp = experiment.Experiment.load(str(output_dir))
    model = exp.build_model(exp.build_problem().vocab_size)
    checkpoints.build_model(model)
    return model


@pytest.mark.slow  # the fast tier's budget: test_periodic holds each action to its own cadence
def test_checkpoints_follow_their_own_cadence_not_the_evaluations(small_data, tmp_path):
    out = tmp_path / "run"
    t = make_trainer(small_data, str(out), 7, save_checkpoints_steps=3, local_eval_frequency=2)
    evaluated = []
    evaluate = t._evaluate_split
    t._evaluate_split = lambda split, step, max_steps: (
        evaluated.append(step) or evaluate(split, step, max_steps)
    )
    t.train()
    assert saved_steps(out) == [3, 6, 7]  # every 3 steps, and the last
    assert evaluated[:3] == [2, 4, 6]  # every 2 steps (then the final evaluation at 7)


class StepClock:
    """A clock that moves 10 s per training step and stands still otherwise, so
    the checkpoint cadence depends on the steps alone, not on how often the
    code reads the clock."""

    def __init__(self, monkeypatch, t):
        self.now = 0.0
        monkeypatch.setattr(stopping.time, "monotonic", lambda: self.now)
        step = t._train_step

        def stepping(*args):
            self.now += 10.0
            return step(*args)

        t._train_step = stepping


@pytest.mark.parametrize("eval_every", [pytest.param(100, marks=pytest.mark.slow), 2])
def test_checkpoints_by_the_clock(small_data, tmp_path, monkeypatch, eval_every):
    """--save_checkpoints_secs=25 at 10 s a step: saves at steps 3 (30 s), 6 (30 s
    after it) and the last, 8; evaluations (every 2 steps) add none."""
    out = tmp_path / "run"
    t = make_trainer(
        small_data, str(out), 8, save_checkpoints_secs=25, local_eval_frequency=eval_every
    )
    StepClock(monkeypatch, t)
    t.train()
    assert saved_steps(out) == [3, 6, 8]


def signal_at(monkeypatch, t, where: str, step: int, signals=(signal.SIGTERM,)):
    """Sends this process the signals at a point of step `step`'s work:
    "step" (inside the training step), "evaluation" or "save" (inside the write)."""
    target = {"step": "_train_step", "evaluation": "_evaluate_split"}.get(where)
    seen = {"count": 0}

    def fire():
        for number in signals:
            os.kill(os.getpid(), number)

    if where == "save":
        save = checkpoints.save

        def saving(manager, at):
            if at == step:
                fire()  # the handler runs now, during the save
            return save(manager, at)

        monkeypatch.setattr(trainer.checkpoints, "save", saving)
        return
    original = getattr(t, target)

    def wrapped(*args, **kwargs):
        seen["count"] += 1
        current = seen["count"] if where == "step" else args[1]
        if current == step:
            fire()
        return original(*args, **kwargs)

    setattr(t, target, wrapped)


@pytest.mark.parametrize(
    ("where", "at", "saved"),
    # A signal inside step 3 lets it finish: saved at 3. One at the start of
    # the evaluation after step 4 (its checkpoint already written) stops with
    # 4. Two signals inside the save of step 4: the save completes, then stop.
    [
        ("step", 3, 3),
        pytest.param("evaluation", 4, 4, marks=pytest.mark.slow),
        pytest.param("save", 4, 4, marks=pytest.mark.slow),
    ],
)
def test_a_signal_saves_the_current_step_and_the_rerun_loses_none(
    small_data, tmp_path, monkeypatch, where, at, saved
):
    out = tmp_path / "run"
    t = make_trainer(small_data, str(out), 8)
    signals = (signal.SIGTERM, signal.SIGINT) if where == "save" else (signal.SIGTERM,)
    # What the process had before training: Python's default, or SIG_IGN where the
    # test runs in the background (a shell's `&` or nohup ignores SIGINT).
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    with monkeypatch.context() as patch:
        signal_at(patch, t, where, at, signals)
        with pytest.raises(cli.Interrupted, match=rf"stopped by SIGTERM at step {saved}; saved "):
            t.train()
    assert saved_steps(out)[-1] == saved
    assert not os.path.exists(out / "metrics.json")
    # The handlers are gone after training: each signal has its handler of before.
    assert {number: signal.getsignal(number) for number in before} == before
    resumed = make_trainer(small_data, str(out), 8)
    assert int(resumed.step.numpy()) == saved
    resumed.train()
    assert saved_steps(out)[-1] == 8
    every_checkpoint_reads(out)


@pytest.mark.slow  # for the fast tier's time (docs/testing.md)
def test_a_signal_during_a_whole_split_evaluation_cuts_it_short(small_data, tmp_path):
    """A scheduler's SIGTERM leaves about 30 s: an evaluation of whole splits
    (--eval_steps=-1, as --keep_best's) stops after the batch in flight, and
    the step is saved (its checkpoint cadence, 3, had not saved step 4)."""
    out = tmp_path / "run"
    t = make_trainer(small_data, str(out), 8, eval_steps=-1, save_checkpoints_steps=3)
    batches = []
    evaluate_batch = t._eval_step

    def counting(batch):
        batches.append(int(t.step.numpy()))
        if len(batches) == 1 and batches[0] == 4:
            os.kill(os.getpid(), signal.SIGTERM)
        return evaluate_batch(batch)

    # The evaluation at step 4 is the first; the dev split is several batches.
    t._eval_step = counting
    with pytest.raises(cli.Interrupted, match=r"stopped by SIGTERM at step 4; saved "):
        t.train()
    assert batches == [4]  # one batch, not the whole split
    assert saved_steps(out) == [3, 4]


@pytest.mark.slow
def test_a_time_budget_stops_with_a_checkpoint_and_counts_resumed_time(
    small_data, tmp_path, monkeypatch
):
    """A clock of 10 s per reading and a budget of 1 minute: the run stops
    early, evaluates, and records why; a resume finds the budget spent."""
    ticks = iter(range(0, 10**6, 10))
    monkeypatch.setattr(stopping.time, "monotonic", lambda: float(next(ticks)))
    out = tmp_path / "run"
    results = make_trainer(small_data, str(out), 50, train_minutes=1.0).train()
    step = saved_steps(out)[-1]
    assert 1 <= step < 50 and "dev" in results
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["step"] == step and metrics["stopped_by"] == "time budget"
    assert run_dir.trained_seconds(str(out), step) >= 60
    again = make_trainer(small_data, str(out), 50, train_minutes=1.0)
    again.train()
    assert saved_steps(out)[-1] == step  # no step trained past the budget


def test_train_minutes_must_not_be_negative():
    with pytest.raises(ValueError, match="--train_minutes must be >= 0"):
        trainer.TrainConfig(train_minutes=-1.0)


@pytest.mark.slow
def test_t2t_train_exits_143_on_sigterm_with_the_step_saved_and_resumes(small_data, tmp_path):
    """The binary in its own process, sent SIGTERM once training has begun."""
    out = str(tmp_path / "run")
    command = [
        sys.executable, os.path.join(ROOT, "tests", "train_main.py"),
        "--problem=test_identity_small", "--model=transformer", "--hparams_set=transformer_test",
        f"--hparams={HPARAMS}", f"--data_dir={small_data}", f"--output_dir={out}",
        "--train_steps=100000", "--local_eval_frequency=1000", "--log_step_count_steps=5",
    ]  # fmt: skip
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in process.stderr:
        lines.append(line)
        if "step 5:" in line:
            break
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    _, rest = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, "".join(lines) + rest
    last = rest.strip().splitlines()[-1]
    assert last.startswith("t2t-train: stopped by SIGTERM at step ")
    step = int(last.split("at step ")[1].split(";")[0])
    assert saved_steps(out)[-1] == step and "Traceback" not in rest
    # The stopping step's summaries are on disk with its checkpoint.
    assert curves.read_scalars(os.path.join(out, "train"))["loss"][-1][0] == step
    finish = subprocess.run(
        [*command[:-3], f"--train_steps={step + 2}"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert finish.returncode == 0, finish.stderr
    assert f"at step {step}." in finish.stderr and saved_steps(out)[-1] == step + 2
    assert tf.io.gfile.exists(os.path.join(out, "metrics.json"))


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_a_startup_summary_then_a_progress_line_at_the_first_step_with_an_eta(
    small_data, tmp_path, caplog
):
    from t2t_lite.data import problem as problem_lib
    from t2t_lite.data import tfrecord

    prob = problem_lib.get("test_identity_small")
    counts = {}
    for split in ("train", "dev"):
        records = [r for p in prob.filepaths(small_data, split) for r in tfrecord.read_records(p)]
        counts[split] = (len(records), sum(len(r["inputs"]) for r in records))
        assert tfrecord.read_stats(prob.filepaths(small_data, split)) == {
            "examples": counts[split][0],
            "inputs_tokens": counts[split][1],
            "targets_tokens": sum(len(r["targets"]) for r in records),
        }
    t = make_trainer(small_data, str(tmp_path / "run"), 6, log_step_count_steps=3)
    with caplog.at_level("INFO"):
        t.train()
    text = caplog.text
    summary = text[text.index("Training:") : text.index("step 1:")]
    assert f"train {counts['train'][0]:,} examples ({counts['train'][1]:,} source" in summary
    assert f"dev {counts['dev'][0]} examples ({counts['dev'][1]} source" in summary
    assert f"transformer_test: {t.model.count_params():,} parameters" in summary
    assert "precision float32" in summary and "batches of 64 tokens per replica" in summary
    assert (
        "plan: from scratch to 6; evaluate every 4 steps; checkpoint every 4 steps and at the "
        "last step" in summary
    )
    progress = [line for line in text.splitlines() if "step 3: loss=" in line]
    assert progress and " eta=" in progress[0]  # a rate from steps 1-3


AGREEING_WORKER = """
import json, os
import numpy as np, tensorflow as tf
from t2t_lite.training import stopping
strategy = tf.distribute.MultiWorkerMirroredStrategy()
index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
raised = [1, 0, 0] if index == 0 else [0, 0, 1]
print("agreed", stopping._agree(strategy, np.array(raised, np.int32)).tolist())
stop = stopping.StopConditions(strategy)
if index == 0:
    stop.signal_name = "SIGTERM"  # this worker alone was signalled
print("steps", stop.decide(3), stop.decide(stopping.AGREE_EVERY))
"""


@pytest.mark.slow  # for the fast tier's time (docs/testing.md)
def test_workers_agree_on_a_flag_any_of_them_raised():
    """Two workers (processes of their own on loopback ports): each raises a
    different flag and both read both. A signal that reached worker 0 alone
    stops both, at the next agreement step (not at step 3: no collective there)."""
    from test_scale_out import free_port, run_python

    workers = [f"localhost:{free_port()}", f"localhost:{free_port()}"]
    processes = []
    for index in range(2):
        tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        processes.append(run_python(AGREEING_WORKER, {"TF_CONFIG": json.dumps(tf_config)}))
    outputs = [process.communicate(timeout=300) for process in processes]
    for process, (_, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err[-2000:]
    lines = [out.strip().splitlines()[-2:] for out, _ in outputs]
    assert lines[0] == ["agreed [1, 0, 1]", "steps (None, False) ('SIGTERM', False)"]
    assert lines[1] == [
        "agreed [1, 0, 1]",
        "steps (None, False) ('a signal on another worker', False)",
    ]


@pytest.mark.slow
def test_two_trainers_started_together_on_one_fresh_data_dir_both_train(tmp_path):
    """Two real t2t-train processes on an empty data dir: one generates the data,
    the other waits for its lock and then finds the data written; a trainer
    started while a writer holds the lock waits for it instead of refusing."""
    from t2t_lite.data import problem as problem_lib
    from t2t_lite.problems import datagen

    data = str(tmp_path / "data")

    def start(name):
        command = [
            sys.executable, os.path.join(ROOT, "tests", "train_main.py"),
            "--problem=test_identity_small", "--model=transformer",
            "--hparams_set=transformer_test", f"--hparams={LOOP_HPARAMS}",
            f"--data_dir={data}", f"--output_dir={tmp_path / name}",
            "--train_steps=2", "--local_eval_frequency=2", "--eval_steps=1",
        ]  # fmt: skip
        return subprocess.Popen(command, stderr=subprocess.PIPE, text=True)

    both = [start("first"), start("second")]
    logs = [process.communicate(timeout=300)[1] for process in both]
    for process, log in zip(both, logs, strict=True):
        assert process.returncode == 0, log
        assert "interrupted" not in log and "did not finish" not in log
    assert sum("generating it" in log for log in logs) == 1
    # A writer holding the lock (here this process): the trainer waits, then trains
    # on what the writer wrote, without writing it again.
    data = str(tmp_path / "data2")
    os.makedirs(data)
    with datagen.data_dir_lock(data):
        third = start("third")
        lines = []
        for line in third.stderr:  # until it says it waits (or it ends)
            lines.append(line)
            if "waiting up to" in line:
                break
        assert third.poll() is None, "".join(lines)
        problem_lib.get("test_identity_small").generate_data(data, seed=1)
    log = "".join(lines) + third.communicate(timeout=300)[1]
    assert third.returncode == 0, log
    assert "generating it" not in log


def test_the_plan_line_says_when_the_loop_saves_as_its_schedule_decides():
    """--save_checkpoints_secs alone saves by the clock only (not also at each
    evaluation): the startup line said "every 500 steps and every 600 s"."""
    import dataclasses

    from t2t_lite.training import config as config_lib
    from t2t_lite.training import summary

    base = config_lib.TrainConfig(train_steps=100, local_eval_frequency=50)
    cases = {
        (0, 0): "every 50 steps and at the last step",
        (0, 600): "every 600 s and at the last step",
        (20, 600): "every 20 steps and every 600 s and at the last step",
    }
    for (steps, secs), said in cases.items():
        config = dataclasses.replace(base, save_checkpoints_steps=steps, save_checkpoints_secs=secs)
        assert summary.checkpoint_cadence(config) == said
