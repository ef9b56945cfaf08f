import pytest

from t2t_lite import experiment
from t2t_lite.training import trainer


@pytest.mark.slow
def test_tiny_transformer_learns_copy(tmp_path):
    exp = experiment.Experiment.resolve(
        "transformer", "algorithmic_identity_decimal40", "transformer_algorithmic_tiny"
    )
    config = trainer.TrainConfig(
        train_steps=700, local_eval_frequency=700, log_step_count_steps=100, random_seed=1
    )
    results = trainer.train(exp, str(tmp_path / "data"), str(tmp_path / "run"), config)
    assert results["dev"]["examples"] == 1000
    assert results["dev"]["sequence_accuracy"] >= 0.99
