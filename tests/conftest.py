"""Shared fixtures: quiet TensorFlow, small registered problems, helpers."""

import os
import subprocess
import sys

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


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COPY_HPARAMS = (
    "batch_size=256,max_length=16,hidden_size=32,filter_size=64,learning_rate_warmup_steps=100"
)


@pytest.fixture(scope="session")
def copy_run(tmp_path_factory):
    """A Transformer trained on test_identity_small to 1.0 dev sequence accuracy (~20 s).

    Checkpoints at steps 100, 200 and 300. Returns (data_dir, run_dir).
    """
    from t2t_lite import experiment
    from t2t_lite.training import trainer

    root = tmp_path_factory.mktemp("copy")
    exp = experiment.Experiment.resolve(
        "transformer", "test_identity_small", "transformer_algorithmic_tiny", COPY_HPARAMS
    )
    config = trainer.TrainConfig(train_steps=300, local_eval_frequency=100)
    results = trainer.train(exp, str(root / "data"), str(root / "run"), config)
    assert results["dev"]["sequence_accuracy"] == 1.0
    return str(root / "data"), str(root / "run")


def run_binary(name: str, *args: str) -> subprocess.CompletedProcess:
    """Runs bin/<name> in a fresh process that knows the tests' problems."""
    code = (
        f"import sys, runpy, conftest; sys.argv = [{name!r}] + sys.argv[1:]; "
        f"runpy.run_path({os.path.join(ROOT, 'bin', name)!r}, run_name='__main__')"
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join([ROOT, os.path.join(ROOT, "tests")])
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
