import dataclasses
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
from conftest import compare_one_row, entry_experiment

from t2t_lite.reproduction import comparison, finished, runs, seed_stats


def results(char, seq, dev_seq, ponder=None):
    test = {"accuracy": char, "sequence_accuracy": seq, "loss": 1.0, "examples": 10}
    if ponder:
        test.update(encoder_ponder_time=ponder[0], decoder_ponder_time=ponder[1])
    dev = {"accuracy": 1.0, "sequence_accuracy": dev_seq, "loss": 0.1, "examples": 10}
    return {"dev": dev, "test": test}


def test_table_sets_results_beside_the_paper():
    rows = [
        {
            "problem": "algorithmic_reverse_decimal20",
            "entry": comparison.ENTRIES["transformer"],
            "results": results(0.25, 0.05, 0.9),
        },
        {
            "problem": "algorithmic_identity_binary40",
            "entry": comparison.ENTRIES["adaptive_universal_transformer"],
            "results": results(0.8, 0.3, 1.0, ponder=(2.5, 3.25)),
        },
    ]
    lines = comparison.markdown_table(rows).splitlines()
    assert len(lines) == 4
    assert lines[2] == "| reverse | Transformer | 0.25 | 0.05 | - | - | 0.13 | 0.06 | 0.90 | - |"
    assert (
        lines[3] == "| copy | UT + ACT | 0.80 | 0.30 | - | - | 0.91 | 0.35 | 1.00 | 2.50 / 3.25 |"
    )


def test_task_names():
    assert comparison.task_of("algorithmic_identity_decimal40") == "copy"
    assert comparison.task_of("algorithmic_addition_binary20") == "addition"
    assert comparison.task_of("lte_control") == "LTE control"
    assert comparison.task_of("translate_ende") is None


def test_learning_to_execute_rows_sit_beside_tables_5_and_6():
    rows = [
        {
            "problem": "lte_double",
            "entry": comparison.ENTRIES["universal_transformer"],
            "results": results(0.5, 0.25, 0.75),
        },
        {
            "problem": "lte_program",
            "entry": comparison.ENTRIES["transformer_offsets"],
            "results": results(0.5, 0.25, 0.75),
        },
    ]
    lines = comparison.markdown_table(rows).splitlines()
    assert lines[2] == "| LTE double | UT | 0.50 | 0.25 | - | - | 1.00 | 1.00 | 0.75 | - |"
    assert lines[3] == (
        "| LTE program | Transformer, random offsets | 0.50 | 0.25 | - | - | 0.71 | 0.29 "
        "| 0.75 | - |"
    )
    # An LTE copy row is not Table 4's copy.
    assert comparison.paper_figures("lte_copy", "transformer") == (0.98, 0.63)
    assert comparison.paper_figures("algorithmic_identity_decimal20", "transformer") == (0.53, 0.03)
    assert comparison.paper_figures("translate_ende", "transformer") == (None, None)


def test_unknown_model_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown \\['lstm'\\]; known: transformer, universal"):
        comparison.parse_entries(["transformer", "lstm"])


def finished_run(tmp_path, exp, data_dir, seed, step=5, source=True, minutes=0.0, by="train_steps"):
    """A run directory as the trainer left it before `stamp`'s form: experiment.json and
    metrics.json with its "source" (read through the migration, run_dir.read_metrics)."""
    from t2t_lite import files, stamp

    run = tmp_path / "run"
    exp.save(str(run))
    checkpoint = str(run / f"model.ckpt-{step}")
    tf.train.Checkpoint(v=tf.Variable([1.0, float(step)])).write(checkpoint)
    record = {"step": step, "dev": {"accuracy": 1.0}, "test": {"accuracy": 0.5}}
    if source:
        record["source"] = {
            "data_dir": files.absolute(data_dir),
            "data_stamp": exp.build_problem().data_stamp(data_dir),
            "random_seed": seed,
            "train_minutes": minutes,
            "stopped_by": by,
            **stamp.checkpoint(checkpoint),
        }
    (run / "metrics.json").write_text(json.dumps(record))
    return str(run)


def test_finished_runs_are_reused_only_for_the_same_experiment_data_and_seed(tmp_path):
    from t2t_lite import experiment

    def resolve(overrides=""):
        return experiment.Experiment.resolve(
            "transformer", "test_identity_small", "transformer_test", overrides
        )

    def config(steps=5, seed=1, minutes=0.0):
        return runs.trainer.TrainConfig(train_steps=steps, random_seed=seed, train_minutes=minutes)

    data = str(tmp_path / "data")
    run = finished_run(tmp_path, resolve(), data, seed=1)
    figures = {"dev": {"accuracy": 1.0}, "test": {"accuracy": 0.5}}
    assert finished.figures(run, resolve(), data, config()) == figures
    assert finished.figures(run, resolve(), data, config(steps=6)) is None  # resumes
    # Other hparams: the trainer's own refusal, before any figure is read.
    with pytest.raises(ValueError, match="different experiment .differs in: hparams.num_heads"):
        finished.figures(run, resolve("num_heads=4"), data, config())
    with pytest.raises(ValueError, match="data_dir='.*data', not data_dir='.*other'"):
        finished.figures(run, resolve(), str(tmp_path / "other"), config())
    with pytest.raises(ValueError, match="random_seed=1, not random_seed=2; use a new --output"):
        finished.figures(run, resolve(), data, config(seed=2))
    assert finished.figures(str(tmp_path / "missing"), resolve(), data, config()) is None
    with pytest.raises(ValueError, match="train_minutes=0.0, not train_minutes=2.0"):
        finished.figures(run, resolve(), data, config(minutes=2.0))
    # At equal time: a run that spent its budget before train_steps is finished.
    timed = finished_run(tmp_path, resolve(), data, 1, step=3, minutes=2.0, by="time budget")
    assert finished.figures(timed, resolve(), data, config(minutes=2.0)) is not None
    stopped = finished_run(tmp_path, resolve(), data, 1, step=3, minutes=2.0)  # not its budget
    assert finished.figures(stopped, resolve(), data, config(minutes=2.0)) is None
    # Figures that do not say where they came from are evaluated again.
    old = finished_run(tmp_path, resolve(), data, seed=1, source=False)
    assert finished.figures(old, resolve(), data, config()) is None
    # A checkpoint replaced under its own name (a restore, a copy): taken again.
    run = finished_run(tmp_path, resolve(), data, seed=1)
    assert finished.figures(run, resolve(), data, config()) == figures
    tf.train.Checkpoint(v=tf.Variable([2.0, 5.0])).write(os.path.join(run, "model.ckpt-5"))
    assert finished.figures(run, resolve(), data, config()) is None
    os.remove(os.path.join(run, "model.ckpt-5.index"))  # gone: taken again
    assert finished.figures(run, resolve(), data, config()) is None
    # A split missing, a directory in the file's place: one line naming the file.
    run = finished_run(tmp_path, resolve(), data, seed=1)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    del metrics["test"]
    (tmp_path / "run" / "metrics.json").write_text(json.dumps(metrics))
    with pytest.raises(
        ValueError, match="metrics.json: not a valid metrics file .* no 'test' split"
    ):
        finished.figures(run, resolve(), data, config())
    os.remove(tmp_path / "run" / "metrics.json")
    os.mkdir(tmp_path / "run" / "metrics.json")
    with pytest.raises(ValueError, match="metrics.json: not a valid metrics file .a directory"):
        finished.figures(run, resolve(), data, config())
    shutil.rmtree(tmp_path / "run")
    # Data regenerated in the same directory: the figures are taken again.
    run = finished_run(tmp_path, resolve(), data, seed=1)
    problem = resolve().build_problem()
    os.makedirs(data)
    with open(problem.data_files(data)[0], "wb") as shard:
        shard.write(b"regenerated")
    assert finished.figures(run, resolve(), data, config()) is None


def test_rerun_with_other_hparams_refuses_instead_of_printing_the_old_figures(
    tmp_path, monkeypatch
):
    from t2t_lite import stamp

    trained = []

    def fake_train(exp, data_dir, run_dir, config):
        trained.append(exp.hparams.num_heads)
        exp.save(run_dir)
        checkpoint = os.path.join(run_dir, f"model.ckpt-{config.train_steps}")
        tf.train.Checkpoint(v=tf.Variable(1.0)).write(checkpoint)
        record = {"step": config.train_steps, **results(0.5, 0.5, 0.5)}
        record["source"] = {
            "data_dir": os.path.abspath(data_dir),
            "data_stamp": exp.build_problem().data_stamp(data_dir),
            "random_seed": 1,
            "train_minutes": 0.0,
            "stopped_by": "train_steps",
            **stamp.checkpoint(checkpoint),
        }
        with open(os.path.join(run_dir, "metrics.json"), "w") as f:
            json.dump(record, f)
        return results(0.5, 0.5, 0.5)

    monkeypatch.setattr(runs.trainer, "train", fake_train)
    config = runs.trainer.TrainConfig(train_steps=2)
    entries = comparison.parse_entries(["transformer"])
    problem, out = "algorithmic_reverse_decimal20", str(tmp_path / "o")
    runs.run([problem], entries, str(tmp_path / "d"), out, config)
    runs.run([problem], entries, str(tmp_path / "d"), out, config)  # reused
    assert len(trained) == 1
    with pytest.raises(ValueError, match="holds a different experiment"):
        runs.run([problem], entries, str(tmp_path / "d"), out, config, hparams="num_heads=2")
    assert len(trained) == 1


def test_plots_of_the_table_and_of_each_runs_dev_curves(tmp_path):
    import tensorflow as tf

    from t2t_lite.visualization import curves

    run_dir = tmp_path / "algorithmic_reverse_decimal20" / "transformer"
    writer = tf.summary.create_file_writer(str(run_dir / "eval_dev"))
    with writer.as_default():
        for step, loss in ((500, 0.4), (1000, 0.1), (200, 2.0)):  # written out of order
            tf.summary.scalar("loss", loss, step=step)
            tf.summary.scalar("accuracy", 1 - loss / 4, step=step)
    writer.close()
    read = curves.eval_curves(str(run_dir))
    assert [step for step, _ in read["loss"]] == [200, 500, 1000]
    assert [v for _, v in read["loss"]] == pytest.approx([2.0, 0.4, 0.1])
    assert "sequence_accuracy" not in read

    row = {
        "problem": "algorithmic_reverse_decimal20",
        "entry": comparison.ENTRIES["transformer"],
        "results": results(0.25, 0.05, 0.9),
        "run_dir": str(run_dir),
    }
    written = comparison.write_plots([row], str(tmp_path))
    assert written == [str(tmp_path / "table.png"), str(tmp_path / "curves.png")]
    for path in written:
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_several_seeds_print_median_and_range():
    row = {
        "problem": "algorithmic_reverse_decimal20",
        "entry": comparison.ENTRIES["adaptive_universal_transformer"],
        "results": [
            results(0.2, 0.1, 0.9, ponder=(2.0, 3.0)),
            results(0.6, 0.0, 1.0, ponder=(4.0, 3.0)),
            results(0.4, 0.3, 0.8, ponder=(3.0, 3.0)),
        ],
        "run_dirs": ["a", "b", "c"],
        "seeds": [1, 2, 3],
    }
    line = comparison.markdown_table([row]).splitlines()[2]
    assert line == (
        "| reverse | UT + ACT | 0.40 [0.20, 0.60] | 0.10 [0.00, 0.30] | - | - | 0.96 | 0.46 "
        "| 0.90 [0.80, 1.00] | 3.00 [2.00, 4.00] / 3.00 [3.00, 3.00] |"
    )
    assert seed_stats.runs(row)[1] == (2, "b", row["results"][1])
    assert seed_stats.spread([1.0, 4.0]) == "2.50 [1.00, 4.00]"  # even count: mean of the middle
    # A non-finite figure (null in strict JSON) is counted apart, never ranked.
    assert seed_stats.spread([1.0, None, 4.0]) == "2.50 [1.00, 4.00] (1 of 3 nan)"
    assert seed_stats.spread([None]) == "nan" and seed_stats.spread([float("nan"), 2.0]) == (
        "2.00 (1 of 2 nan)"
    )
    assert seed_stats.median([3.0, None, 1.0]) == 2.0
    assert not seed_stats.above([5.0, None], [1.0]) and seed_stats.above([5.0], [1.0])


def test_seeds_flag_is_checked():
    assert runs.parse_seeds([]) is None
    assert runs.parse_seeds(["3", "1"]) == [3, 1]
    with pytest.raises(ValueError, match="--seeds: expected integers such as 1,2,3, got 1,x"):
        runs.parse_seeds(["1", "x"])
    with pytest.raises(ValueError, match="--seeds: 1,1 repeats a seed"):
        runs.parse_seeds(["1", "1"])


def test_several_seeds_train_one_run_directory_each(tmp_path, monkeypatch):
    trained = []

    def fake_train(exp, data_dir, run_dir, config):
        trained.append((run_dir, config.random_seed))
        return results(0.5, 0.5, 0.5)

    monkeypatch.setattr(runs.trainer, "train", fake_train)
    config = runs.trainer.TrainConfig(train_steps=2, random_seed=9)
    entries = comparison.parse_entries(["transformer"])
    problem = "algorithmic_reverse_decimal20"
    rows = runs.run([problem], entries, "d", str(tmp_path), config, [1, 2])
    assert trained == [
        (str(tmp_path / "seed1" / problem / "transformer"), 1),
        (str(tmp_path / "seed2" / problem / "transformer"), 2),
    ]
    assert rows[0]["seeds"] == [1, 2] and len(rows[0]["results"]) == 2
    trained.clear()
    (row,) = runs.run([problem], entries, "d", str(tmp_path / "one"), config)
    assert trained == [(str(tmp_path / "one" / problem / "transformer"), 9)]
    assert row["run_dir"] == trained[0][0] and row["results"]["dev"]["sequence_accuracy"] == 0.5


def test_missing_skip_tabulates_the_finished_runs_and_names_the_others(tmp_path, monkeypatch):
    from t2t_lite import run_lock

    problem, data = "algorithmic_reverse_decimal20", str(tmp_path / "data")

    def seed_dir(seed, model):
        run = tmp_path / f"seed{seed}" / problem / model
        os.makedirs(run.parent, exist_ok=True)
        return run

    evaluated = []

    def evaluation_only(exp, data_dir, run_dir, config):  # no step left to train
        evaluated.append(run_dir)
        if "universal" in run_dir:
            raise run_lock.RunLockedError(f"{run_dir!r} is being trained by pid 7")
        return results(0.5, 0.1, 1.0)

    monkeypatch.setattr(runs.trainer, "train", evaluation_only)
    config = runs.trainer.TrainConfig(train_steps=5)
    for seed, char in ((1, 0.4), (3, 0.8)):  # the Transformer's seeds 1 and 3 finished
        run = seed_dir(seed, "transformer")
        os.rename(finished_run(tmp_path, entry_experiment("transformer", problem), data, seed), run)
        record = json.loads((run / "metrics.json").read_text())
        record.update(results(char, 0.1, 1.0))
        (run / "metrics.json").write_text(json.dumps(record))
    # Trained through step 5 without figures: evaluated. The UT's seed 1 stopped at 3
    # (not evaluated); its seed 2 reached 5 under a live trainer (left to it).
    for seed, model, step in (
        (2, "transformer", 5),
        (1, "universal_transformer", 3),
        (2, "universal_transformer", 5),
    ):
        os.makedirs(seed_dir(seed, model))
        (seed_dir(seed, model) / f"model.ckpt-{step}.index").write_bytes(b"")
    models = ["transformer", "universal_transformer"]
    table = comparison.compare(
        runs.Request(
            str(tmp_path), models, [problem], data, config, ["1", "2", "3"], missing="skip"
        )
    )
    assert evaluated == [str(seed_dir(2, "transformer")), str(seed_dir(2, "universal_transformer"))]
    lines = table.splitlines()
    assert len(lines) == 5 and lines[2].startswith("| reverse | Transformer | 0.50 [0.40, 0.80] |")
    assert lines[4] == (
        f"Not finished, left out (--missing=skip): {problem} universal_transformer seed 1; "
        f"{problem} universal_transformer seed 2; {problem} universal_transformer seed 3."
    )
    assert (tmp_path / "table.md").read_text() == table + "\n"
    assert not (tmp_path / "seed3" / problem / "universal_transformer").exists()
    with pytest.raises(ValueError, match="--missing: expected one of train, skip, got 'keep'"):
        comparison.compare(
            runs.Request(str(tmp_path), models, [problem], data, config, missing="keep")
        )


def test_hparams_apply_to_every_run_after_the_entrys_own(monkeypatch):
    seen = []
    monkeypatch.setattr(
        runs.trainer, "train", lambda exp, *_: seen.append(exp.hparams) or results(1, 1, 1)
    )
    config = runs.trainer.TrainConfig(train_steps=2)
    entries = comparison.parse_entries(["transformer", "universal_transformer_offsets"])
    runs.run(["lte_copy"], entries, "d", "o", config, hparams="max_length=120")
    assert [hp.max_length for hp in seen] == [120, 120]
    assert seen[1].position_start_index == "random" and seen[1].position_start_max == 400
    with pytest.raises(ValueError, match="max_length"):
        runs.run(["lte_copy"], entries, "d", "o", config, hparams="max_length=-1")


def test_coupled_entries_couple_by_task_and_refuse_copy(tmp_path):
    """Reverse and addition have a coupling (addition's names the problem's separator);
    copy has none, and the refusal comes before any data or training."""
    entry = comparison.ENTRIES["universal_transformer_coupled"]
    assert entry.hparams_for("k", "algorithmic_reverse_decimal40").endswith(
        "position_start_max=400,position_coupling=reverse"
    )
    assert entry.hparams_for("k", "algorithmic_addition_binary20").endswith(
        "position_coupling=addition,position_separator_id=4"  # binary: 2 digits + 2 reserved
    )
    config = runs.trainer.TrainConfig(train_steps=1)
    with pytest.raises(ValueError, match="reverse and addition problems only, not algorithmic_id"):
        runs.run(["algorithmic_identity_decimal40"], [entry], "", str(tmp_path), config)
    assert not list(tmp_path.iterdir())


def test_ut_shaped_transformer_entry_has_the_uts_depth_width_and_positions():
    """transformer_ut_shape_coupled: an unshared Transformer as deep and wide as the
    UT set's recurrence, the position signal before every layer, coupled by task."""
    from t2t_lite import experiment

    key, problem = "transformer_ut_shape_coupled", "algorithmic_addition_decimal40"
    entry = comparison.ENTRIES[key]
    ut = experiment.Experiment.resolve(
        "universal_transformer", problem, "universal_transformer_algorithmic_tiny"
    ).hparams
    hp = entry_experiment(key, problem).hparams
    assert (hp.num_hidden_layers, hp.hidden_size, hp.filter_size, hp.num_heads) == (
        ut.num_rec_steps,
        ut.hidden_size,
        ut.filter_size,
        ut.num_heads,
    )
    assert hp.position_every_layer and hp.position_coupling == "addition"
    assert hp.position_separator_id == 12  # decimal: 10 digits + 2 reserved
    assert (hp.position_start_index, hp.position_start_max) == ("random", 400)
    assert entry.hparams_for(key, "algorithmic_reverse_decimal40").endswith(
        "position_every_layer=True,position_coupling=reverse"
    )


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_greedy_figures_sit_beside_the_teacher_forced_ones(copy_run, tmp_path, monkeypatch):
    """Greedy accuracy of the run's newest checkpoint, kept in the run directory
    with its checkpoint's name: the table's second read decodes nothing."""
    from t2t_lite.reproduction import greedy

    count = 8  # test examples: the naive loop below runs a full forward pass per symbol

    data_dir, run_dir = copy_run
    run = tmp_path / "run"
    run.mkdir()
    for name in os.listdir(run_dir):  # the fixture's run is shared: work on a copy
        if os.path.isfile(os.path.join(run_dir, name)):
            shutil.copy(os.path.join(run_dir, name), run / name)
    row = {"problem": "test_identity_small", "entry": comparison.ENTRIES["transformer"]}
    row.update(results=results(0.9, 0.5, 1.0), run_dir=str(run))
    comparison.add_greedy([row], data_dir, count)
    kept = json.loads((run / "greedy_test.json").read_text())
    depends_on = kept.pop("depends_on")
    assert kept["examples"] == count and depends_on["checkpoint"] == "model.ckpt-800"
    # The same figures from a naive greedy loop (a full forward pass per symbol,
    # no cache, no search code) over the first `count` test examples.
    from t2t_lite import run_dir as run_dir_lib
    from t2t_lite.data import tfrecord

    problem, model, _ = run_dir_lib.open_run(str(run))
    examples = tfrecord.read_examples(problem.split_files(data_dir, "test"), count)
    ids = tf.TensorSpec([1, None], tf.int64)

    # One graph for every length: an eager Keras call per symbol cost about
    # 0.3 s, most of this test's time.
    @tf.function(input_signature=[ids, ids])
    def last_logits(inputs, targets):  # [1, S], [1, T] -> [V] at the last position
        return model({"inputs": inputs, "targets": targets})[0, -1]

    correct = total = exact = 0
    for example in examples:
        source, target, output = example["inputs"], example["targets"], []
        while len(output) < len(source) - 1 + 50 and output[-1:] != [1]:
            logits = last_logits(
                tf.constant([source], tf.int64), tf.constant([output + [0]], tf.int64)
            )
            output.append(int(np.argmax(logits)))
        output = output if output[-1:] == [1] else [*output, 1]
        padded = (output + [0] * len(target))[: len(target)]
        correct += sum(a == b for a, b in zip(padded, target, strict=True))
        total += len(target)
        exact += output == target
    assert kept["char_accuracy"] == pytest.approx(correct / total)
    assert kept["sequence_accuracy"] == pytest.approx(exact / count)
    line = comparison.markdown_table([row]).splitlines()[2]
    expected = f"{kept['char_accuracy']:.2f} | {kept['sequence_accuracy']:.2f}"
    assert f"| 0.90 | 0.50 | {expected} |" in line

    def no_decoding(*args):
        raise AssertionError("decoded again")

    monkeypatch.setattr(greedy.runner, "decode_split", no_decoding)
    assert greedy.evaluate(str(run), data_dir, "test", count) == kept
    with pytest.raises(AssertionError, match="decoded again"):  # another count: decoded
        greedy.evaluate(str(run), data_dir, "test", count // 2)
    other_data = tmp_path / "other_data"  # the same files elsewhere: another data dir
    shutil.copytree(data_dir, other_data)
    with pytest.raises(AssertionError, match="decoded again"):
        greedy.evaluate(str(run), str(other_data), "test", count)
    # Regenerated data in the same directory: other files, decoded again.
    shard = (
        greedy.experiment.Experiment.load(str(run)).build_problem().filepaths(data_dir, "test")[0]
    )
    kept_time = os.stat(shard).st_mtime_ns
    os.utime(shard, ns=(kept_time, kept_time + 10**9))
    try:
        with pytest.raises(AssertionError, match="decoded again"):
            greedy.evaluate(str(run), data_dir, "test", count)
    finally:  # the fixture's data is shared
        os.utime(shard, ns=(kept_time, kept_time))
    # A retrained run reuses its checkpoint names, not its values: decoded again.
    from t2t_lite import checkpoints
    from t2t_lite.training import averaging

    prefix = str(run / "model.ckpt-800")
    reader = checkpoints.reader(prefix)
    names = sorted(reader.get_variable_to_shape_map())
    tensors = [tf.constant(reader.get_tensor(name)) for name in names]
    trained = next(i for i, name in enumerate(names) if "embedding" in name)
    tensors[trained] += 1.0
    averaging.write_replacing(prefix, names, tensors)
    with pytest.raises(AssertionError, match="decoded again"):
        greedy.evaluate(str(run), data_dir, "test", count)


def test_length_table_entries_resolve_with_positions_by_task():
    """The length table's rows: positions as each task needs them, the
    equal-parameter Transformer with the UT's one block, the equal-compute one
    encoder as deep as the UT's steps at the longest training input (ceil(41 / 2)
    + 1 = 22 for length 40, 12 for length 20) and the decoder as deep as the
    UT's fixed decoder, and a step cap past every test input."""
    from t2t_lite.layers import universal
    from t2t_lite.reproduction import entries

    def hparams(key, problem):
        return entry_experiment(key, problem).hparams

    parity, reverse = "algorithmic_parity_binary40", "algorithmic_reverse_decimal40"
    ut_parity = hparams("ut_length_depth", parity)
    assert (ut_parity.position_embedding, ut_parity.causal_encoder) == ("none", True)
    assert hparams("ut_fixed_depth", "algorithmic_sort_binary40").causal_encoder is False
    ut_reverse = hparams("ut_fixed_depth", reverse)
    assert (ut_reverse.position_coupling, ut_reverse.position_eval) == ("reverse", "spread")
    copy = hparams("transformer_by_task", "algorithmic_identity_decimal40")
    assert (copy.position_start_index, copy.position_start_max) == ("randomized", 400)
    assert (copy.position_coupling, copy.position_eval) == ("none", "spread")
    assert hparams("transformer_equal_params", parity).num_hidden_layers == 1
    compute = hparams("transformer_equal_compute", parity)
    assert (compute.encoder_layers, compute.decoder_layers, compute.hidden_size) == (22, 4, 64)
    sort = hparams("transformer_equal_compute", "algorithmic_sort_decimal20")
    assert sort.encoder_layers == 12
    ut = hparams("ut_length_depth", "algorithmic_addition_decimal40")
    assert ut.length_depth and ut.rec_input_every_step and ut.position_coupling == "addition"
    assert ut.rec_decoder_steps == 4
    depth = universal.LengthDepth(
        ut.rec_steps_per_symbol, ut.rec_steps_offset, 0, cap=10**6
    )  # uncapped: the steps asked for at the test split's longest input (401 positions)
    assert int(depth.steps([401])[0]) == 202 <= ut.num_rec_steps
    assert set(entries.LENGTH_TABLE) <= set(comparison.ENTRIES)


@pytest.mark.slow
def test_the_length_scaled_ut_trains_evaluates_and_greedy_decodes_through_compare(tmp_path):
    """The length table's UT through the real trainer (its compiled step runs the
    per-row masked loop and the random moves), evaluation and greedy decoding:
    the table's row has every figure, and the run's hparams are the entry's."""
    cells, hp = compare_one_row(tmp_path, "ut_length_depth", "test_identity_small")
    assert cells[1].startswith("UT, depth ceil(n/2)+1")
    # The figures are checked against independent ones in compare_one_row; no
    # paper figure for this problem, no ponder time without ACT.
    assert cells[6] == cells[7] == cells[9] == "-"
    assert hp.length_depth and hp.rec_steps_random == 1 and hp.rec_decoder_steps == 4


@pytest.mark.parametrize(
    ("key", "counterpart"),
    [
        ("universal_transformer_randomized", "universal_transformer_coupled"),
        ("transformer_randomized", "transformer_coupled"),
        ("transformer_ut_shape_randomized", "transformer_ut_shape_coupled"),
    ],
)
def test_randomized_entries_are_their_coupled_counterparts_with_drawn_positions(key, counterpart):
    """Each randomized row is its coupled row with positions drawn from [0, 400)
    instead of offsets: every other hparam the same, on addition and reverse."""
    for problem in ("algorithmic_addition_decimal40", "algorithmic_reverse_decimal40"):
        drawn, offsets = (entry_experiment(k, problem).hparams for k in (key, counterpart))
        assert (drawn.position_start_index, drawn.position_start_max) == ("randomized", 400)
        assert offsets.position_start_index == "random"
        assert dataclasses.replace(drawn, position_start_index="random") == offsets


def test_the_length_tables_same_size_transformer_is_the_randomized_one_read_spread():
    """On addition and reverse the length table's equal-parameter Transformer
    (positions by task) is transformer_equal_params_randomized with evaluation
    positions spread: every other hparam the same."""
    for problem in ("algorithmic_addition_decimal40", "algorithmic_reverse_decimal40"):
        by_task, randomized = (
            entry_experiment(k, problem).hparams
            for k in ("transformer_equal_params", "transformer_equal_params_randomized")
        )
        assert (randomized.position_eval, by_task.position_eval) == ("consecutive", "spread")
        assert dataclasses.replace(randomized, position_eval="spread") == by_task


def test_the_same_size_transformer_has_the_randomized_uts_parameters():
    """transformer_equal_params_randomized is the UT's encoder and decoder block
    unshared once: as many weights as universal_transformer_randomized (the UT's
    step signal is sinusoidal, no weights), on addition."""
    counts = []
    for key in ("transformer_equal_params_randomized", "universal_transformer_randomized"):
        exp = entry_experiment(key, "algorithmic_addition_decimal40")
        model = exp.build_model(exp.build_problem().vocab_size)
        model(model.dummy_features())
        counts.append(model.count_params())
    assert counts[0] == counts[1] > 0


def test_a_search_for_a_table_that_does_not_take_one_is_refused(tmp_path):
    """--decode_hparams was silently ignored outside parsing tables (table3 printed
    beam-4 figures for beam_size=1)."""
    from t2t_lite.reproduction import tables

    config = runs.trainer.TrainConfig(train_steps=2)
    for models, problems in (
        (["table3"], ["translate_from_files"]),
        (["transformer"], ["algorithmic_reverse_decimal20"]),
    ):
        request = runs.Request(
            str(tmp_path), models, problems, str(tmp_path / "d"), config, search="beam_size=1"
        )
        with pytest.raises(ValueError, match="--decode_hparams=beam_size=1: only parsing tables"):
            tables.compare(request)
    assert not os.listdir(tmp_path)  # refused before anything ran
