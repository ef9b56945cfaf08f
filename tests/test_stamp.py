"""What a kept result depends on (stamp.py): one form on disk, one comparison,
and every kind of kept result made again when any one of its dependencies
changes, reused when none does."""

import dataclasses
import json
import os
import shutil

import pytest
import tensorflow as tf
from conftest import ROOT
from test_transformer import tiny_model

from t2t_lite import checkpoints, files, run_dir, stamp
from t2t_lite.data import problem as problem_lib
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.experiment import Experiment
from t2t_lite.export import ctranslate2_engine
from t2t_lite.reproduction import greedy, parsing_table, records, translation
from t2t_lite.training import averaging


def test_differs_names_every_changed_added_or_dropped_name():
    kept = {"a": 1, "b": [1, 2], "c": "x"}
    assert stamp.differs(kept, {"a": 1, "b": (1, 2), "c": "x"}) == []  # a tuple reads as a list
    assert stamp.differs(kept, {"a": 2, "b": (1, 2), "c": "x"}) == ["a"]
    assert stamp.differs(kept, {"a": 1, "b": (1, 2)}) == ["c"]  # kept with one more
    assert stamp.differs(kept, {"a": 1, "b": (1, 2), "c": "x", "d": None}) == ["d"]
    assert stamp.differs(None, {"b": 1, "a": 2}) == ["a", "b"]  # nothing kept
    line = stamp.describe(kept, {"a": 2, "d": 0}, ["a", "d"])
    assert line == "a: kept 1, now 2; d: kept (none), now 0"
    assert stamp.digest({"a": (1, 2)}) == stamp.digest({"a": [1, 2]}) != stamp.digest({"a": [2]})


def test_a_kept_result_reads_back_and_an_identical_rewrite_leaves_the_file(monkeypatch):
    path = "ram://stamp/kept/result.json"  # any TF filesystem
    stamp.keep(path, {"seed": 1, "sources": ("a", "b")}, {"accuracy": float("nan"), "n": 3})
    text = files.read_text(path)
    assert json.loads(text) == {
        "depends_on": {"seed": 1, "sources": ["a", "b"]},
        "accuracy": None,  # strict JSON
        "n": 3,
    }
    assert text.endswith("}\n")
    assert stamp.read(path) == ({"seed": 1, "sources": ["a", "b"]}, {"accuracy": None, "n": 3})
    assert stamp.kept_body(path, {"seed": 1, "sources": ("a", "b")}) == {"accuracy": None, "n": 3}
    assert stamp.kept_body(path, {"seed": 2, "sources": ("a", "b")}) is None
    assert stamp.read("ram://stamp/kept/none.json") is None
    writes = []
    monkeypatch.setattr(stamp.files, "write_bytes_atomically", lambda *a: writes.append(a))
    stamp.keep(path, {"sources": ["a", "b"], "seed": 1}, {"n": 3, "accuracy": None})
    assert writes == []  # the same bytes: the file (and its write time) is left alone
    stamp.keep(path, {"sources": ["a", "b"], "seed": 1}, {"n": 4, "accuracy": None})
    assert len(writes) == 1


def test_old_forms_read_through_their_migrations_and_damage_names_the_file(tmp_path):
    def kept(name: str, data) -> str:
        path = tmp_path / name
        path.write_text(json.dumps(data))
        return str(path)

    fields = {field: f"v{i}" for i, field in enumerate(greedy.LEGACY_KEY_FIELDS)}
    old_greedy = kept("greedy_test.json", {**fields, "char_accuracy": 0.5})
    assert stamp.read(old_greedy, greedy._legacy) == (fields, {"char_accuracy": 0.5})
    old_average = kept("avg.sources.json", {"sources": [["model.ckpt-1", "ab12"]]})
    assert stamp.read(old_average, averaging._legacy_sources) == (
        {"sources": [["model.ckpt-1", "ab12"]]},
        {},
    )
    source = {"data_dir": "/d", "data_stamp": "s", "random_seed": 1, "train_minutes": 0.0}
    old_metrics = kept(
        "metrics.json", {"step": 5, "source": {**source, "stopped_by": "x"}, "dev": {}}
    )
    assert run_dir.read_metrics(old_metrics) == (source, {"step": 5, "stopped_by": "x", "dev": {}})
    (tmp_path / "first").mkdir()
    first_metrics = kept("first/metrics.json", {"step": 5, "dev": {}})  # no source yet
    assert run_dir.read_metrics(first_metrics) == ({}, {"step": 5, "dev": {}})
    for name, content in (("cut.json", '{"depends_on": {'), ("list.json", "[1]")):
        (tmp_path / name).write_text(content)
        with pytest.raises(ValueError, match=rf"{name}: not a kept result"):
            stamp.read(str(tmp_path / name))
    with pytest.raises(ValueError, match=r"old\.json: not a kept result \(it has no depends_on"):
        stamp.read(kept("old.json", {"figures": {}}), greedy._legacy)
    with pytest.raises(ValueError, match=r"bad\.json: not a kept result \(its depends_on is not"):
        stamp.read(kept("bad.json", {"depends_on": [1]}))


def test_a_real_record_from_docs_records_reads_back_and_is_kept_byte_for_byte(tmp_path):
    """A copy of a record the lab's tables printed: the store reads it for the
    run it names, and keeping the same figures again writes the same bytes."""
    relative = os.path.join("algo", "algorithmic_parity_binary20", "ut_wavefront", "seed1.json")
    copy = tmp_path / "records" / relative
    copy.parent.mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "docs", "records", relative), copy)
    original = copy.read_bytes()
    kept, body = stamp.read(str(copy))
    run = tmp_path / "run"
    run.mkdir()
    (run / "experiment.json").write_text(json.dumps(kept["experiment"]))
    exp = Experiment.load(str(run))
    problem = kept["experiment"]["problem"]
    store = records.RunRecords(
        str(tmp_path / "records" / "algo"),
        data={problem: kept["data"]},
        train_steps=kept["train_steps"],
        train_minutes=kept["train_minutes"],
        greedy_examples=kept["greedy_examples"],
    )
    assert store.recall(problem, "ut_wavefront", exp, 1) == body
    assert store.recall(problem, "ut_wavefront", exp, 2) is None  # another seed's file
    store.keep(problem, "ut_wavefront", exp, 1, body["results"], {})
    assert copy.read_bytes() == original
    other = dataclasses.replace(store, data={problem: "other data"})
    assert other.recall(problem, "ut_wavefront", exp, 1) is None


def _checkpoint(directory, name: str, value: float) -> str:
    """A checkpoint at directory/name holding one variable of `value`."""
    variable = tf.Variable([value, 2.0])
    return tf.train.Checkpoint(v=variable).write(str(directory / name))


def _each_dependency(tmp_path, kind: str, make, base: dict, changes: dict) -> None:
    """A result of `kind` kept under make(**base) is reused for it; each change
    (label -> (the inputs it changes, the names that must differ)) has it made
    again, naming those; a change given as a context manager changes the world
    (data files rewritten) while make runs, and puts it back."""
    path = str(tmp_path / "kept" / f"{kind}.json")
    stamp.keep(path, make(**base), {"figure": 1.0})
    assert stamp.kept_body(path, make(**base)) == {"figure": 1.0}, kind
    for label, (change, names) in changes.items():
        if isinstance(change, _Rewritten):
            with change:
                wanted = make(**base)
        else:
            wanted = make(**{**base, **change})
        assert stamp.kept_body(path, wanted) is None, f"{kind}: {label}"
        assert stamp.differs(stamp.read(path)[0], wanted) == names, f"{kind}: {label}"
        assert stamp.kept_body(path, make(**base)) == {"figure": 1.0}, f"{kind}: {label} undone"


class _Rewritten:
    """A data file rewritten (another write time) while the result is asked for."""

    def __init__(self, shard: str):
        self.shard = shard

    def __enter__(self):
        self.kept = os.stat(self.shard).st_mtime_ns
        os.utime(self.shard, ns=(self.kept, self.kept + 10**9))
        return self

    def __exit__(self, *exc):
        os.utime(self.shard, ns=(self.kept, self.kept))


def test_every_kind_of_kept_result_is_made_again_when_any_dependency_changes(tmp_path):
    problem = problem_lib.get("test_identity_small")
    data = str(tmp_path / "data")
    problem.generate_data(data, seed=3)
    copied = str(tmp_path / "copied")
    shutil.copytree(data, copied)
    data_changes = {
        "data dir": ({"data_dir": copied}, ["data_dir"]),  # the same files elsewhere
        "data files": (_Rewritten(problem.data_files(data)[0]), ["data_stamp"]),
    }
    ckpt = _checkpoint(tmp_path / "a", "model.ckpt-5", 1.0)
    retrained = _checkpoint(tmp_path / "b", "model.ckpt-5", 1.5)  # the same name, other values
    later = _checkpoint(tmp_path / "a", "model.ckpt-6", 1.0)  # another name, the same values
    checkpoint_changes = {
        "retrained": ({"checkpoint": retrained}, ["checkpoint_fingerprint"]),
        "another checkpoint": ({"checkpoint": later}, ["checkpoint"]),
    }

    # A finished run's figures (metrics.json and metrics_best.json).
    _each_dependency(
        tmp_path,
        "metrics",
        lambda data_dir, seed, minutes, keep_best: run_dir.metrics_depend_on(
            problem, data_dir, seed, minutes, keep_best
        ),
        {"data_dir": data, "seed": 1, "minutes": 0.0, "keep_best": ""},
        {
            **data_changes,
            "seed": ({"seed": 2}, ["random_seed"]),
            "budget": ({"minutes": 5.0}, ["train_minutes"]),
            "best": ({"keep_best": "dev/loss"}, ["keep_best"]),
        },
    )

    # A decode's figures (greedy or a row's search, of a checkpoint or an average).
    _each_dependency(
        tmp_path,
        "greedy",
        lambda checkpoint, data_dir, examples, decode: greedy.depends_on(
            checkpoint, problem, data_dir, examples, decode
        ),
        {"checkpoint": ckpt, "data_dir": data, "examples": -1, "decode": greedy.GREEDY},
        {
            **checkpoint_changes,
            **data_changes,
            "examples": ({"examples": 10}, ["max_examples"]),
            "search": ({"decode": "beam_size=4"}, ["decode_hparams"]),
        },
    )

    # A parse's EVALB figures.
    _each_dependency(
        tmp_path,
        "evalb",
        lambda checkpoint, data_dir, split, beam: parsing_table.depends_on(
            checkpoint, problem, data_dir, split, decoder_lib.DecodeHParams(beam_size=beam)
        ),
        {"checkpoint": ckpt, "data_dir": data, "split": "dev", "beam": 1},
        {
            **checkpoint_changes,
            **data_changes,
            "split": ({"split": "test"}, ["split"]),
            "search": ({"beam": 4}, ["decode_hparams"]),
        },
    )

    # An average of checkpoints.
    _each_dependency(
        tmp_path,
        "average",
        averaging.depends_on,
        {"paths": [ckpt, later]},
        {
            "a source retrained": ({"paths": [retrained, later]}, ["sources"]),
            "other sources": ({"paths": [ckpt]}, ["sources"]),
        },
    )

    # A translation table's record and an algorithmic table's record.
    exp = Experiment.resolve("transformer", "translate_from_files", "transformer_tiny")
    other_exp = Experiment.resolve(
        "transformer", "translate_from_files", "transformer_tiny", "num_heads=2"
    )
    rows = translation.ROWS
    _each_dependency(
        tmp_path,
        "record",
        lambda exp, seed, row, split, data, steps, minutes: records.Records(
            "r", split, data, steps, minutes
        ).depends_on(row, exp, seed),
        {
            "exp": exp,
            "seed": 1,
            "row": rows["t3_base"],
            "split": "dev",
            "data": "f00d",
            "steps": 100,
            "minutes": 0.0,
        },
        {
            "experiment": ({"exp": other_exp}, ["experiment"]),
            "seed": ({"seed": 2}, ["seed"]),
            "decode": ({"row": rows["t3_greedy"]}, ["decode"]),
            "average": ({"row": rows["t3_average5"]}, ["average"]),
            "split": ({"split": "test"}, ["split"]),
            "data": ({"data": "beef"}, ["data"]),
            "steps": ({"steps": 200}, ["train_steps"]),
            "budget": ({"minutes": 5.0}, ["train_minutes"]),
        },
    )
    _each_dependency(
        tmp_path,
        "run_record",
        lambda exp, seed, data, steps, minutes, examples, keep_best: records.RunRecords(
            "r", {"p": data}, steps, minutes, examples, keep_best
        ).depends_on("p", exp, seed),
        {
            "exp": exp,
            "seed": 1,
            "data": "f00d",
            "steps": 100,
            "minutes": 0.0,
            "examples": -1,
            "keep_best": "",
        },
        {
            "experiment": ({"exp": other_exp}, ["experiment"]),
            "seed": ({"seed": 2}, ["seed"]),
            "data": ({"data": "beef"}, ["data"]),
            "steps": ({"steps": 200}, ["train_steps"]),
            "budget": ({"minutes": 5.0}, ["train_minutes"]),
            "greedy examples": ({"examples": 10}, ["greedy_examples"]),
            "best": ({"keep_best": "dev/loss"}, ["keep_best"]),
        },
    )

    # A CTranslate2 conversion (of the weights in memory).
    model = tiny_model()
    checkpoints.build_model(model)
    first = model.weights[0].numpy()

    def conversion(shift, positions):
        model.weights[0].assign(first + shift)
        return ctranslate2_engine.depends_on(
            model, decoder_lib.DecodeHParams(max_input_length=positions)
        )

    _each_dependency(
        tmp_path,
        "conversion",
        conversion,
        {"shift": 0.0, "positions": 16},
        {
            "weights": ({"shift": 1.0}, ["weights"]),
            "positions": ({"positions": 32}, ["output_positions"]),
        },
    )


def test_a_search_is_kept_in_one_resolved_form_and_a_records_old_text_form_still_reads(tmp_path):
    """What a decode depends on is the resolved settings: two spellings of one
    search are one; a translation record kept with the flag's text (the lab's
    docs/records) is read as its resolved form, and rewritten in it."""
    from t2t_lite.decoding import decoder as decoder_lib
    from t2t_lite.reproduction import translation

    def resolved(text):
        return stamp.decode(decoder_lib.decode_hparams(text))

    assert resolved("beam_size=4,alpha=0.6") == resolved("alpha=0.6,beam_size=4,batch_size=32")
    assert resolved("beam_size=4") != resolved("beam_size=4,alpha=0.7")
    relative = os.path.join("translate_gettext", "dev", "t3_base", "seed1.json")
    copy = tmp_path / "records" / relative
    copy.parent.mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "docs", "records", relative), copy)
    kept, body = stamp.read(str(copy))
    assert kept["decode"] == "beam_size=4,alpha=0.6"  # the old form
    run = tmp_path / "run"
    run.mkdir()
    (run / "experiment.json").write_text(json.dumps(kept["experiment"]))
    exp = Experiment.load(str(run))
    store = records.Records(
        str(tmp_path / "records" / "translate_gettext"),
        split="dev",
        data=kept["data"],
        train_steps=kept["train_steps"],
        train_minutes=kept["train_minutes"],
    )
    row = translation.ROWS["t3_base"]
    figures = store.recall("t3_base", row, exp, 1)
    assert figures is not None and figures.bleu == body["bleu"]
    store.keep("t3_base", row, exp, 1, figures)
    assert stamp.read(str(copy))[0]["decode"] == resolved(row.decode)
    assert store.recall("t3_base", row, exp, 1) == figures
    other = dataclasses.replace(row, decode="beam_size=4,alpha=0.7")
    assert store.recall("t3_base", other, exp, 1) is None
