import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import LOOP_HPARAMS, run_binary

from t2t_lite import checkpoints, experiment
from t2t_lite.training import trainer

HPARAMS = LOOP_HPARAMS


def make_trainer(
    data_dir,
    output_dir,
    steps,
    overrides=HPARAMS,
    model="transformer",
    hparams_set=None,
    problem="test_identity_small",
):
    exp = experiment.Experiment.resolve(model, problem, hparams_set or f"{model}_test", overrides)
    config = trainer.TrainConfig(
        train_steps=steps,
        eval_steps=2,
        local_eval_frequency=3,
        log_step_count_steps=1,
        keep_checkpoint_max=10,
    )
    return trainer.Trainer(exp, data_dir, output_dir, config)


def values(variables):
    return [v.numpy().copy() for v in variables]


def test_checkpoint_holds_every_model_weight(small_data, tmp_path):
    t = make_trainer(small_data, str(tmp_path / "run"), 1)
    weights = t.model.weights
    assert len(weights) > 10
    # A model-only checkpoint stores every weight once, with its shape.
    path = checkpoints.make_checkpoint(t.model).write(str(tmp_path / "model_only"))
    stored = [
        tuple(shape)
        for name, shape in tf.train.list_variables(path)
        if name.endswith(".ATTRIBUTES/VARIABLE_VALUE")
    ]
    assert sorted(stored) == sorted(tuple(w.shape) for w in weights)
    # The training checkpoint (model, optimizer, step) restores every weight of
    # a fresh model whose weights were zeroed first.
    path = t.manager.save(checkpoint_number=0)
    fresh = experiment.Experiment.load(str(tmp_path / "run")).build_model(t.problem.vocab_size)
    checkpoints.build_model(fresh)
    for w in fresh.weights:
        w.assign(tf.zeros_like(w))
    checkpoints.restore_model(fresh, path)
    assert len(fresh.weights) == len(weights)
    for trained, restored in zip(weights, fresh.weights, strict=True):
        np.testing.assert_array_equal(trained.numpy(), restored.numpy())


def test_resume_continues_at_same_step_with_same_state(small_data, tmp_path):
    out = str(tmp_path / "run")
    first = make_trainer(small_data, out, 4)
    first.train()
    saved_weights = values(first.model.weights)
    saved_optimizer = values(first.optimizer.variables)
    assert int(first.step) == 4 and int(first.optimizer.iterations) == 4

    second = make_trainer(small_data, out, 6)
    assert int(second.step) == 4
    for a, b in zip(saved_weights, values(second.model.weights), strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(saved_optimizer, values(second.optimizer.variables), strict=True):
        np.testing.assert_array_equal(a, b)
    second.train()
    assert int(second.step) == 6
    assert tf.train.latest_checkpoint(out).endswith("model.ckpt-6")
    assert os.path.exists(os.path.join(out, "model.ckpt-3.index"))  # every local_eval_frequency
    with open(os.path.join(out, "metrics.json")) as f:
        metrics = json.load(f)
    assert set(metrics) == {"step", "stopped_by", "depends_on", "dev", "test"}
    assert metrics["step"] == 6 and metrics["stopped_by"] == "train_steps"
    stamp = second.problem.data_stamp(small_data)
    assert len(stamp) == 16 and stamp == second.problem.data_stamp(small_data)
    assert metrics["depends_on"] == {
        "data_dir": os.path.abspath(small_data),
        "data_stamp": stamp,
        "random_seed": 1,
        "train_minutes": 0.0,
        "checkpoint": "model.ckpt-6",  # the one evaluated, by name and content
        "checkpoint_fingerprint": checkpoints.fingerprint(os.path.join(out, "model.ckpt-6")),
    }
    assert metrics["dev"]["examples"] == 40


def test_non_finite_loss_stops_and_keeps_last_good_checkpoint(small_data, tmp_path):
    out = str(tmp_path / "run")
    t = make_trainer(small_data, out, 3)
    t.train()
    good = tf.train.latest_checkpoint(out)
    t = make_trainer(small_data, out, 9)
    t.model.embedding.weights_matrix.assign(t.model.embedding.weights_matrix * np.nan)
    with pytest.raises(trainer.NonFiniteLossError, match="model.ckpt-3"):
        t.train()
    assert tf.train.latest_checkpoint(out) == good
    restored = experiment.Experiment.load(out).build_model(t.problem.vocab_size)
    checkpoints.restore_model(restored, good)
    assert all(np.isfinite(w.numpy()).all() for w in restored.weights)


def test_resume_with_other_hparams_is_refused(small_data, tmp_path):
    out = str(tmp_path / "run")
    make_trainer(small_data, out, 1)
    with pytest.raises(ValueError, match=r"differs in: hparams.hidden_size"):
        make_trainer(small_data, out, 1, HPARAMS + ",hidden_size=32")


def test_a_run_written_before_a_key_existed_resumes_where_that_key_changes_nothing(
    small_data, tmp_path
):
    out = str(tmp_path / "run")
    make_trainer(small_data, out, 1)
    path = os.path.join(out, "experiment.json")
    with open(path) as f:
        saved = json.load(f)
    del saved["hparams"]["learning_rate_decay_steps"]  # none then: the same as now
    with open(path, "w") as f:
        json.dump(saved, f)
    make_trainer(small_data, out, 1)
    del saved["hparams"]["length_bucket_step"]  # doubling buckets then, fine ones now
    with open(path, "w") as f:
        json.dump(saved, f)
    with pytest.raises(ValueError, match=r"differs in: hparams.length_bucket_step"):
        make_trainer(small_data, out, 1)
    make_trainer(small_data, out, 1, HPARAMS + ",length_bucket_step=2")


def test_experiment_file_round_trip(small_data, tmp_path):
    out = str(tmp_path / "run")
    t = make_trainer(small_data, out, 1)
    loaded = experiment.Experiment.load(out)
    assert loaded == t.experiment
    assert loaded.hparams.batch_size == 64


def test_data_is_generated_when_missing(tmp_path):
    t = make_trainer(str(tmp_path / "fresh"), str(tmp_path / "run"), 1)
    assert t.problem.has_data(str(tmp_path / "fresh"))


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_eval_splits_are_evaluated_at_every_checkpoint_and_unknown_ones_refused(
    small_data, tmp_path, caplog
):
    exp = experiment.Experiment.resolve(
        "transformer", "test_identity_small", "transformer_test", HPARAMS
    )
    config = trainer.TrainConfig(
        train_steps=4, eval_steps=1, local_eval_frequency=2, eval_splits=("dev", "test")
    )
    caplog.set_level("INFO")
    trainer.train(exp, small_data, str(tmp_path / "run"), config)
    evaluated = [
        r.getMessage().split(":")[0] for r in caplog.records if r.getMessage().startswith("eval ")
    ]
    # Step 2: both named splits (one batch each); step 4: the final evaluation of every split.
    assert evaluated == [
        "eval dev at step 2",
        "eval test at step 2",
        "eval dev at step 4",
        "eval test at step 4",
    ]
    bad = trainer.TrainConfig(train_steps=1, eval_splits=("valid_long",))
    with pytest.raises(
        ValueError, match="--eval_splits: test_identity_small has no split 'valid_long'"
    ):
        trainer.train(exp, small_data, str(tmp_path / "run2"), bad)


def test_bad_loop_flags_are_errors():
    with pytest.raises(ValueError, match="--train_steps must be >= 1"):
        trainer.TrainConfig(train_steps=0)


def summary_tags(directory):
    tags = set()
    for name in os.listdir(directory):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
            tags.update(value.tag for value in event.summary.value)
    return tags


@pytest.mark.slow  # for the fast tier's time (docs/testing.md)
def test_adaptive_ut_trains_and_reports_ponder_statistics(small_data, tmp_path, caplog):
    out = str(tmp_path / "run")
    t = make_trainer(
        small_data,
        out,
        3,
        model="universal_transformer",
        hparams_set="adaptive_universal_transformer_test",
    )
    with caplog.at_level("INFO"):
        results = t.train()
    ponder = ("encoder_ponder_time", "encoder_act_steps", "decoder_ponder_time")
    assert set(ponder) <= summary_tags(os.path.join(out, "train"))
    assert "aux_loss" in summary_tags(os.path.join(out, "train"))
    assert set(ponder) <= summary_tags(os.path.join(out, "eval_dev"))
    progress = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step 3:")]
    assert progress and "encoder_ponder_time=" in progress[0]
    for split in ("dev", "test"):
        assert 1.0 <= results[split]["encoder_ponder_time"] <= 4.0 + 1.0
        assert 1.0 <= results[split]["decoder_act_steps"] <= 4.0


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_a_length_curriculum_admits_longer_examples_as_training_goes(small_data, tmp_path, caplog):
    """Start 3, one position more every 2 steps: the first step's batch holds no
    example longer than 3, the limit reaches 4 at step 2 and 5 at step 4, and
    the log says so (examples are 2..7 long here)."""
    overrides = f"{HPARAMS},curriculum_start_length=3,curriculum_steps_per_length=2"
    t = make_trainer(small_data, str(tmp_path / "run"), 4, overrides)
    longest = []
    train_step = t._train_step

    def recording_step(batches):
        longest.append(int((batches[0]["targets"].numpy() != 0).sum(axis=1).max()))
        return train_step(batches)

    t._train_step = recording_step
    with caplog.at_level("INFO"):
        t.train()
    logged = [r.getMessage() for r in caplog.records if "Length curriculum" in r.getMessage()]
    assert logged == [
        "Length curriculum: examples up to 3 positions at step 0.",
        "Length curriculum: examples up to 4 positions from step 2.",
        "Length curriculum: examples up to 5 positions from step 4.",
    ]
    assert longest[0] <= 3 and max(longest) <= 5 and len(longest) == 4
    assert "length curriculum from 3 positions, one more every 2 steps" in caplog.text


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("[]", "expected a JSON object, got list"),
        ('{"model": "transformer", "problem": "p", "hparams_set": "s", "hparams": null}',
         "'hparams' must be an object, got null"),
        ('{"model": 3, "problem": "p", "hparams_set": "s", "hparams": {}}',
         "'model' must be a string, got 3"),
        ('{"model": "transformer", "problem": "p", "hparams": {}}', "hparams_set"),
    ],
)  # fmt: skip
def test_a_malformed_experiment_file_is_one_error_naming_the_key(tmp_path, content, named):
    (tmp_path / "experiment.json").write_text(content)
    with pytest.raises(ValueError, match="not a valid experiment file") as raised:
        experiment.Experiment.load(str(tmp_path))
    assert named in str(raised.value)


def test_a_model_too_large_for_memory_or_too_short_a_max_length_is_named(small_data, tmp_path):
    # In a process of its own: a build that failed midway leaves Keras' global
    # state unfit for later models in the same process (the tools exit on it).
    result = run_binary(
        "t2t-train", "--problem=test_identity_small", "--model=transformer",
        "--hparams_set=transformer_test", "--hparams=hidden_size=1099511627776",
        f"--data_dir={small_data}", f"--output_dir={tmp_path}/run", "--train_steps=1",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    # Refused by the size limits before any weight is allocated (it used to be
    # built until memory ran out, then named as an OOM).
    assert result.stderr == (
        "t2t-train: error: invalid hparams (hidden_size): must be <= 65,536, "
        "got 1,099,511,627,776\n"
    )
    with pytest.raises(ValueError, match=r"max_length.*must be >= 2 \(a symbol and EOS\)"):
        experiment.Experiment.resolve(
            "transformer", "test_identity_small", "transformer_test", "max_length=1"
        )


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_the_learning_rate_decays_to_zero_at_the_budgets_end(small_data, tmp_path):
    t = make_trainer(small_data, str(tmp_path / "run"), 4, HPARAMS + ",learning_rate_decay_steps=2")
    first = float(t.optimizer.learning_rate)  # iteration 0: before the decay
    constant = t.hp.learning_rate_constant
    assert first == pytest.approx(constant * 0.1 * 10**-0.5 * t.hp.hidden_size**-0.5, rel=1e-6)
    t.train()
    assert int(t.optimizer.iterations) == 4 and float(t.optimizer.learning_rate) == 0.0
    with pytest.raises(ValueError, match="learning_rate_decay_steps"):
        make_trainer(
            small_data, str(tmp_path / "bad"), 4, HPARAMS + ",learning_rate_decay_steps=-1"
        )


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_a_run_trained_past_the_asked_steps_is_refused_not_relabelled(small_data, tmp_path):
    # A run at step 2 asked for 1 step: training nothing and reporting step 2's
    # figures as step 1's would label them with the wrong budget.
    from t2t_lite.reproduction import finished, runs

    out = str(tmp_path / "run")
    make_trainer(small_data, out, 2).train()
    shorter = make_trainer(small_data, out, 1)
    with pytest.raises(ValueError, match=r"trained to step 2, past --train_steps=1"):
        shorter.train()
    config = shorter.config
    with pytest.raises(ValueError, match=r"trained to step 2, past --train_steps=1"):
        finished.figures(out, shorter.experiment, small_data, config)
    with pytest.raises(ValueError, match=r"trained to step 2, past --train_steps=1"):
        runs._trained_through(out, config)
    # The same budget, or a larger one, is no refusal.
    assert finished.figures(
        out, shorter.experiment, small_data, dataclasses.replace(config, train_steps=2)
    )


def test_a_trainer_generates_missing_data_once_under_the_lock_and_not_with_its_seed(
    tmp_path, monkeypatch
):
    # Another trainer finishes generating while this one waits for the data-dir
    # lock: the data is not written again. And the data a trainer generates does
    # not depend on its own --random_seed: it is t2t-datagen's default data.
    import contextlib

    from t2t_lite.data import problem as problem_lib
    from t2t_lite.problems import datagen
    from t2t_lite.training import run_setup

    reference = str(tmp_path / "reference")
    datagen.generate("test_identity_small", reference)
    first = str(tmp_path / "first")
    seeded = trainer.TrainConfig(train_steps=1, random_seed=7)
    exp = experiment.Experiment.resolve(
        "transformer", "test_identity_small", "transformer_test", HPARAMS
    )
    setup = run_setup.prepare(exp, first, str(tmp_path / "run1"), seeded)
    setup.lock.release()
    problem = problem_lib.get("test_identity_small")
    for path in problem.data_files(reference):
        name = os.path.basename(path)
        with open(path, "rb") as a, open(os.path.join(first, name), "rb") as b:
            assert a.read() == b.read(), name

    second = str(tmp_path / "second")
    real_lock = datagen.data_dir_lock
    generated = []

    @contextlib.contextmanager
    def lock_won_late(data_dir, **waiting):
        problem.generate_data(data_dir, seed=1)  # the other trainer, first to the lock
        with real_lock(data_dir, **waiting) as left:
            yield left

    real_generate = problem_lib.Problem.generate_data

    def counting(self, data_dir, *args, **kwargs):
        generated.append(data_dir)
        return real_generate(self, data_dir, *args, **kwargs)

    monkeypatch.setattr(datagen, "data_dir_lock", lock_won_late)
    monkeypatch.setattr(problem_lib.Problem, "generate_data", counting)
    setup = run_setup.prepare(exp, second, str(tmp_path / "run2"), seeded)
    setup.lock.release()
    assert generated == [second]  # the other trainer's generation only


def test_a_run_holding_an_hparam_this_version_lacks_is_refused_not_resumed(tmp_path):
    # check_matches compares the current keys; a key the run has and this
    # version lacks is refused when the run's experiment.json is read.
    exp = experiment.Experiment.resolve("transformer", "test_identity_small", "transformer_test")
    run = str(tmp_path / "run")
    exp.save(run)
    path = os.path.join(run, "experiment.json")
    with open(path) as f:
        data = json.load(f)
    data["hparams"]["a_removed_key"] = 3
    with open(path, "w") as f:
        json.dump(data, f)
    with pytest.raises(ValueError, match=r"experiment.json: .*unknown hparam 'a_removed_key'"):
        exp.check_matches(run)
