"""--keep_best: the checkpoint of the best periodic evaluation, kept apart and evaluated."""

import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import LOOP_HPARAMS

from t2t_lite import checkpoints, cli, experiment, run_dir
from t2t_lite.training import best, trainer

HPARAMS = LOOP_HPARAMS


def make_trainer(data_dir, output_dir, steps, fake=None, **config):
    """A trainer evaluating every 2 steps; `fake` (step -> value) adds a metric
    "fake" to every evaluation, so that the best step is known in advance."""
    exp = experiment.Experiment.resolve(
        "transformer", "test_identity_small", "transformer_test", HPARAMS
    )
    settings = {"eval_steps": 2, "local_eval_frequency": 2, "log_step_count_steps": 100}
    settings.update(keep_checkpoint_max=20, **config)
    t = trainer.Trainer(
        exp, data_dir, output_dir, trainer.TrainConfig(train_steps=steps, **settings)
    )
    if fake is not None:
        real = t._split_metrics

        def with_fake(split, max_steps):
            metrics = real(split, max_steps)
            metrics["fake"] = fake.get(int(t.step.numpy()), 0.0)
            return metrics

        t._split_metrics = with_fake
    return t


def considered(t) -> list[tuple[int, float]]:
    """Records (step, value) of every evaluation the best checkpoint is offered."""
    calls = []
    offer = t.best.consider

    def recording(step, metrics):
        calls.append((step, metrics[t.best.spec.metric]))
        return offer(step, metrics)

    t.best.consider = recording
    return calls


def kept_steps(directory) -> list[int]:
    return sorted(int(p.rsplit("-", 1)[1]) for p in checkpoints.by_step(str(directory)))


def weights(path) -> dict[str, np.ndarray]:
    reader = checkpoints.reader(path)
    names = [n for n in reader.get_variable_to_shape_map() if n.startswith("model/")]
    return {name: reader.get_tensor(name) for name in names}


def restored(run, path) -> list[np.ndarray]:
    """The model weights of a checkpoint, read into a model built afresh."""
    exp = experiment.Experiment.load(str(run))
    model = exp.build_model(exp.build_problem().vocab_size)
    checkpoints.restore_model(model, str(path))
    return [w.numpy() for w in model.weights]


def read_json(path) -> dict:
    with tf.io.gfile.GFile(str(path)) as f:
        return json.load(f)


def test_the_best_evaluation_keeps_its_checkpoint_and_is_evaluated_at_the_end(small_data, tmp_path):
    out = tmp_path / "run"
    # Higher is better for "fake": step 4 is the best of 2, 4, 6 and the last step 8.
    t = make_trainer(
        small_data, str(out), 8, fake={2: 0.5, 4: 0.9, 6: 0.7, 8: 0.8}, keep_best="dev/fake"
    )
    calls = considered(t)
    t.train()
    assert [step for step, _ in calls] == [2, 4, 6, 8]  # every evaluation, and the last step
    kept = read_json(out / "best" / best.BEST_FILE)
    assert kept == {"step": 4, "split": "dev", "metric": "fake", "value": 0.9}
    assert kept_steps(out / "best") == [4]  # the earlier bests were removed
    # The kept checkpoint is the run's own state at step 4, whole.
    ours, runs = weights(str(out / "best" / "model.ckpt-4")), weights(str(out / "model.ckpt-4"))
    assert ours.keys() == runs.keys() and all(np.array_equal(ours[k], runs[k]) for k in ours)
    assert run_dir.resolve_checkpoint(str(out), str(out / "best")).endswith("best/model.ckpt-4")
    last = read_json(out / run_dir.METRICS_FILE)
    chosen = read_json(out / run_dir.METRICS_BEST_FILE)
    assert last["step"] == 8 and chosen["step"] == 4
    assert chosen["selected_by"] == kept
    # Each names the checkpoint it evaluated; otherwise they differ only in keep_best.
    ckpt = ("checkpoint", "checkpoint_fingerprint")
    assert chosen["depends_on"]["checkpoint"] == "model.ckpt-4"
    assert last["depends_on"]["checkpoint"] == "model.ckpt-8"
    assert {k: v for k, v in chosen["depends_on"].items() if k not in ckpt} == {
        **{k: v for k, v in last["depends_on"].items() if k not in ckpt},
        "keep_best": "dev/fake",
    }
    assert set(chosen) - {"step", "selected_by", "stopped_by", "depends_on"} == {"dev", "test"}
    assert chosen["dev"]["loss"] != last["dev"]["loss"]  # other weights, other figures
    # After evaluating the best, the trainer holds the newest checkpoint's weights again.
    newest = restored(out, out / "model.ckpt-8")
    assert all(np.array_equal(w.numpy(), v) for w, v in zip(t.model.weights, newest, strict=True))


@pytest.mark.parametrize(
    ("fake", "best_step"),
    [
        pytest.param({2: 0.5, 4: 0.6, 6: 0.7, 8: 0.9}, 8, marks=pytest.mark.slow),
        pytest.param({2: 0.5, 4: 0.9, 6: 0.7, 8: 0.8}, 4, marks=pytest.mark.slow),
    ],
)
def test_on_whole_splits_the_final_evaluation_is_the_last_steps_candidacy(
    small_data, tmp_path, fake, best_step
):
    out = tmp_path / "run"
    t = make_trainer(small_data, str(out), 8, fake=fake, keep_best="dev/fake", eval_steps=-1)
    calls, evaluated = considered(t), []
    measure = t._split_metrics

    def counting(split, max_steps):
        evaluated.append((split, int(t.step.numpy())))
        return measure(split, max_steps)

    t._split_metrics = counting
    t.train()
    assert [step for step, _ in calls] == [2, 4, 6, 8]
    # One batch of dev before step 1 (is "fake" among its metrics?), dev at 2, 4
    # and 6, then every split once at 8; the best again only if it is not 8.
    again = [("dev", 8), ("test", 8)] if best_step != 8 else []
    periodic = [("dev", 2), ("dev", 4), ("dev", 6)]
    assert evaluated == [("dev", 0), *periodic, ("dev", 8), ("test", 8), *again]
    last = read_json(out / run_dir.METRICS_FILE)
    chosen = read_json(out / run_dir.METRICS_BEST_FILE)
    assert chosen["step"] == best_step and chosen["selected_by"]["value"] == fake[best_step]
    assert (chosen["test"] == last["test"]) == (best_step == 8)
    newest = restored(out, out / "model.ckpt-8")
    assert all(np.array_equal(w.numpy(), v) for w, v in zip(t.model.weights, newest, strict=True))


def test_a_lower_is_better_metric_and_a_tie_keeps_the_earlier_step():
    loss = best.Spec.parse("valid_long/loss")
    assert loss.better(0.5, 0.6) and not loss.better(0.6, 0.5) and not loss.better(0.5, 0.5)
    accuracy = best.Spec.parse("dev/sequence_accuracy")
    assert accuracy.better(0.6, 0.5) and not accuracy.better(0.5, 0.5)
    assert best.Spec.parse("dev/neg_log_perplexity").better(0.1, 0.2)


@pytest.mark.slow
def test_a_resumed_run_keeps_its_best_and_a_changed_metric_is_refused(small_data, tmp_path):
    out = tmp_path / "run"
    fake = {2: 0.9, 4: 0.3, 6: 0.5, 8: 0.4}
    make_trainer(small_data, str(out), 4, fake=fake, keep_best="dev/fake").train()
    assert read_json(out / "best" / best.BEST_FILE)["step"] == 2
    t = make_trainer(small_data, str(out), 8, fake=fake, keep_best="dev/fake")
    assert t.best.step == 2  # read back: 0.5 at step 6 does not beat 0.9
    t.train()
    assert read_json(out / "best" / best.BEST_FILE)["step"] == 2
    assert read_json(out / run_dir.METRICS_BEST_FILE)["step"] == 2
    with pytest.raises(
        ValueError,
        match=r"--keep_best=dev/loss: .*best\.json keeps the best "
        r"by dev/fake; use --keep_best=dev/fake or move",
    ):
        make_trainer(small_data, str(out), 8, keep_best="dev/loss")


@pytest.mark.slow  # for the fast tier's time (docs/testing.md)
def test_a_checkpoint_best_json_does_not_name_is_a_leftover(small_data, tmp_path):
    out = tmp_path / "run"
    make_trainer(small_data, str(out), 2, fake={2: 0.9}, keep_best="dev/fake").train()
    # A kill after writing a better checkpoint and before best.json names it.
    for path in tf.io.gfile.glob(str(out / "best" / "model.ckpt-2.*")):
        tf.io.gfile.copy(path, path.replace("ckpt-2", "ckpt-6"))
    assert kept_steps(out / "best") == [2, 6]
    t = make_trainer(small_data, str(out), 2, fake={2: 0.9}, keep_best="dev/fake")
    assert kept_steps(out / "best") == [2] and t.best.path.endswith("best/model.ckpt-2")


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_a_damaged_or_dangling_best_json_is_one_error(small_data, tmp_path):
    out = tmp_path / "run"
    make_trainer(small_data, str(out), 2, fake={2: 0.9}, keep_best="dev/fake").train()
    path = out / "best" / best.BEST_FILE
    path.write_text('{"step": 6, "split": "dev", "metric": "fake", "value": 1.0}')
    with pytest.raises(ValueError, match="names step 6, whose checkpoint is not in"):
        make_trainer(small_data, str(out), 2, keep_best="dev/fake")
    path.write_text("{")
    with pytest.raises(ValueError, match=r"best\.json: not a best\.json"):
        make_trainer(small_data, str(out), 2, keep_best="dev/fake")


def test_bad_keep_best_flags_are_one_line_errors(small_data, tmp_path):
    for text in ("dev", "/loss", "dev/", "dev/a/b"):
        with pytest.raises(ValueError, match="expected SPLIT/METRIC"):
            trainer.TrainConfig(keep_best=text)
    with pytest.raises(ValueError, match="--keep_best: test_identity_small has no split 'nope'"):
        make_trainer(small_data, str(tmp_path / "a"), 2, keep_best="nope/loss")
    # A metric typo is refused before the first step, not at the first evaluation
    # (with --local_eval_frequency=2000 that was hours into the run).
    out = str(tmp_path / "b")
    t = make_trainer(small_data, out, 4000, keep_best="dev/bleu_score", local_eval_frequency=2000)
    trained = []
    train_step = t._train_step
    t._train_step = lambda batches: trained.append(1) or train_step(batches)
    with pytest.raises(cli.UserError, match="has no metric 'bleu_score'; it has .*accuracy"):
        t.train()
    assert trained == [] and checkpoints.by_step(out) == []


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_the_split_is_evaluated_though_not_in_eval_splits(small_data, tmp_path):
    t = make_trainer(small_data, str(tmp_path / "run"), 4, keep_best="test/accuracy")
    evaluated = []
    evaluate = t._evaluate_split
    t._evaluate_split = lambda split, step, max_steps: (
        evaluated.append((split, step)) or evaluate(split, step, max_steps)
    )
    t.train()
    assert evaluated[:2] == [("dev", 2), ("test", 2)]
    assert os.path.exists(tmp_path / "run" / run_dir.METRICS_BEST_FILE)


def compare_ut_length_depth(out: str, data: str, config, **request) -> str:
    """t2t-compare's table of one ut_length_depth run on test_identity_small."""
    from t2t_lite.reproduction import comparison, runs

    models, problems = ["ut_length_depth"], ["test_identity_small"]
    return comparison.compare(
        runs.Request(out, models, problems, data, config, greedy_examples=-1, **request)
    )


@pytest.mark.slow
def test_t2t_compare_with_keep_best_prints_and_records_the_best_checkpoints_figures(
    tmp_path, monkeypatch
):
    from t2t_lite.data import problem as problem_lib
    from t2t_lite.reproduction import runs

    # Periodic evaluations of one batch: the choice must read the whole split anyway.
    monkeypatch.setattr(runs, "EVAL_STEPS", 1)
    # No later evaluation improves on the first: step 3 is kept, not the last (whose
    # figures would equal the final evaluation's whatever chose it).
    monkeypatch.setattr(best.Spec, "better", lambda self, value, than: False)
    data = str(tmp_path / "d")
    problem_lib.get("test_identity_small").generate_data(data, seed=3)
    config = trainer.TrainConfig(train_steps=6, local_eval_frequency=3, keep_best="dev/loss")
    out, kept = str(tmp_path / "o"), str(tmp_path / "records")
    table = compare_ut_length_depth(out, data, config, hparams="batch_size=48", records_dir=kept)
    run = os.path.join(out, "test_identity_small", "ut_length_depth")
    chosen = read_json(os.path.join(run, run_dir.METRICS_BEST_FILE))
    step = chosen["step"]
    assert step == 3 and chosen["depends_on"]["keep_best"] == "dev/loss"
    # Chosen on the whole split: the figure that chose it is the final one of its weights.
    assert chosen["selected_by"]["value"] == pytest.approx(chosen["dev"]["loss"], rel=1e-5)
    decoded = read_json(os.path.join(run, "greedy_best_test.json"))
    kept_best = os.path.join(run, "best", f"model.ckpt-{step}")
    source = decoded["depends_on"]
    assert source["checkpoint"] == f"model.ckpt-{step}"  # best/'s, by its fingerprint:
    assert source["checkpoint_fingerprint"] == checkpoints.fingerprint(kept_best)
    cells = [cell.strip() for cell in table.splitlines()[2].strip("|").split("|")]
    assert cells[2] == f"{chosen['test']['accuracy']:.2f}"
    assert cells[4] == f"{decoded['char_accuracy']:.2f}"
    record = read_json(os.path.join(kept, "test_identity_small", "ut_length_depth", "seed1.json"))
    assert record["depends_on"]["keep_best"] == "dev/loss"
    assert record["results"]["test"]["accuracy"] == chosen["test"]["accuracy"]
    # Without --keep_best the same runs print their last checkpoint's figures.
    last = read_json(os.path.join(run, run_dir.METRICS_FILE))
    plain = dataclasses.replace(config, keep_best="")
    table = compare_ut_length_depth(out, data, plain, hparams="batch_size=48")
    cells = [cell.strip() for cell in table.splitlines()[2].strip("|").split("|")]
    assert cells[2] == f"{last['test']['accuracy']:.2f}"


@pytest.mark.slow
def test_t2t_compare_reads_a_best_checkpoint_before_the_last_step_as_finished(
    tmp_path, monkeypatch
):
    from t2t_lite.data import problem as problem_lib

    # No later evaluation improves: the first one, step 3 of 6, is the best.
    monkeypatch.setattr(best.Spec, "better", lambda self, value, than: False)
    data = str(tmp_path / "d")
    problem_lib.get("test_identity_small").generate_data(data, seed=3)
    config = trainer.TrainConfig(train_steps=6, local_eval_frequency=3, keep_best="dev/loss")
    out, kept = str(tmp_path / "o"), str(tmp_path / "records")
    table = compare_ut_length_depth(out, data, config, records_dir=kept)
    run = os.path.join(out, "test_identity_small", "ut_length_depth")
    chosen = read_json(os.path.join(run, run_dir.METRICS_BEST_FILE))
    assert chosen["step"] == 3 and "left out" not in table
    decoded = read_json(os.path.join(run, "greedy_best_test.json"))["depends_on"]
    assert decoded["checkpoint"] == "model.ckpt-3"
    cells = [cell.strip() for cell in table.splitlines()[2].strip("|").split("|")]
    assert cells[2] == f"{chosen['test']['accuracy']:.2f}"
    record = read_json(os.path.join(kept, "test_identity_small", "ut_length_depth", "seed1.json"))
    assert record["results"]["test"]["accuracy"] == chosen["test"]["accuracy"]


def test_a_full_disk_while_copying_the_best_leaves_no_part_of_that_copy(small_data, tmp_path):
    # The write fails after its index is partly written (a real full disk left
    # 8,192 of 10,960 bytes): the message says the unfinished write was removed,
    # so it is; best.json still names the earlier step, whose files stay.
    t = make_trainer(small_data, str(tmp_path / "run"), 4, keep_best="dev/loss")
    best_dir = tmp_path / "run" / "best"
    t.best.consider(2, {"loss": 2.0})
    write = t.best.checkpoint.write

    def full(prefix):
        with open(prefix + ".index", "wb") as f:
            f.write(b"\x00" * 100)  # part of the index
        raise tf.errors.ResourceExhaustedError(None, None, f"{prefix}.index; No space left")

    t.best.checkpoint.write = full
    with pytest.raises(tf.errors.ResourceExhaustedError):
        t.best.consider(4, {"loss": 1.0})
    t.best.checkpoint.write = write
    assert not [n for n in os.listdir(best_dir) if n.startswith("model.ckpt-4")]
    assert [n for n in os.listdir(best_dir) if n.startswith("model.ckpt-2")]
    assert read_json(best_dir / best.BEST_FILE)["step"] == 2
