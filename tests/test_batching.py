import pytest
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.data import batching, problem, tfrecord


@pytest.mark.parametrize(
    "max_length, expected",
    [(41, [8, 16, 32, 48]), (401, [8, 16, 32, 64, 128, 256, 408]), (8, [8]), (5, [8])],
)
def test_doubling_bucket_lengths_by_hand(max_length, expected):
    assert sequences.bucket_lengths(max_length, 2.0) == expected


def test_fine_bucket_lengths_by_hand():
    # From 8, one more each until 8 * 1.1 adds more than one (int(20 * 1.1) = 22),
    # then int(x * 1.1): 22, 24, 26, 28, 30, 33, 36, 39; 42 would pass 41, so the
    # last is 41 rounded up to a multiple of 8.
    assert sequences.bucket_lengths(41, 1.1) == list(range(8, 21)) + [
        22, 24, 26, 28, 30, 33, 36, 39, 48,
    ]  # fmt: skip
    assert len(sequences.bucket_lengths(256, sequences.LENGTH_BUCKET_STEP)) == 42
    # Step 1: a bucket for every length below the last.
    assert sequences.bucket_lengths(12, 1.0) == [8, 9, 10, 11, 16]


@pytest.mark.parametrize("step", [1.1, 2.0])
def test_each_batch_is_padded_to_the_smallest_bucket_holding_its_longest(small_data, step):
    """Test examples are 2..13 long (EOS included): a batch's length is the
    first bucket at or above its longest row, so finer buckets pad less."""
    prob = problem.get("test_identity_small")
    lengths = sequences.bucket_lengths(prob.max_length("test"), step)
    seen = set()
    for batch in prob.dataset(small_data, "test", 64, length_bucket_step=step):
        width = batch["targets"].shape[1]
        longest = int((batch["targets"].numpy() != 0).sum(axis=1).max())
        assert width == min(n for n in lengths if n >= longest)
        seen.add(width)
    assert len(seen) > 1


def test_batch_sizes_by_hand():
    assert batching.batch_sizes([8, 16, 48], 100) == [12, 6, 2]
    assert batching.batch_sizes([8], 4) == [1]


def test_train_batches_respect_token_budget_and_buckets(small_data):
    prob = problem.get("test_identity_small")
    budget = 64
    lengths = sequences.bucket_lengths(7, sequences.LENGTH_BUCKET_STEP)
    for batch in prob.dataset(small_data, "train", budget, max_length=7, seed=1).take(30):
        b, s = batch["inputs"].shape
        assert batch["targets"].shape == (b, s)
        assert s in lengths
        assert b * s <= budget
        assert b == budget // s  # training fills every batch


def test_train_drops_long_examples_and_eval_keeps_all(small_data):
    prob = problem.get("test_identity_small")
    for batch in prob.dataset(small_data, "train", 64, max_length=4, seed=1).take(20):
        lengths = (batch["targets"].numpy() != 0).sum(axis=1)
        assert lengths.max() <= 4
    count = sum(b["inputs"].shape[0] for b in prob.dataset(small_data, "test", 64))
    assert count == prob.splits["test"][0]


def test_curriculum_length_by_hand():
    assert batching.curriculum_length(3, 100, 0) == 3
    assert batching.curriculum_length(3, 100, 99) == 3
    assert batching.curriculum_length(3, 100, 100) == 4
    assert batching.curriculum_length(2, 1, 5) == 7


def test_a_length_limit_variable_filters_training_examples_as_it_moves(small_data):
    """Examples are 2..7 long (1..6 symbols and EOS). At limit 3 no batch holds
    a longer one; once the variable is raised to 5, longer ones arrive (after
    what was prefetched) and none past 5."""
    prob = problem.get("test_identity_small")
    limit = tf.Variable(3, dtype=tf.int32)
    batches = iter(prob.dataset(small_data, "train", 64, seed=1, length_limit=limit))

    def longest():
        return int((next(batches)["targets"].numpy() != 0).sum(axis=1).max())

    assert max(longest() for _ in range(20)) <= 3
    limit.assign(5)
    later = [longest() for _ in range(60)]
    assert max(later) == 5


@pytest.mark.parametrize("parse_batch", [3, problem.PARSE_BATCH])
def test_every_record_arrives_once_whatever_the_parse_batch(small_data, monkeypatch, parse_batch):
    """Records are parsed PARSE_BATCH at a time and handed on one by one: the
    eval split's batches, padding stripped, hold exactly the records' examples
    (3 a parse leaves a last, partial parse batch)."""
    monkeypatch.setattr(problem, "PARSE_BATCH", parse_batch)
    prob = problem.get("test_identity_small")
    expected = sorted(
        (tuple(ex["inputs"]), tuple(ex["targets"]))
        for path in prob.split_files(small_data, "test")
        for ex in tfrecord.read_records(path)
    )
    got = []
    for batch in prob.dataset(small_data, "test", 64):
        for inputs, targets in zip(batch["inputs"].numpy(), batch["targets"].numpy(), strict=True):
            got.append((tuple(int(i) for i in inputs if i), tuple(int(t) for t in targets if t)))
    assert sorted(got) == expected
    assert len(expected) == prob.splits["test"][0]
