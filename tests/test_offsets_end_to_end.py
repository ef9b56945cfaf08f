"""Slow: the UT with random position offsets generalizes copy to longer sequences;
a Transformer trained the same number of steps, without offsets, does not.

Copy over 10 symbols, trained on lengths 1..8 and tested on lengths 1..32:
positions 9..32 are never seen by the Transformer, while the UT's offsets
(shared by encoder and decoder, below 64) put every test position among
trained ones. Teacher-forced test character accuracy decides.
"""

import pytest

from t2t_lite import experiment
from t2t_lite.data import problem
from t2t_lite.problems import algorithmic
from t2t_lite.training import trainer

STEPS = 600


@problem.register("test_identity_longer_test")
class IdentityLongerTest(algorithmic.AlgorithmicProblem):
    base = 10
    train_length = 8
    test_length = 32
    splits = {"train": (20_000, 2), "dev": (200, 1), "test": (200, 1)}


def train_and_evaluate(tmp_path, seed, model, hparams_set, hparams):
    exp = experiment.Experiment.resolve(model, "test_identity_longer_test", hparams_set, hparams)
    config = trainer.TrainConfig(
        train_steps=STEPS, local_eval_frequency=STEPS, eval_steps=-1, random_seed=seed
    )
    results = trainer.train(exp, str(tmp_path / "data"), str(tmp_path / model), config)
    return results["dev"]["sequence_accuracy"], results["test"]["accuracy"]


@pytest.mark.slow
def test_ut_with_offsets_beats_the_transformer_on_longer_copies(tmp_path, train_seed):
    ut_dev, ut_test = train_and_evaluate(
        tmp_path,
        train_seed,
        "universal_transformer",
        "universal_transformer_algorithmic_tiny",
        "position_start_index=random,position_start_max=64",
    )
    transformer_dev, transformer_test = train_and_evaluate(
        tmp_path, train_seed, "transformer", "transformer_algorithmic_tiny", ""
    )
    # Both learn the training lengths; only the UT carries copy past them.
    assert ut_dev >= 0.9 and transformer_dev >= 0.9, (ut_dev, transformer_dev)
    assert ut_test >= transformer_test + 0.2, (ut_test, transformer_test)
