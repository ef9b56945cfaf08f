import pytest
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.data import batching, problem


@pytest.mark.parametrize(
    "max_length, expected",
    [(41, [8, 16, 32, 48]), (401, [8, 16, 32, 64, 128, 256, 408]), (8, [8]), (5, [8])],
)
def test_bucket_lengths_by_hand(max_length, expected):
    assert sequences.bucket_lengths(max_length) == expected


def test_batch_sizes_by_hand():
    assert batching.batch_sizes([8, 16, 48], 100) == [12, 6, 2]
    assert batching.batch_sizes([8], 4) == [1]


def test_train_batches_respect_token_budget_and_buckets(small_data):
    prob = problem.get("test_identity_small")
    budget = 64
    lengths = sequences.bucket_lengths(7)
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
