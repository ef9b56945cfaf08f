"""Streaming text datagen: the vocabulary sample, batched encoding, shards, TFDS."""

import pytest
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.data import problem, tfrecord

LINES = 600


def corpus(tmp_path, lines: int = LINES) -> list[str]:
    """Aligned files whose line i holds the word w<i> (plus shared words)."""
    sources = [f"w{i} ist hier" for i in range(lines)]
    targets = [f"w{i} is here" for i in range(lines)]
    (tmp_path / "train.de").write_text("\n".join(sources) + "\n", encoding="utf-8")
    (tmp_path / "train.en").write_text("\n".join(targets) + "\n", encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("w1 ist hier\tw1 is here\n", encoding="utf-8")
    return sources


def configured(tmp_path, name="translate_from_files", sample_lines: int = 100):
    prob = problem.get(name)
    prob.vocab_sample_lines = sample_lines
    data_dir = str(tmp_path / "data")
    prob.configure(
        data_dir,
        [str(tmp_path / "train.de"), str(tmp_path / "train.en")],
        [str(tmp_path / "dev.tsv")],
        300,
    )
    return prob, data_dir


def test_the_vocabulary_sample_is_bounded_seeded_and_spread_over_the_corpus(tmp_path):
    corpus(tmp_path)
    prob, data_dir = configured(tmp_path, sample_lines=100)
    lines, total = prob.vocabulary_sample(data_dir, seed=1)
    assert total == LINES
    assert len(lines) == 100  # 50 pairs: source and target lines
    pair_index = sorted(int(line.split()[0][1:]) for line in lines[::2])
    # Uniform over the corpus, not its first lines: both halves are drawn.
    assert pair_index[0] < LINES // 2 < pair_index[-1]
    assert prob.vocabulary_sample(data_dir, seed=1)[0] == lines
    assert prob.vocabulary_sample(data_dir, seed=2)[0] != lines
    small, _ = configured(tmp_path, sample_lines=10 * LINES)[0].vocabulary_sample(data_dir, 1)
    assert len(small) == 2 * LINES  # a budget above the corpus takes all of it


@pytest.mark.slow  # for the fast tier's time (docs/testing.md)
def test_batched_encoding_writes_what_line_at_a_time_encoding_gives(tmp_path, monkeypatch):
    lines = 200  # three batches of 64 and a partial one
    sources = corpus(tmp_path, lines)
    from t2t_lite.data import text_problem

    monkeypatch.setattr(text_problem, "ENCODE_BATCH", 64)
    prob, data_dir = configured(tmp_path, sample_lines=lines)
    assert prob.generate_data(data_dir, seed=3) == {"train": lines, "dev": 1}
    written = tfrecord.read_examples(prob.filepaths(data_dir, "train"))
    expected = {
        tuple(sequences.with_eos(prob.encode_text(s))): tuple(
            sequences.with_eos(prob.encode_text(s.replace("ist hier", "is here")))
        )
        for s in sources
    }
    got = {tuple(e["inputs"]): tuple(e["targets"]) for e in written}
    assert got == expected  # every pair once, encoded as one line at a time would
    # Shards are shuffled: a shard is not in corpus order, and the seed fixes the bytes.
    first = [prob.decode_text(e["inputs"]) for e in tfrecord.read_examples(
        prob.filepaths(data_dir, "train")[:1])]  # fmt: skip
    assert first != sorted(first, key=lambda line: int(line.split()[0][1:]))
    again_dir = str(tmp_path / "again")
    prob.configure(again_dir, *prob._config(data_dir).values())
    prob.generate_data(again_dir, seed=3)
    for a, b in zip(
        prob.filepaths(data_dir, "train"), prob.filepaths(again_dir, "train"), strict=True
    ):
        assert tf.io.gfile.GFile(a, "rb").read() == tf.io.gfile.GFile(b, "rb").read()


def test_an_interrupted_datagen_leaves_no_shard_under_a_final_name(tmp_path, monkeypatch):
    corpus(tmp_path)
    prob, data_dir = configured(tmp_path)
    real = prob.text_pairs

    def failing(data_dir, split):
        for number, pair in enumerate(real(data_dir, split)):
            if split == "train" and number == LINES - 5:
                raise RuntimeError("killed")  # midway through the encoding pass
            yield pair

    calls = {"n": 0}

    def second_pass_fails(data_dir, split):
        calls["n"] += split == "train"
        return failing(data_dir, split) if calls["n"] > 1 else real(data_dir, split)

    monkeypatch.setattr(prob, "text_pairs", second_pass_fails)
    with pytest.raises(RuntimeError, match="killed"):
        prob.generate_data(data_dir)
    assert not any(tf.io.gfile.exists(p) for p in prob.filepaths(data_dir, "train"))
    assert not prob.has_data(data_dir)  # a trainer would regenerate, not read it


def test_tfds_problems_stream_with_a_split_larger_than_the_sample(tmp_path, caplog):
    tfds = pytest.importorskip("tensorflow_datasets")
    prob = problem.get("translate_ende_wmt32k")
    prob.vocab_sample_lines = 40  # 20 pairs of 60
    prob.vocab_target_size = 300
    prob.splits = {"train": (0, 3), "dev": (0, 1)}
    with caplog.at_level("INFO"), tfds.testing.mock_data(num_examples=60):
        counts = prob.generate_data(str(tmp_path / "data"))
    assert counts == {"train": 60, "dev": 60}
    assert "from 20 of 60 training pairs" in caplog.text
    assert len(tfrecord.read_examples(prob.filepaths(str(tmp_path / "data"), "train"))) == 60


def test_a_bad_line_met_while_encoding_is_one_clear_error(tmp_path):
    corpus(tmp_path)
    (tmp_path / "dev.tsv").write_bytes(b"w1 ist hier\tw1 is here\n\xff\xfe\tx\n")
    prob, data_dir = configured(tmp_path)
    # dev is read only in the encoding pass, inside the tf.data pipeline.
    with pytest.raises(ValueError, match=r"dev.tsv:2: not valid UTF-8"):
        prob.generate_data(data_dir)
    assert not any(tf.io.gfile.exists(p) for p in prob.filepaths(data_dir, "dev"))
