import os

import pytest
import tensorflow as tf

from t2t_lite.data import problem, tfrecord
from t2t_lite.decoding import runner


def test_round_trip(tmp_path):
    examples = [
        {"inputs": [2, 3, 1], "targets": [4, 1]},
        {"inputs": [5, 1], "targets": [6, 7, 8, 1]},
    ]
    paths = tfrecord.shard_paths(str(tmp_path / "x"), 2)
    assert tfrecord.write_shards(iter(examples), paths) == 2
    read = [ex for path in paths for ex in tfrecord.read_records(path)]
    assert read == examples
    assert sorted(os.listdir(tmp_path)) == ["x-00000-of-00002", "x-00001-of-00002", "x.stats.json"]
    # The counts the start-up summary shows, by hand: 2 examples, 3 + 2 and 2 + 4 ids.
    assert tfrecord.read_stats(paths) == {"examples": 2, "inputs_tokens": 5, "targets_tokens": 6}


def test_a_spread_sample_takes_every_nth_example_across_the_shards(tmp_path):
    examples = [{"inputs": [i + 2, 1], "targets": [1]} for i in range(10)]
    paths = tfrecord.shard_paths(str(tmp_path / "x"), 3)
    tfrecord.write_shards(iter(examples), paths)
    order = [ex["inputs"][0] - 2 for path in paths for ex in tfrecord.read_records(path)]

    def spread(count):  # positions in the split's file order
        return [order.index(ex["inputs"][0] - 2) for ex in tfrecord.spread_examples(paths, count)]

    # Of 10: floor(i * 10 / 4) = 0, 2, 5, 7 and floor(i * 10 / 3) = 0, 3, 6.
    assert spread(4) == [0, 2, 5, 7]
    assert spread(3) == [0, 3, 6]
    assert spread(10) == spread(25) == list(range(10))  # all, once, where there are no more
    assert spread(1) == [0]


def _damage(path, how):
    with open(path, "rb") as f:
        data = f.read()
    if how == "truncate":
        data = data[: len(data) - 7]
    else:  # flip a byte inside the first record's payload
        data = data[:20] + bytes([data[20] ^ 0xFF]) + data[21:]
    with open(path, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("how", ["truncate", "corrupt"])
def test_damaged_file_is_named(how, small_data):
    prob = problem.get("test_identity_small")
    bad = prob.filepaths(small_data, "train")[1]
    _damage(bad, how)
    with pytest.raises(tfrecord.CorruptRecordError, match=os.path.basename(bad)):
        tfrecord.check_file(bad)
    iterator = iter(prob.dataset(small_data, "train", 64, max_length=8, seed=1))
    with pytest.raises(tfrecord.CorruptRecordError, match=os.path.basename(bad)):
        for _ in range(100):
            tfrecord.next_element(iterator, prob.filepaths(small_data, "train"))


def test_records_without_the_features_or_of_another_dtype_are_named(tmp_path):
    """Shards of another tool's Examples would otherwise parse as empty and train on nothing."""
    path = str(tmp_path / "other")
    with tf.io.TFRecordWriter(path) as writer:
        feature = {"text": tf.train.Feature(int64_list=tf.train.Int64List(value=[3, 4]))}
        writer.write(
            tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
        )
    with pytest.raises(
        ValueError, match=r"other: record 1 has no 'inputs' feature \(its features: text\)"
    ):
        tfrecord.check_features(path)
    floats = str(tmp_path / "floats")
    with tf.io.TFRecordWriter(floats) as writer:
        feature = {
            "inputs": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0])),
            "targets": tf.train.Feature(int64_list=tf.train.Int64List(value=[3, 1])),
        }
        writer.write(
            tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
        )
    with pytest.raises(ValueError, match="floats: record 1's 'inputs' feature is a float_list"):
        tfrecord.check_features(floats)
    good = str(tmp_path / "good")
    tfrecord.write_shards([{"inputs": [3, 1], "targets": [4, 1]}], [good])
    assert tfrecord.check_features(good)
    empty = str(tmp_path / "empty")
    tfrecord.write_shards([], [empty])
    assert not tfrecord.check_features(empty)


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_an_id_outside_the_vocabulary_is_named_with_its_file_and_record(small_data):
    """Data made with another vocabulary used to stop training with an embedding
    lookup traceback; the pipeline now checks every id, train and eval alike."""
    prob = problem.get("test_identity_small")
    paths = prob.filepaths(small_data, "train")
    examples = list(tfrecord.read_records(paths[1]))
    examples[2]["targets"] = [3, prob.vocab_size + 5, 1]
    tfrecord.write_shards(examples, [paths[1]])
    iterator = iter(prob.dataset(small_data, "train", 64, max_length=8, seed=1))
    with pytest.raises(
        ValueError,
        match=rf"{os.path.basename(paths[1])}: record 3's 'targets' holds token id "
        rf"{prob.vocab_size + 5}, outside the vocabulary \[0, {prob.vocab_size}\)",
    ):
        for _ in range(200):
            tfrecord.next_element(iterator, paths)
    # A negative id in an evaluation split.
    dev = prob.filepaths(small_data, "dev")
    examples = list(tfrecord.read_records(dev[0]))
    examples[0]["inputs"] = [-1, 1]
    tfrecord.write_shards(examples, dev)
    iterator = iter(prob.dataset(small_data, "dev", 64))
    with pytest.raises(ValueError, match=r"record 1's 'inputs' holds token id -1"):
        for _ in range(200):
            tfrecord.next_element(iterator, dev)
    # t2t-decode --eval_split=dev checks before decoding (no model needed to see it).
    with pytest.raises(ValueError, match=r"record 1's 'inputs' holds token id -1"):
        runner.decode_split(None, prob, small_data, "dev")


@pytest.mark.slow  # for the fast tier's time (docs/testing.md)
def test_a_shard_whose_later_records_lack_the_features_fails_training_naming_the_record(
    small_data, tmp_path
):
    """The first record is good (the start-up check passes); records 3.. were
    written by another tool with other feature names: the first batch that
    reads one stops the run with one line naming the file and record."""
    from t2t_lite import experiment
    from t2t_lite.data import problem as problem_lib
    from t2t_lite.training import trainer

    prob = problem_lib.get("test_identity_small")
    shard = prob.filepaths(small_data, "train")[0]
    good = list(tfrecord.read_records(shard))[:2]
    with tf.io.TFRecordWriter(shard) as writer:
        for example in good:
            writer.write(tfrecord.serialize(example))
        for _ in range(300):
            ids = tf.train.Feature(int64_list=tf.train.Int64List(value=[3, 1]))
            other = tf.train.Example(features=tf.train.Features(feature={"source": ids}))
            writer.write(other.SerializeToString())
    exp = experiment.Experiment.resolve(
        "transformer", "test_identity_small", "transformer_test", "batch_size=64,max_length=8"
    )
    config = trainer.TrainConfig(train_steps=20, local_eval_frequency=20)
    with pytest.raises(ValueError, match=r"-train-00000-of-00002: record \d+ has no 'inputs' "):
        trainer.train(exp, small_data, str(tmp_path / "run"), config)


def test_an_emptied_shard_is_refused_when_datagen_counted_examples_for_it(small_data, tmp_path):
    from t2t_lite import experiment
    from t2t_lite.training import trainer

    shard = problem.get("test_identity_small").filepaths(small_data, "train")[1]
    open(shard, "wb").close()  # zero bytes where datagen wrote 200 examples
    exp = experiment.Experiment.resolve(
        "transformer", "test_identity_small", "transformer_test", "batch_size=64,max_length=8"
    )
    with pytest.raises(ValueError, match=r"train-00001-of-00002 is empty \(0 bytes\), but t2t-d"):
        trainer.train(exp, small_data, str(tmp_path / "run"), trainer.TrainConfig(train_steps=1))


def test_split_counts_sit_beside_the_shards_whatever_their_names(tmp_path):
    """A split's counts go beside its shards: <problem>-<split>.stats.json for
    datagen's names, <first shard>.stats.json for others (never up into the
    directories, whose names may hold dashes too)."""
    parent = tmp_path / "a-b-c-d"
    parent.mkdir()
    standard = tfrecord.shard_paths(str(parent / "p-train"), 2)
    assert tfrecord.stats_path(standard) == str(parent / "p-train.stats.json")
    assert tfrecord.stats_path([str(parent / "x")]) == str(parent / "x.stats.json")
    tfrecord.write_shards([{"inputs": [3, 1], "targets": [4, 1]}], [str(parent / "x")])
    assert sorted(os.listdir(parent)) == ["x", "x.stats.json"]
    assert sorted(os.listdir(tmp_path)) == ["a-b-c-d"]
