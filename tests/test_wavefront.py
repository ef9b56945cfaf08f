"""The wavefront one position at a time (layers/wavefront.py) against the stack's masked loop."""

import numpy as np
import pytest
import tensorflow as tf
from test_universal_transformer import ut_model

from t2t_lite.layers import wavefront

# Rows of 7, 3 and 5 real positions (EOS included), padded to 7.
SOURCE = tf.constant(
    [[3, 7, 8, 9, 4, 5, 1], [6, 4, 1, 0, 0, 0, 0], [9, 9, 3, 8, 1, 0, 0]], tf.int32
)
REAL = (SOURCE.numpy() != 0)[..., None]  # [B, S, 1]


def wavefront_model(**overrides):
    """The state table's wavefront at test size: n + 1 steps a position, each
    position running only its last, the input re-added, no step signal."""
    options = {
        "causal_encoder": True,
        "rec_steps_per_symbol": 1.0,
        "rec_steps_offset": 1,
        "rec_decoder_steps": 2,
        "num_rec_steps": 12,
        "rec_input_every_step": True,
        "rec_state_norm": True,
        "step_timing_signal_type": "none",
        "rec_steps_by_position": True,
        "rec_steps_window": 1,
        "layer_prepostprocess_dropout": 0.0,
        "attention_dropout": 0.0,
        "relu_dropout": 0.0,
    }
    return ut_model(**{**options, **overrides})


def assert_gradients_agree(fast, slow, err_msg=""):
    """Two float32 gradients of one loss agree to float32's accumulation error,
    which scales with the tensor's largest entry, not the entry compared: an
    entry of 2.4 in a gradient whose entries reach 1,400 is a difference of
    large cancelling sums, and another CPU's kernels order them otherwise
    (1.3e-6 of the largest entry seen). A wrong gradient is off by the order
    of the gradient itself."""
    scale = float(np.abs(slow).max())
    np.testing.assert_allclose(fast, slow, rtol=1e-4, atol=max(1e-4, 1e-5 * scale), err_msg=err_msg)


def masked_encode(model, monkeypatch, source=SOURCE):
    """The encoder through the stack's own loop: every position at every step."""
    with monkeypatch.context() as patch:
        patch.setattr(wavefront, "applies", lambda *args: False)
        return model.encode(source)[0]


@pytest.mark.parametrize(
    "overrides",
    [
        {"position_embedding": "none", "max_relative_position": 2},
        {"position_embedding": "none", "max_relative_position": 0},
        {"max_relative_position": 3},  # sinusoid positions, one per position
        {"rec_state_norm": False, "position_embedding": "none"},
    ],
)
def test_position_by_position_equals_the_masked_loop(overrides, monkeypatch):
    """Every real position's output agrees with the masked loop's, for rows of
    three lengths in one batch (12 steps, the longest row takes 8)."""
    model = wavefront_model(**overrides)
    assert wavefront.applies(model.encoder, True, 0)
    fast = model.encode(SOURCE)[0].numpy()
    slow = masked_encode(model, monkeypatch).numpy()
    assert np.abs(slow).max() > 0.1
    np.testing.assert_allclose(fast * REAL, slow * REAL, atol=2e-5)


def test_logits_are_unchanged(monkeypatch):
    """The whole model at evaluation: teacher-forced logits agree."""
    model = wavefront_model(position_embedding="none", max_relative_position=2)
    features = {"inputs": SOURCE, "targets": tf.constant([[5, 1], [7, 1], [4, 1]])}
    fast = model(features).numpy()
    with monkeypatch.context() as patch:
        patch.setattr(wavefront, "applies", lambda *args: False)
        slow = model(features).numpy()
    np.testing.assert_allclose(fast, slow, atol=1e-4)


@pytest.mark.parametrize("per_symbol", [1.0, 0.5])
def test_training_gradients_are_unchanged(per_symbol, monkeypatch):
    """Dropout 0: the gradients of a loss on the real positions agree with the
    masked loop's, for every weight of the encoder's block and norms, with
    training's moves of the steps (and, at half a step a symbol, shared steps)."""
    model = wavefront_model(
        position_embedding="none",
        max_relative_position=2,
        rec_steps_per_symbol=per_symbol,
        rec_steps_random=1,
    )
    jitter = tf.constant([1, -1, 0])

    def gradients():
        with tf.GradientTape() as tape:
            encoded = model.encode_with_stats(SOURCE, training=True, jitter=jitter)[0]
            loss = tf.reduce_sum(tf.sin(encoded) * REAL)
        found = tape.gradient(loss, model.trainable_variables)
        return [None if g is None else tf.convert_to_tensor(g).numpy() for g in found]

    fast = gradients()
    with monkeypatch.context() as patch:
        patch.setattr(wavefront, "applies", lambda *args: False)
        slow = gradients()
    variables = model.trainable_variables
    reached = [i for i, g in enumerate(slow) if g is not None and np.abs(g).max() > 0]
    # Every weight of the encoder stack has a gradient.
    assert {id(v) for v in model.encoder.trainable_variables} <= {id(variables[i]) for i in reached}
    for i in reached:
        assert_gradients_agree(fast[i], slow[i], err_msg=variables[i].path)


@pytest.mark.slow  # XLA compiles for minutes' worth of the fast tier's budget
@pytest.mark.parametrize("loop", ["wavefront", "masked"])
def test_the_loop_compiles_with_xla_and_its_gradients_agree(loop, monkeypatch):
    """t2t-train --xla_compile: the loop's gradient compiles (its bound is the
    source's length) and agrees with the uncompiled one, traced as the trainer
    traces its step, for rows and a length not known until the batch comes
    (the projections inside the loop then must not carry a transpose
    permutation as a loop value, which XLA refuses)."""
    model = wavefront_model(position_embedding="none", max_relative_position=2)
    if loop == "masked":
        monkeypatch.setattr(wavefront, "applies", lambda *args: False)

    def gradients(source):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.sin(model.encode_with_stats(source, training=True)[0]))
        return tape.gradient(loss, model.encoder.trainable_variables)

    any_shape = [tf.TensorSpec([None, None], tf.int32)]
    compiled = tf.function(gradients, jit_compile=True, input_signature=any_shape)(SOURCE)
    for fast, slow in zip(compiled, gradients(SOURCE), strict=True):
        assert_gradients_agree(fast.numpy(), slow.numpy())


@pytest.mark.parametrize(
    "overrides",
    [
        {"rec_steps_per_symbol": 0.5},  # two positions a step: 2, 2, 3, 3, ...
        {"num_rec_steps": 5},  # the cap: positions 3-6 of the 7-position row share step 5
        {"rec_steps_per_symbol": 0.25, "rec_steps_random": 1},  # four a step, moved in training
    ],
)
def test_positions_that_share_a_step_read_each_others_inputs(overrides, monkeypatch):
    """Where neighbours share a step each reads the other's input state, as in
    the masked loop (where they update together): still the same outputs."""
    model = wavefront_model(position_embedding="none", max_relative_position=2, **overrides)
    steps = model.encoder.row_steps(tf.constant([7, 3, 5]), None, tf.constant(7)).numpy()
    assert (steps[:, 1:] == steps[:, :-1]).any()
    fast = model.encode(SOURCE)[0].numpy()
    slow = masked_encode(model, monkeypatch).numpy()
    np.testing.assert_allclose(fast * REAL, slow * REAL, atol=2e-5)


@pytest.mark.parametrize(
    "overrides",
    [
        {"step_timing_signal_type": "sinusoid"},  # every finished key changes each step
        {"rec_steps_window": 0},  # a position runs all its steps
        {"transformer_ffn_type": "sepconv"},  # a transition that reads its neighbours
    ],
)
def test_it_applies_only_where_the_block_input_is_fixed(overrides):
    model = wavefront_model(**overrides)
    assert not wavefront.applies(model.encoder, True, 0)
    assert not wavefront.applies(wavefront_model().encoder, False, 0)  # not causal
