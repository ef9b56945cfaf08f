"""A tiny Universal Transformer reading facts solves generated bAbI task 1."""

import pytest

from t2t_lite import experiment
from t2t_lite.data import problem
from t2t_lite.training import trainer

STEPS = 1000


@pytest.mark.slow
def test_tiny_universal_transformer_solves_generated_task_1(tmp_path, train_seed):
    data_dir = str(tmp_path / "data")
    problem.get("babi_qa_generated_task1").generate_data(data_dir)
    exp = experiment.Experiment.resolve(
        "universal_transformer", "babi_qa_generated_task1", "universal_transformer_babi_tiny"
    )
    config = trainer.TrainConfig(
        train_steps=STEPS, local_eval_frequency=STEPS, random_seed=train_seed
    )
    results = trainer.train(exp, data_dir, str(tmp_path / "run"), config)
    test = results["test_qa1"]
    assert test["examples"] == 1000
    error = 100.0 * (1.0 - test["sequence_accuracy"])
    assert error < 5.0, f"task 1 error {error:.1f}% (dev {results['dev']})"
