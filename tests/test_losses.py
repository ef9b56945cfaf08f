import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.training import losses, schedules


def test_cross_entropy_without_smoothing_by_hand():
    logits = tf.constant([[[0.0, math.log(3.0), 0.0], [5.0, 5.0, 5.0]]])  # probs 1/5, 3/5, 1/5
    targets = tf.constant([[1, 0]])  # second position is PAD
    loss_sum, weight = losses.smoothed_cross_entropy(logits, targets, 0.0)
    assert float(weight) == 1.0
    np.testing.assert_allclose(float(loss_sum), -math.log(3 / 5), rtol=1e-6)


def test_smoothed_cross_entropy_by_hand():
    # V=3, smoothing 0.2: target id 2 gets 0.8, the others 0.1 each. Logits
    # [0, ln 3, 0]: probabilities 1/5, 3/5, 1/5, so the label's position and the
    # spread both matter (uniform logits would hide a wrong label index).
    logits = tf.constant([[[0.0, math.log(3.0), 0.0]]])
    loss_sum, weight = losses.smoothed_cross_entropy(logits, tf.constant([[2]]), 0.2)
    xent = -(0.1 * math.log(1 / 5) + 0.1 * math.log(3 / 5) + 0.8 * math.log(1 / 5))
    entropy = -(0.8 * math.log(0.8) + 2 * 0.1 * math.log(0.1))
    assert float(weight) == 1.0
    np.testing.assert_allclose(float(loss_sum), xent - entropy, rtol=1e-6)  # 0.4484...
    on_label, _ = losses.smoothed_cross_entropy(logits, tf.constant([[1]]), 0.2)
    xent = -(0.1 * math.log(1 / 5) + 0.8 * math.log(3 / 5) + 0.1 * math.log(1 / 5))
    np.testing.assert_allclose(float(on_label), xent - entropy, rtol=1e-6)


def test_perfectly_smoothed_prediction_scores_zero():
    probs = np.array([0.1, 0.8, 0.1], dtype=np.float32)
    logits = tf.constant(np.log(probs)[None, None])
    loss_sum, _ = losses.smoothed_cross_entropy(logits, tf.constant([[1]]), 0.2)
    assert abs(float(loss_sum)) < 1e-6


def test_accuracy_counts_by_hand():
    # Argmax predictions: row 0 -> [2, 3], row 1 -> [2, 2], row 2 all PAD.
    logits = tf.one_hot([[2, 3], [2, 2], [0, 0]], 4)
    targets = tf.constant([[2, 3], [2, 3], [0, 0]])
    counts = {k: float(v) for k, v in losses.accuracy_counts(logits, targets).items()}
    assert counts == {"correct_tokens": 3, "tokens": 4, "correct_sequences": 1, "sequences": 2}


def test_learning_rate_schedule_by_hand():
    schedule = schedules.RsqrtWarmup(constant=2.0, warmup_steps=100, hidden_size=16)
    # iterations i is step i+1: warmup ramps linearly, then rsqrt decay.
    np.testing.assert_allclose(float(schedule(0)), 2.0 * (1 / 100) * 0.1 * 0.25, rtol=1e-6)
    np.testing.assert_allclose(float(schedule(99)), 2.0 * 0.1 * 0.25, rtol=1e-6)
    np.testing.assert_allclose(float(schedule(399)), 2.0 * 0.05 * 0.25, rtol=1e-6)


def test_linear_decay_by_hand():
    # tensor2tensor's linear_decay: the last decay_steps of a 500-step budget.
    schedule = schedules.RsqrtWarmup(2.0, 100, 16, decay_steps=200, train_steps=500)
    rsqrt = 2.0 * 0.25
    np.testing.assert_allclose(float(schedule(299)), rsqrt / 300**0.5, rtol=1e-6)  # not yet
    np.testing.assert_allclose(float(schedule(300)), rsqrt / 301**0.5, rtol=1e-6)  # factor 1
    np.testing.assert_allclose(float(schedule(400)), rsqrt / 401**0.5 * 0.5, rtol=1e-6)
    np.testing.assert_allclose(float(schedule(499)), rsqrt / 500**0.5 / 200, rtol=1e-6)
    assert float(schedule(500)) == 0.0 and float(schedule(900)) == 0.0
    with pytest.raises(ValueError, match="train_steps"):
        schedules.RsqrtWarmup(2.0, 100, 16, decay_steps=200)
