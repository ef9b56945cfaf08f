"""Kept figures of translation tables (reproduction/records.py) and the data's fingerprint."""

import dataclasses
import json
import os

import pytest
import tensorflow as tf

from t2t_lite.data import problem as problem_lib
from t2t_lite.experiment import Experiment
from t2t_lite.reproduction import comparison, records, runs, translation
from t2t_lite.reproduction.translation import ROWS, Figures
from t2t_lite.training.config import TrainConfig

PROBLEM = "algorithmic_reverse_decimal20"
BASE, GREEDY = ROWS["t3_base"], ROWS["t3_greedy"]


def _write(problem, data_dir: str, contents: list[bytes]) -> None:
    tf.io.gfile.makedirs(data_dir)
    for path, content in zip(problem.data_files(data_dir), contents, strict=True):
        with tf.io.gfile.GFile(path, "wb") as f:
            f.write(content)


def test_the_fingerprint_follows_the_files_bytes_not_their_write_times(tmp_path):
    problem = problem_lib.get(PROBLEM)
    count = len(problem.data_files("d"))
    contents = [f"shard {i}".encode() for i in range(count)]
    first, second = str(tmp_path / "a"), "ram://fingerprint/b"  # any TF filesystem
    _write(problem, first, contents)
    os.utime(problem.data_files(first)[0], ns=(1, 1))  # another write time
    _write(problem, second, contents)
    assert problem.data_stamp(first) != problem.data_stamp(second)
    assert problem.data_fingerprint(first) == problem.data_fingerprint(second)
    # One byte, or a byte moved from one file's end to the next one's start, is other data.
    changed = [contents[0][:-1] + b"X", *contents[1:]]
    moved = [contents[0][:-1], contents[0][-1:] + contents[1], *contents[2:]]
    for other in (changed, moved):
        _write(problem, second, other)
        assert problem.data_fingerprint(first) != problem.data_fingerprint(second)


def _experiment(overrides: str = translation.BASE) -> Experiment:
    return Experiment.resolve("transformer", "translate_from_files", "transformer_tiny", overrides)


def _figures(seed: int | None, bleu: float = 24.1) -> Figures:
    return Figures(seed, f"/runs/seed{seed}/t3_base", 9.5, bleu, 1_940_000, 3000, 51.2, (1.5, 2.25))


def _store(tmp_path) -> records.Records:
    return records.Records(str(tmp_path / "records"), "dev", "f00d", 3000, 0.0)


def test_a_record_reads_back_only_where_everything_it_depends_on_matches(tmp_path):
    store, exp = _store(tmp_path), _experiment()
    store.keep("t3_base", BASE, exp, 2, _figures(2))
    assert store.path("t3_base", 2) == str(tmp_path / "records" / "dev" / "t3_base" / "seed2.json")
    assert store.recall("t3_base", BASE, exp, 2) == _figures(2)  # the ponder pair a tuple again
    assert store.recall("t3_base", BASE, exp, 3) is None  # no record of that seed
    # The same file read for another experiment, decoding, data, budget or split: not used.
    assert store.recall("t3_base", BASE, _experiment(f"{translation.BASE},num_heads=1"), 2) is None
    assert store.recall("t3_base", GREEDY, exp, 2) is None
    for change in ({"data": "beef"}, {"train_steps": 2000}, {"train_minutes": 45.0}):
        assert dataclasses.replace(store, **change).recall("t3_base", BASE, exp, 2) is None
    assert dataclasses.replace(store, split="test").recall("t3_base", BASE, exp, 2) is None


def test_a_record_written_before_a_key_existed_reads_back_at_that_keys_old_value(tmp_path):
    store, exp = _store(tmp_path), _experiment()
    store.keep("t3_base", BASE, exp, 1, _figures(1))
    path = store.path("t3_base", 1)
    record = json.loads(tf.io.gfile.GFile(path).read())
    kept = record["depends_on"]["experiment"]["hparams"]
    for key in ("learning_rate_decay_steps", "length_bucket_step"):
        del kept[key]  # none then, none now; doubling buckets then, fine ones now
        with tf.io.gfile.GFile(path, "w") as f:
            f.write(json.dumps(record))
        recalled = store.recall("t3_base", BASE, exp, 1)
        assert recalled == (_figures(1) if key == "learning_rate_decay_steps" else None)


def test_a_damaged_record_is_one_line_naming_it(tmp_path):
    store = _store(tmp_path)
    path = store.path("t3_base", 1)
    tf.io.gfile.makedirs(os.path.dirname(path))
    for text in ("{", "[1]", '{"seed": 1}', '{"depends_on": {}, "bleu": 1}'):
        with tf.io.gfile.GFile(path, "w") as f:
            f.write(text)
        with pytest.raises(ValueError, match=f"{path}: not a t2t-compare record"):
            store.recall("t3_base", BASE, _experiment(), 1)


def test_complete_keeps_live_figures_and_adds_the_records_of_seeds_not_here(tmp_path):
    store, exp = _store(tmp_path), _experiment()
    smoothing0 = _experiment(ROWS["t3_smoothing0"].hparams)
    experiments = {"t3_base": exp, "t3_smoothing0": smoothing0}
    live = [(BASE, [_figures(1), _figures(2)]), (GREEDY, [_figures(1, 20.0), _figures(2, 21.0)])]
    store.keep("t3_base", BASE, exp, 3, _figures(3))
    store.keep("t3_greedy", GREEDY, exp, 3, _figures(3, 19.0))
    store.keep("t3_greedy", GREEDY, exp, 4, _figures(4, 18.0))  # its base has no seed 4
    keys = ["t3_base", "t3_greedy", "t3_smoothing0"]  # the last: no run, no record
    table, recalled = records.complete(store, keys, live, experiments, [1, 2, 3, 4], True)
    assert [(row, [f.seed for f in figures]) for row, figures in table] == [
        (BASE, [1, 2, 3]),
        (GREEDY, [1, 2, 3]),
    ]
    assert [f.bleu for f in table[1][1]] == [20.0, 21.0, 19.0]
    assert recalled == [("t3_base", 3), ("t3_greedy", 3)]
    # Every live figure was kept: a later table without those runs reads them back.
    assert store.recall("t3_greedy", GREEDY, exp, 1) == _figures(1, 20.0)


def test_a_single_runs_figure_is_kept_under_its_seed_and_read_back_without_one(tmp_path):
    store, exp = _store(tmp_path), _experiment()
    records.complete(store, ["t3_base"], [(BASE, [_figures(None)])], {"t3_base": exp}, [5], False)
    assert store.recall("t3_base", BASE, exp, 5) == dataclasses.replace(_figures(None), seed=5)
    table, recalled = records.complete(store, ["t3_base"], [], {"t3_base": exp}, [5], False)
    assert table == [(BASE, [_figures(None)])]
    assert recalled == [("t3_base", 5)]


def test_a_record_is_the_runs_alone_and_a_reprint_writes_nothing(tmp_path, monkeypatch):
    store, exp = _store(tmp_path), _experiment()
    single = dataclasses.replace(_figures(2), seed=None)  # as a one-seed table labels it
    store.keep("t3_base", BASE, exp, 2, single)
    path = store.path("t3_base", 2)
    first = tf.io.gfile.GFile(path, "rb").read()
    assert json.loads(first)["seed"] == 2  # the record's own seed, not the label
    writes = []
    monkeypatch.setattr(records.stamp.files, "write_bytes_atomically", lambda *a: writes.append(a))
    for label in (None, 2):  # printed again by a one-seed and by a several-seed table
        store.keep("t3_base", BASE, exp, 2, dataclasses.replace(single, seed=label))
    assert writes == [] and tf.io.gfile.GFile(path, "rb").read() == first
    store.keep("t3_base", BASE, exp, 2, _figures(2, 25.0))  # another figure: rewritten
    assert len(writes) == 1


def _results(char: float) -> dict:
    test = {"accuracy": char, "sequence_accuracy": char / 2, "loss": 1.0, "examples": 10}
    dev = {"accuracy": 1.0, "sequence_accuracy": 0.9, "loss": 0.1, "examples": 10}
    return {"dev": dev, "test": test}


def test_an_algorithmic_table_prints_from_its_records_and_trains_them_no_more(
    tmp_path, monkeypatch
):
    problem = problem_lib.get(PROBLEM)
    data = str(tmp_path / "data")
    _write(problem, data, [b"shard"] * len(problem.data_files(data)))
    trained = []

    def train(exp, data_dir, run_dir, config):  # each run's figure: its model's and seed's
        trained.append((os.path.basename(run_dir), config.random_seed))
        return _results((0.6 if "universal" in run_dir else 0.3) + config.random_seed / 10)

    monkeypatch.setattr(runs.trainer, "train", train)
    config = TrainConfig(train_steps=5)
    models, seeds = ["transformer", "universal_transformer"], ["1", "2"]
    kept, out = str(tmp_path / "records"), str(tmp_path / "out")

    def table(**changes):
        return comparison.compare(
            runs.Request(
                out,
                models,
                [PROBLEM],
                data,
                dataclasses.replace(config, **changes),
                seeds,
                records_dir=kept,
            ),
        )

    first = table()
    assert len(trained) == 4
    assert "| reverse | Transformer | 0.45 [0.40, 0.50] |" in first
    assert sorted(os.listdir(os.path.join(kept, PROBLEM))) == models
    trained.clear()  # the runs left no directory: the records stand in, nothing trains
    assert table() == first + (
        f"\n\nRead from records ({kept}; their runs are not here): "
        f"{PROBLEM} transformer seed 1; {PROBLEM} transformer seed 2; "
        f"{PROBLEM} universal_transformer seed 1; {PROBLEM} universal_transformer seed 2."
    )
    assert trained == []
    # No run here to draw a dev curve of: the bars only.
    assert os.path.exists(os.path.join(out, "table.png"))
    assert not os.path.exists(os.path.join(out, "curves.png"))
    assert table(train_steps=6) == first  # another budget: trained again, no record read
    assert len(trained) == 4


def _trained_run(run_dir: str, step: int, seconds: float, dev_curve: list) -> None:
    """A run directory as the trainer leaves it, as far as a record reads it: a
    checkpoint's index, train_time.json and evaluation events of dev and valid_long."""
    tf.io.gfile.makedirs(run_dir)
    with tf.io.gfile.GFile(os.path.join(run_dir, f"model.ckpt-{step}.index"), "w") as f:
        f.write("")
    with tf.io.gfile.GFile(os.path.join(run_dir, "train_time.json"), "w") as f:
        f.write(json.dumps({str(step): seconds}))
    for split, curve in (("dev", dev_curve), ("valid_long", [(step, 0.25)])):
        writer = tf.summary.create_file_writer(os.path.join(run_dir, f"eval_{split}"))
        with writer.as_default():
            for at, accuracy in curve:
                tf.summary.scalar("accuracy", accuracy, step=at)
                tf.summary.scalar("loss", 1.0 - accuracy, step=at)
        writer.close()


def test_a_record_keeps_the_runs_training_time_and_curves_and_a_table_draws_them(
    tmp_path, monkeypatch
):
    problem = problem_lib.get(PROBLEM)
    data = str(tmp_path / "data")
    _write(problem, data, [b"shard"] * len(problem.data_files(data)))

    def train(exp, data_dir, run_dir, config):  # seed k: k * 100 seconds, dev 0.5 then 0.5 + k/10
        k = config.random_seed
        _trained_run(run_dir, 5, 100.0 * k, [(5, 0.5 + k / 10), (2, 0.5)])
        return _results(0.3 + k / 10)

    monkeypatch.setattr(runs.trainer, "train", train)
    kept, out = str(tmp_path / "records"), str(tmp_path / "out")

    def table():
        return comparison.compare(
            runs.Request(
                out,
                ["transformer"],
                [PROBLEM],
                data,
                TrainConfig(train_steps=5),
                ["1", "2"],
                records_dir=kept,
            )
        )

    first = table()
    path = os.path.join(kept, PROBLEM, "transformer", "seed2.json")
    record = json.loads(tf.io.gfile.GFile(path).read())
    assert record["train_seconds"] == 200.0
    assert record["curves"]["dev"]["accuracy"] == [[2, 0.5], [5, pytest.approx(0.7)]]
    assert record["curves"]["valid_long"]["loss"] == [[5, 0.75]]
    assert record["results"]["test"]["accuracy"] == pytest.approx(0.5)
    before = tf.io.gfile.GFile(path, "rb").read()

    tf.io.gfile.rmtree(out)  # the runs are gone: the records stand in, with their curves
    curves_png = os.path.join(out, "curves.png")
    second = table()
    assert second.startswith(first) and "Read from records" in second
    assert os.path.exists(curves_png)
    row = {"recorded": {"r": record}}
    assert records.recorded_curves(row, "r")["accuracy"] == [(2, 0.5), (5, pytest.approx(0.7))]
    assert records.recorded_curves(row, "elsewhere") == {}
    # Printed from the records, they are left as they were (the trail not dropped).
    assert tf.io.gfile.GFile(path, "rb").read() == before
    assert records.run_trail(str(tmp_path / "no run")) == {}


def test_a_record_or_metrics_file_that_parses_but_is_damaged_names_its_file(tmp_path):
    # Valid JSON, wrong content: once "t2t-compare: error: test" or "Unknown format
    # code 'f' for object of type 'str'", naming no file.
    from t2t_lite.reproduction import finished
    from t2t_lite.training import trainer

    exp = Experiment.resolve("transformer", "test_identity_small", "transformer_test")
    body = {"depends_on": {"experiment": {"hparams": {}}}}
    cases = {
        "no_test.json": {"results": {"dev": {"accuracy": 0.5}}},
        "strings.json": {"results": {"dev": {"accuracy": "0.5"}, "test": {"accuracy": 0.5}}},
    }
    for name, damage in cases.items():
        path = tmp_path / name
        path.write_text(json.dumps({**body, **damage}))
        with pytest.raises(ValueError, match=rf"{name}: not a t2t-compare record \(.*results"):
            records._read(str(path), {}, records._body, type(exp.hparams))
    run = tmp_path / "run"
    exp.save(str(run))
    metrics = run / "metrics.json"
    config = trainer.TrainConfig(train_steps=1)
    for content in ('{"step": 1, "dev": {"loss": 1.0}\n', '{"step": 1, "dev": {"loss": "x"}}'):
        metrics.write_text(content)
        with pytest.raises(ValueError, match=r"metrics.json: not a valid metrics file"):
            finished.figures(str(run), exp, str(tmp_path), config)
