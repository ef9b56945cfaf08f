"""Problems on the user's parallel files: vocabulary, records, bad input."""

import pytest

from t2t_lite.data import problem, subword, tfrecord

GERMAN = ["ein Hund", "zwei Hunde", "eine Katze", "zwei Katzen", "der Fuchs 🦊 läuft"]
ENGLISH = ["a dog", "two dogs", "a cat", "two cats", "the fox 🦊 runs"]


def write_corpus(tmp_path, lines: int = 50):
    """A 50-line parallel corpus as two aligned files and as a TSV."""
    sources = [f"{GERMAN[i % 5]} {i}" for i in range(lines)]
    targets = [f"{ENGLISH[i % 5]} {i}" for i in range(lines)]
    (tmp_path / "train.de").write_text("\n".join(sources) + "\n", encoding="utf-8")
    (tmp_path / "train.en").write_text("\n".join(targets) + "\n", encoding="utf-8")
    tsv = "".join(f"{s}\t{t}\n" for s, t in zip(sources[:10], targets[:10], strict=True))
    (tmp_path / "dev.tsv").write_text(tsv + "\n", encoding="utf-8")  # one empty line
    return sources, targets


def generate(tmp_path, name="translate_from_files", vocab_size=200):
    prob = problem.get(name)
    data_dir = str(tmp_path / "data")
    prob.configure(
        data_dir,
        [str(tmp_path / "train.de"), str(tmp_path / "train.en")],
        [str(tmp_path / "dev.tsv")],
        vocab_size,
    )
    return prob, data_dir, prob.generate_data(data_dir)


def test_a_50_line_corpus_becomes_a_vocabulary_and_records(tmp_path, caplog):
    sources, targets = write_corpus(tmp_path)
    with caplog.at_level("INFO"):
        prob, data_dir, counts = generate(tmp_path)
    assert counts == {"train": 50, "dev": 10}
    assert "dev: skipped 1 pair(s) with an empty side" in caplog.text
    assert prob.vocab_size == len(subword.load(f"{data_dir}/translate_from_files.vocab")) <= 200
    records = [r for path in prob.filepaths(data_dir, "train") for r in tfrecord.read_records(path)]
    decoded = {(prob.decode_text(r["inputs"]), prob.decode_text(r["targets"])) for r in records}
    assert decoded == set(zip(sources, targets, strict=True))
    assert all(r["inputs"][-1] == problem.EOS_ID for r in records)

    fresh = problem.get("translate_from_files")  # another process: reads the saved vocabulary
    fresh.bind(data_dir)
    assert fresh.encode_text("zwei Hunde 🦊") == prob.encode_text("zwei Hunde 🦊")
    assert fresh.has_data(data_dir)


def test_the_character_variant_has_one_token_per_character(tmp_path):
    write_corpus(tmp_path)
    prob, _, _ = generate(tmp_path, "translate_from_files_characters")
    ids = prob.encode_text("zwei Hunde")
    assert len(ids) == len("zwei Hunde")
    assert prob.decode_text(ids) == "zwei Hunde"


def test_bad_files_are_named(tmp_path):
    write_corpus(tmp_path)
    (tmp_path / "train.en").write_text("only\ntwo\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"train.de has 50 lines but .*train.en has 2"):
        generate(tmp_path)

    write_corpus(tmp_path)
    (tmp_path / "train.de").write_bytes(b"gut\nbad \xff byte\n" + b"x\n" * 48)
    with pytest.raises(ValueError, match=r"train.de:2: not valid UTF-8"):
        generate(tmp_path)

    write_corpus(tmp_path)
    (tmp_path / "dev.tsv").write_text("no tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"dev.tsv:1: expected source<TAB>target"):
        generate(tmp_path)

    unconfigured = problem.get("translate_from_files")
    with pytest.raises(ValueError, match="run t2t-datagen --problem=translate_from_files"):
        unconfigured.generate_data(str(tmp_path / "elsewhere"))
    with pytest.raises(ValueError, match="no vocabulary loaded"):
        unconfigured.vocab_size  # noqa: B018


def test_a_run_keeps_its_vocabulary_and_exports_text_in_text_out(tmp_path):
    from t2t_lite import experiment
    from t2t_lite.decoding import runner
    from t2t_lite.export import exporter
    from t2t_lite.training import trainer

    write_corpus(tmp_path)
    _, data_dir, _ = generate(tmp_path)
    exp = experiment.Experiment.resolve(
        "transformer", "translate_from_files", "transformer_test", "batch_size=128"
    )
    run = str(tmp_path / "run")
    trainer.train(exp, data_dir, run, trainer.TrainConfig(train_steps=4, local_eval_frequency=4))
    assert (tmp_path / "run" / "translate_from_files.vocab").exists()

    prob, model, _ = runner.load(run)  # no data dir: the run's copy of the vocabulary
    decoder = runner.make_decoder(model, "extra_length=5")
    (hypotheses,) = decoder.decode_ids([prob.encode_text("zwei Hunde")])
    assert isinstance(prob.decode_text(hypotheses[0][0]), str)

    path = exporter.export(run, str(tmp_path / "export"), overrides="beam_size=2,extra_length=5")
    import tensorflow as tf

    served = tf.saved_model.load(path).signatures["serving_default"]
    out = served(inputs=tf.constant(["zwei Hunde 🦊", b"\xff", ""]))
    assert [s.decode() for s in out["status"].numpy()] == ["ok", "invalid_utf8", "empty"]
