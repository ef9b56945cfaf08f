"""ACT invariants (DESIGN.md section 10 item 3), each its own test."""

import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import act

C = 6
NONPADDING = tf.constant([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], tf.float32)  # [B=2, L=5]


def varied_steps(state, step):
    """A position-wise step whose last channel is always 1, so that channel of
    the accumulated output is the sum of the position's step weights."""
    t = tf.cast(step, tf.float32)
    varied = tf.sin(state[..., :-1] * (1.0 + t)) * 3.0
    return tf.concat([varied, tf.ones_like(state[..., :1])], axis=-1)


def run(max_steps=6, bias=0.0, act_type="accumulated", step_fn=varied_steps, seed=0):
    layer = act.AdaptiveComputationTime(max_steps, 0.01, act_type, halting_bias_init=bias)
    state = tf.random.stateless_normal([2, 5, C], seed=[seed, 1])
    layer.build(state.shape)
    # A halting kernel of fixed values (the initialiser draws unseeded: with some
    # draws every position halted at the same step), on the scale Glorot gives.
    kernel = tf.random.stateless_normal([C, 1], seed=[seed, 2], stddev=0.5)
    layer.halting.weights[0].assign(kernel)
    output, stats = layer.apply(state, step_fn, NONPADDING)
    return layer, state, output, stats


def constant_halting(layer, p):
    """Zero kernel and bias logit(p): every position halts with probability p per step."""
    kernel, _ = layer.halting.weights
    kernel.assign(tf.zeros_like(kernel))
    layer.halting.weights[1].assign([math.log(p / (1.0 - p))])


def test_step_weights_of_every_non_pad_position_sum_to_one():
    _, _, output, stats = run()
    n = stats.n_updates.numpy()
    assert len(set(n[NONPADDING.numpy() > 0])) > 1, "want positions halting at different steps"
    weight_sums = output[..., -1].numpy()
    np.testing.assert_allclose(weight_sums[NONPADDING.numpy() > 0], 1.0, atol=1e-6)


def test_a_crafted_halting_sequence_gives_each_position_its_exact_n_and_r():
    """Position i halts with probability p_i at every step (the state is its
    logit and never changes). Threshold 0.99, at most 5 steps, by hand:
    p = 0.3: 0.3, 0.6, 0.9, then 1.2 > 0.99: N = 4, R = 1 - 0.9 = 0.1;
    p = 0.5: 0.5, then 1.0 > 0.99: N = 2, R = 0.5;
    p = 0.995 passes at once: N = 1, R = 1;
    p = 0.15: 0.15 .. 0.6 after 4 steps, 0.75 at step 5 passes nothing but is
    the last: forced, N = 5, R = 1 - 0.6 = 0.4; padding: N = R = 0."""
    probabilities = [0.3, 0.5, 0.995, 0.15, 0.5]
    logits = [math.log(p / (1 - p)) for p in probabilities]
    state = tf.constant([[[x, 0.0] for x in logits]])  # [B=1, L=5, C=2]
    layer = act.AdaptiveComputationTime(5, 0.01)
    layer.build(state.shape)
    layer.halting.weights[0].assign([[1.0], [0.0]])  # p = sigmoid(channel 0)
    layer.halting.weights[1].assign([0.0])
    _, stats = layer.apply(state, lambda s, step: s, tf.constant([[1.0, 1, 1, 1, 0]]))
    np.testing.assert_array_equal(stats.n_updates.numpy(), [[4, 2, 1, 5, 0]])
    np.testing.assert_allclose(stats.remainders.numpy(), [[0.1, 0.5, 1.0, 0.4, 0.0]], atol=1e-6)
    assert int(stats.steps) == 5


def test_large_positive_bias_takes_one_step_equal_to_one_block_application():
    for act_type in act.ACT_TYPES:
        _, state, output, stats = run(bias=30.0, act_type=act_type)
        assert int(stats.steps) == 1
        mask = NONPADDING.numpy() > 0
        np.testing.assert_array_equal(stats.n_updates.numpy()[mask], 1.0)
        expected = varied_steps(state, 1) * NONPADDING[..., tf.newaxis]
        np.testing.assert_allclose(output.numpy(), expected.numpy(), atol=1e-6)


def test_large_negative_bias_runs_to_max_steps_and_forces_halting():
    _, state, output, stats = run(max_steps=4, bias=-30.0)
    mask = NONPADDING.numpy() > 0
    assert int(stats.steps) == 4
    np.testing.assert_array_equal(stats.n_updates.numpy()[mask], 4.0)
    # p is ~0, so the forced halt at step 4 hands that step the whole weight.
    np.testing.assert_allclose(stats.remainders.numpy()[mask], 1.0, atol=1e-6)
    for step in range(1, 5):
        state = varied_steps(state, step)
    last = state * NONPADDING[..., tf.newaxis]
    np.testing.assert_allclose(output.numpy(), last.numpy(), atol=1e-5)


def step_value(state, step):
    """Step t's state is t everywhere: outputs are hand-computable."""
    return tf.ones_like(state) * tf.cast(step, state.dtype)


@pytest.mark.parametrize(
    ("act_type", "expected"),
    # p = 0.6: step 1 weight 0.6 (0.6 < 0.99), step 2 would pass 0.99 so it
    # halts with remainder 0.4. accumulated: 0.6*1 + 0.4*2 = 1.4;
    # basic: o1 = 0.6*1 = 0.6, o2 = 0.4*2 + 0.6*0.6 = 1.16.
    [("accumulated", 1.4), ("basic", 1.16)],
)
def test_hand_derived_outputs_of_both_act_types(act_type, expected):
    layer = act.AdaptiveComputationTime(10, 0.01, act_type)
    state = tf.zeros([1, 3, 2])
    layer.build(state.shape)
    constant_halting(layer, 0.6)
    output, stats = layer.apply(state, step_value, tf.ones([1, 3]))
    np.testing.assert_allclose(output.numpy(), expected, atol=1e-6)
    np.testing.assert_allclose(stats.n_updates.numpy(), 2.0)
    np.testing.assert_allclose(stats.remainders.numpy(), 0.4, atol=1e-6)
    np.testing.assert_allclose(stats.ponder_time().numpy(), 2.4, atol=1e-6)
    assert int(stats.steps) == 2


def test_forced_halt_at_max_steps_gets_the_remainder():
    # p = 0.3, max 2: weights 0.3 then the forced remainder 0.7 (sum 1);
    # accumulated output 0.3*1 + 0.7*2 = 1.7.
    layer = act.AdaptiveComputationTime(2, 0.01, "accumulated")
    state = tf.zeros([1, 2, 2])
    layer.build(state.shape)
    constant_halting(layer, 0.3)
    output, stats = layer.apply(state, step_value, tf.ones([1, 2]))
    np.testing.assert_allclose(output.numpy(), 1.7, atol=1e-6)
    np.testing.assert_allclose(stats.remainders.numpy(), 0.7, atol=1e-6)


def test_padding_is_halted_from_the_start_and_excluded_from_ponder_time():
    _, _, output, stats = run()
    pad = NONPADDING.numpy() == 0
    assert (stats.n_updates.numpy()[pad] == 0).all()
    assert (stats.remainders.numpy()[pad] == 0).all()
    assert (output.numpy()[pad] == 0).all()
    mask = NONPADDING.numpy() > 0
    expected = stats.ponder_time().numpy()[mask].mean()
    np.testing.assert_allclose(float(stats.mean_ponder_time(NONPADDING)), expected, rtol=1e-6)


def test_loop_stops_when_every_position_has_halted():
    layer = act.AdaptiveComputationTime(10, 0.01)
    state = tf.zeros([1, 2, 2])
    layer.build(state.shape)
    constant_halting(layer, 0.45)  # 0.45, 0.9, then 1.35 > 0.99: halts at step 3
    _, stats = layer.apply(state, step_value, tf.ones([1, 2]))
    assert int(stats.steps) == 3
    # An all-padding batch runs one trip (the loop checks after a step).
    _, stats = layer.apply(state, step_value, tf.zeros([1, 2]))
    assert int(stats.steps) <= 1


def test_halting_unit_gets_gradients_from_the_ponder_cost():
    layer = act.AdaptiveComputationTime(6, 0.01)
    state = tf.random.stateless_normal([2, 5, C], seed=[3, 4])
    with tf.GradientTape() as tape:
        output, stats = layer.apply(state, varied_steps, NONPADDING)
        loss = stats.mean_ponder_time(NONPADDING) + tf.reduce_sum(output)
    grads = tape.gradient(loss, layer.halting.trainable_weights)
    assert all(g is not None and float(tf.reduce_max(tf.abs(g))) > 0 for g in grads)


def test_zero_halting_kernel_starts_every_position_at_the_same_ponder_time():
    # p = sigmoid(1) = 0.731 at every step, whatever the state's scale: step 1
    # accumulates 0.731 < 0.99, step 2 would pass it, so N = 2 and
    # R = 1 - 0.731: ponder time 2 + 1 - sigmoid(1) = 2.269 on every position.
    layer = act.AdaptiveComputationTime(6, 0.01, halting_bias_init=1.0, halting_kernel_init="zeros")
    state = 50.0 * tf.random.stateless_normal([2, 5, C], seed=[7, 8])  # large, like fact sums
    _, stats = layer.apply(state, varied_steps, NONPADDING)
    mask = NONPADDING.numpy() > 0
    expected = 3.0 - 1.0 / (1.0 + math.exp(-1.0))
    np.testing.assert_allclose(stats.ponder_time().numpy()[mask], expected, atol=1e-6)
    # The default kernel reads the state: at this scale some positions saturate.
    glorot = act.AdaptiveComputationTime(6, 0.01, halting_bias_init=1.0)
    _, stats = glorot.apply(state, varied_steps, NONPADDING)
    assert len(set(np.round(stats.ponder_time().numpy()[mask], 4))) > 1


def test_compiled_loop_matches_eager():
    layer, state, eager_output, eager_stats = run(seed=5)
    compiled = tf.function(lambda s: layer.apply(s, varied_steps, NONPADDING))
    output, stats = compiled(state)
    np.testing.assert_allclose(output.numpy(), eager_output.numpy(), atol=1e-6)
    np.testing.assert_array_equal(stats.n_updates.numpy(), eager_stats.n_updates.numpy())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_steps": 0, "epsilon": 0.01}, "act_max_steps"),
        ({"max_steps": 3, "epsilon": 0.01, "act_type": "graves"}, "act_type"),
        ({"max_steps": 3, "epsilon": 1.5}, "act_epsilon"),
        ({"max_steps": 3, "epsilon": 0.01, "halting_kernel_init": "ones"}, "halting_kernel"),
    ],
)
def test_bad_arguments_name_the_hparam(kwargs, message):
    with pytest.raises(ValueError, match=message):
        act.AdaptiveComputationTime(**kwargs)
