"""Shared fixtures: quiet TensorFlow, small registered problems, helpers."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

from problems import algorithmic
from t2t_lite.data import problem


@problem.register("test_identity_small")
class IdentitySmall(algorithmic.AlgorithmicProblem):
    """Copy with lengths 1..6 (test: 1..12) and small splits, for fast tests."""

    base = 4
    train_length = 6
    test_length = 12
    splits = {"train": (400, 2), "dev": (40, 1), "test": (20, 1)}


@problem.register("test_reverse_short")
class ReverseShort(algorithmic.ReverseProblem):
    """Reverse with lengths 1..8, for end-to-end learning tests."""

    base = 10
    train_length = 8
    test_length = 16
    splits = {"train": (20_000, 2), "dev": (200, 1), "test": (100, 1)}


@problem.register("test_addition_small")
class AdditionSmall(algorithmic.AdditionProblem):
    base = 10
    train_length = 8
    test_length = 16
    splits = {"train": (200, 2), "dev": (20, 1), "test": (20, 1)}


@pytest.fixture
def small_data(tmp_path):
    """A data dir holding test_identity_small's files."""
    data_dir = str(tmp_path / "data")
    problem.get("test_identity_small").generate_data(data_dir, seed=3)
    return data_dir
