"""One random-free golden per model family: the model's logits (and ACT's
ponder times) equal an independent float64 numpy forward pass
(tests/numpy_reference.py) on deterministic weights."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf
from numpy_reference import set_deterministic_weights, transformer_logits, universal_logits

import t2t_lite.models  # noqa: F401 (registers the models and sets)
from t2t_lite import checkpoints, registry

VOCAB = 11
INPUTS = np.array([[3, 4, 5, 6, 1], [7, 2, 1, 0, 0]])  # [B=2, S=5], row 1 padded
TARGETS = np.array([[8, 9, 10, 1], [4, 1, 0, 0]])  # [B=2, T=4]


def build(hparams_set: str, **overrides):
    hp = dataclasses.replace(registry.HPARAMS.get(hparams_set)(), hidden_size=8, **overrides)
    model_name = "transformer" if hparams_set.startswith("transformer") else "universal_transformer"
    model = registry.MODELS.get(model_name)(hp, VOCAB)
    checkpoints.build_model(model)
    set_deterministic_weights(model)
    return model


@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_transformer_logits_equal_the_numpy_reference(norm_position):
    model = build("transformer_test", norm_position=norm_position, filter_size=12)
    logits = model({"inputs": tf.constant(INPUTS), "targets": tf.constant(TARGETS)}).numpy()
    for row in range(2):
        length = int((INPUTS[row] != 0).sum())
        target_length = int((TARGETS[row] != 0).sum())
        expected = transformer_logits(model, INPUTS[row, :length], TARGETS[row, :target_length])
        np.testing.assert_allclose(logits[row, :target_length], expected, atol=2e-4, rtol=1e-4)


@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_universal_transformer_logits_equal_the_numpy_reference(norm_position):
    model = build("universal_transformer_test", norm_position=norm_position, filter_size=12)
    logits = model({"inputs": tf.constant(INPUTS), "targets": tf.constant(TARGETS)}).numpy()
    for row in range(2):
        length = int((INPUTS[row] != 0).sum())
        target_length = int((TARGETS[row] != 0).sum())
        expected, _, _ = universal_logits(model, INPUTS[row, :length], TARGETS[row, :target_length])
        np.testing.assert_allclose(logits[row, :target_length], expected, atol=2e-4, rtol=1e-4)


def test_adaptive_universal_transformer_logits_and_ponder_times_equal_the_numpy_reference():
    model = build("adaptive_universal_transformer_test", filter_size=12, act_max_steps=4)
    features = {"inputs": tf.constant(INPUTS), "targets": tf.constant(TARGETS)}
    logits = model(features).numpy()
    _, _, encoder_stats = model.encode_with_stats(features["inputs"])
    encoded, bias = model.encode(features["inputs"])
    _, decoder_stats = model.decode_with_stats(features["targets"], encoded, bias)
    ponder = {"encoder": [], "decoder": []}
    for row in range(2):
        length = int((INPUTS[row] != 0).sum())
        target_length = int((TARGETS[row] != 0).sum())
        expected, encoder_ponder, decoder_ponder = universal_logits(
            model, INPUTS[row, :length], TARGETS[row, :target_length]
        )
        np.testing.assert_allclose(logits[row, :target_length], expected, atol=2e-4, rtol=1e-4)
        np.testing.assert_allclose(
            encoder_stats.ponder_time().numpy()[row, :length], encoder_ponder, atol=1e-5
        )
        np.testing.assert_allclose(
            decoder_stats.ponder_time().numpy()[row, :target_length], decoder_ponder, atol=1e-5
        )
        ponder["encoder"] += list(encoder_ponder)
        ponder["decoder"] += list(decoder_ponder)
    # The weights exercise both halting regimes: before act_max_steps (N + R < 4)
    # with varied remainders, and forced at it (N = 4).
    every = np.array(ponder["encoder"] + ponder["decoder"])
    assert (every < 4).any() and (every > 4).any() and len(set(np.round(every, 4))) > 4
