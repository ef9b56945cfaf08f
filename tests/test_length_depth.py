"""Depth that grows with the input, input re-added at every step, no position signal."""

import dataclasses

import keras
import numpy as np
import numpy_reference
import pytest
import tensorflow as tf
from test_transformer import tiny_model
from test_universal_transformer import ut_model

from t2t_lite import checkpoints, registry
from t2t_lite.layers import embedding, universal
from t2t_lite.models import universal_transformer

# Two sources of 4 and 2 real positions (EOS included), one of 6.
INPUTS = tf.constant([[3, 4, 5, 1, 0, 0], [6, 1, 0, 0, 0, 0], [3, 7, 8, 9, 4, 1]])
TARGETS = tf.constant([[7, 8, 1], [9, 1, 0], [5, 5, 1]])


def test_steps_by_hand():
    depth = universal.LengthDepth(per_symbol=0.25, offset=1, random=0, cap=12)
    lengths = tf.constant([1, 4, 5, 41, 100])
    # ceil(0.25) + 1, ceil(1) + 1, ceil(1.25) + 1, ceil(10.25) + 1, ceil(25) + 1 capped
    assert depth.steps(lengths).numpy().tolist() == [2, 2, 3, 12, 12]
    # 0.1 * 30 is 3.0000000000000004 in binary: still 3 steps, not 4.
    tenth = universal.LengthDepth(per_symbol=0.1, offset=0, random=0, cap=99)
    assert tenth.steps(tf.constant([30, 31, 1])).numpy().tolist() == [3, 4, 1]
    # Moves never leave [1, cap].
    moved = depth.steps(tf.constant([1, 41]), tf.constant([-5, 5])).numpy().tolist()
    assert moved == [1, 12]


def test_training_moves_cover_the_range_and_no_more():
    depth = universal.LengthDepth(per_symbol=1.0, offset=0, random=2, cap=50)
    seed = keras.random.SeedGenerator(3)
    draws = np.concatenate([depth.jitter(tf.constant(64), seed).numpy() for _ in range(8)])
    assert set(draws.tolist()) == {-2, -1, 0, 1, 2}
    assert universal.LengthDepth(1.0, 0, 0, 50).jitter(tf.constant(4), seed) is None


def identity_stack(**options):
    """A post-norm stack (no final norm) whose block the tests pass as identity."""
    return universal.UniversalStack(
        keras.layers.Identity(),
        num_steps=options.pop("num_steps", 5),
        step_signal=universal.StepSignal(options.pop("step_signal", "sinusoid"), 5, 8),
        norm_position="post",
        **options,
    )


@pytest.mark.parametrize("step_signal", ["sinusoid", "none"])
@pytest.mark.parametrize("input_every_step", [False, True])
def test_an_identity_block_sums_each_rows_own_signals(input_every_step, step_signal):
    """With block(h) = h, H_k = x_0 + sum_{t<=k} (S_t [+ x_0]) where k is the
    row's step count: positions off, step signals S_t (none: S_t = 0), the
    input re-added."""
    depth = universal.LengthDepth(per_symbol=1.0, offset=0, random=0, cap=5)
    stack = identity_stack(
        depth=depth,
        use_positions=False,
        input_every_step=input_every_step,
        step_signal=step_signal,
    )
    x = tf.random.stateless_normal([2, 3, 8], seed=[1, 2])
    steps = tf.constant([2, 4])
    out, _ = stack.apply(x, lambda h: h, 0, tf.ones([2, 3]), row_steps=steps)
    for row, k in enumerate([2, 4]):
        signals = sum(embedding.timing_signal(1, 8, start=t)[0, 0].numpy() for t in range(1, k + 1))
        signals = signals if step_signal == "sinusoid" else 0.0
        expected = x[row].numpy() * (1 + k * input_every_step) + signals
        np.testing.assert_allclose(out[row].numpy(), expected, atol=1e-5)


def test_a_normalized_state_keeps_its_scale_at_every_step():
    """With block(h) = h, positions and step signals off, the input re-added and
    the state normalized: H_t = LN(H_(t-1)) + LN(x_0), by hand, for each row's
    own steps; and the norm of H_t stays within 2 sqrt(C) at any depth, where
    without the norms it grows by |x_0| a step."""

    depth = universal.LengthDepth(per_symbol=1.0, offset=0, random=0, cap=40)
    options = {
        "depth": depth,
        "use_positions": False,
        "input_every_step": True,
        "step_signal": "none",
    }
    x = tf.random.stateless_normal([2, 3, 8], seed=[4, 5])
    steps = tf.constant([2, 40])
    normalized = identity_stack(num_steps=40, state_norm=True, **options)
    out, _ = normalized.apply(x, lambda h: h, 0, tf.ones([2, 3]), row_steps=steps)
    x0 = x.numpy()
    for row, k in enumerate([2, 40]):
        h, injected = x0[row], numpy_reference.layer_norm(normalized.input_norm, x0[row])
        for _ in range(k):
            h = numpy_reference.layer_norm(normalized.state_norm, h) + injected
        np.testing.assert_allclose(out[row].numpy(), h, atol=1e-4)
    assert (np.linalg.norm(out.numpy(), axis=-1) <= 2 * np.sqrt(8) + 1e-4).all()
    plain = identity_stack(num_steps=40, **options)
    grown, _ = plain.apply(x, lambda h: h, 0, tf.ones([2, 3]), row_steps=steps)
    np.testing.assert_allclose(grown[1].numpy(), 41 * x0[1], rtol=1e-5)


def test_each_row_equals_a_fixed_depth_run_of_its_own_steps():
    """Row b of a length-scaled UT (ceil(n) - 1 steps: 3, 1, 5) gives the logits
    of the same weights run with num_rec_steps = its steps, alone."""
    scaled = ut_model(rec_steps_per_symbol=1.0, rec_steps_offset=-1, num_rec_steps=6)
    logits = scaled({"inputs": INPUTS, "targets": TARGETS}).numpy()
    for row, steps in enumerate([3, 1, 5]):
        fixed = ut_model(num_rec_steps=steps)
        fixed.set_weights(scaled.get_weights())
        alone = fixed({"inputs": INPUTS[row : row + 1], "targets": TARGETS[row : row + 1]})
        np.testing.assert_allclose(logits[row], alone.numpy()[0], atol=1e-5)


def test_act_budget_scales_with_the_source():
    """A halting unit that never fires on its own (p = sigmoid(-20)) runs each
    row to its budget ceil(n / 2) (2, 1, 3), capped at act_max_steps = 4."""
    model = ut_model(
        adaptive=True,
        rec_steps_per_symbol=0.5,
        act_max_steps=4,
        act_halting_bias_init=-20.0,
        act_halting_kernel_init="zeros",
    )
    _, _, stats = model.encode_with_stats(INPUTS)
    real = INPUTS.numpy() > 0
    updates = stats.n_updates.numpy()
    for row, budget in enumerate([2, 1, 3]):
        assert set(updates[row][real[row]].tolist()) == {budget}
    assert int(stats.steps) == 3


def test_training_draws_one_move_per_row_for_both_stacks():
    model = ut_model(rec_steps_per_symbol=1.0, num_rec_steps=8, rec_steps_random=2)
    features = {"inputs": INPUTS, "targets": TARGETS}
    logits, _ = model.logits_and_aux(features, training=True)
    assert np.isfinite(logits.numpy()).all()
    # Evaluation draws nothing: two passes agree.
    np.testing.assert_array_equal(model(features).numpy(), model(features).numpy())


@pytest.mark.parametrize("family", ["transformer", "universal_transformer"])
def test_without_positions_the_encoder_ignores_order(family):
    """position_embedding=none: permuting the source permutes the encoder's output."""
    model = (
        tiny_model(position_embedding="none")
        if family == "transformer"
        else ut_model(position_embedding="none", rec_input_every_step=True)
    )
    checkpoints.build_model(model)
    source = tf.constant([[3, 4, 5, 6, 1]])
    order = [2, 0, 3, 1, 4]
    encoded, _ = model.encode(source)
    permuted, _ = model.encode(tf.gather(source, order, axis=1))
    np.testing.assert_allclose(
        tf.gather(encoded, order, axis=1).numpy(), permuted.numpy(), atol=1e-5
    )


@pytest.mark.parametrize("family", ["transformer", "universal_transformer"])
def test_a_causal_encoder_reads_no_later_source_position(family):
    """causal_encoder: changing source position 3 leaves positions 0..2 of the
    encoder's output as they were, and changes position 3."""
    options = {"causal_encoder": True, "position_embedding": "none"}
    model = tiny_model(**options) if family == "transformer" else ut_model(**options)
    checkpoints.build_model(model)
    first, _ = model.encode(tf.constant([[3, 4, 5, 6, 7, 1]]))
    second, _ = model.encode(tf.constant([[3, 4, 5, 9, 7, 1]]))
    np.testing.assert_allclose(first[:, :3].numpy(), second[:, :3].numpy(), atol=1e-6)
    assert np.abs(first[:, 3] - second[:, 3]).max() > 1e-3


def test_options_are_refused_where_they_mean_nothing():
    base = registry.HPARAMS.get("universal_transformer_test")()
    with pytest.raises(ValueError, match=r"\(rec_steps_offset, rec_steps_random\)"):
        dataclasses.replace(base, rec_steps_offset=2)
    with pytest.raises(ValueError, match=r"\(rec_steps_per_symbol\)"):
        dataclasses.replace(base, rec_steps_per_symbol=-1.0)
    with pytest.raises(ValueError, match=r"\(position_embedding\)"):
        dataclasses.replace(base, position_embedding="learned")
    with pytest.raises(ValueError, match=r"\(rec_state_norm\)"):
        dataclasses.replace(base, norm_position="post", rec_state_norm=True)
    scaled = dataclasses.replace(base, rec_steps_per_symbol=0.5)
    with pytest.raises(ValueError, match="decoder-only problem"):
        universal_transformer.UniversalTransformer(scaled, 11, input_encoding="none")


def test_position_steps_by_hand():
    """Position i takes the steps of a source of i + 1 positions, at most its
    row's: a = 0.5, b = 1 gives ceil((i + 1) / 2) + 1 = 2, 2, 3, 3, 4."""
    depth = universal.LengthDepth(per_symbol=0.5, offset=1, random=1, cap=12)
    lengths = tf.constant([3, 5])  # rows' steps 3 and 4
    steps = depth.position_steps(lengths, tf.constant(5)).numpy().tolist()
    assert steps == [[2, 2, 3, 3, 3], [2, 2, 3, 3, 4]]
    moved = depth.position_steps(lengths, tf.constant(5), tf.constant([1, -1])).numpy().tolist()
    assert moved == [[3, 3, 4, 4, 4], [1, 1, 2, 2, 3]]


def test_by_position_a_causal_encoders_prefix_reads_as_the_prefix_alone():
    """rec_steps_by_position with a causal encoder: the first 3 positions of a
    6-position source encode as the 3-position source alone does (the same
    keys, and the same steps: 2, 3, 4); with one count per row (7 steps for
    all) the longer source's extra steps change them."""
    options = {
        "causal_encoder": True,
        "rec_steps_per_symbol": 1.0,
        "rec_steps_offset": 1,
        "rec_decoder_steps": 2,
        "num_rec_steps": 8,
        "rec_input_every_step": True,
    }
    by_position = ut_model(rec_steps_by_position=True, **options)
    per_row = ut_model(**options)
    per_row.set_weights(by_position.get_weights())
    source = tf.constant([[3, 7, 8, 9, 4, 1]])
    for model, same in ((by_position, True), (per_row, False)):
        full, _ = model.encode(source)
        prefix, _ = model.encode(source[:, :3])
        close = np.allclose(full[:, :3].numpy(), prefix.numpy(), atol=1e-5)
        assert close == same


def test_by_position_needs_scaled_fixed_steps_and_a_fixed_decoder():
    base = registry.HPARAMS.get("universal_transformer_test")()
    scaled = dataclasses.replace(base, rec_steps_per_symbol=1.0, num_rec_steps=8)
    # No length-scaled depth; a decoder that grows too.
    for refused in (base, scaled):
        with pytest.raises(ValueError, match=r"\(rec_steps_by_position\)"):
            dataclasses.replace(refused, rec_steps_by_position=True)
    fixed = dataclasses.replace(scaled, rec_decoder_steps=2, rec_steps_by_position=True)
    assert fixed.rec_steps_by_position


@pytest.mark.parametrize("window", [0, 2])
def test_each_position_takes_its_own_steps_or_their_last_window(window):
    """With block(h) = h and the input re-added, H = (1 + k) x_0 at a position
    that ran k steps: its own count under per-position steps [B, S], at most
    the window's (and the later ones: a window holds the input before it)."""
    depth = universal.LengthDepth(
        per_symbol=1.0, offset=0, random=0, cap=5, by_position=True, window=window
    )
    stack = identity_stack(depth=depth, use_positions=False, input_every_step=True)
    stack.step_signal = universal.StepSignal("none", 5, 8)
    x = tf.random.stateless_normal([2, 3, 8], seed=[6, 7])
    steps = tf.constant([[1, 2, 3], [3, 4, 5]])
    out, _ = stack.apply(x, lambda h: h, 0, tf.ones([2, 3]), row_steps=steps)
    ran = np.minimum(steps.numpy(), window) if window else steps.numpy()  # [B, S]
    np.testing.assert_allclose(out.numpy(), x.numpy() * (1 + ran[..., None]), atol=1e-5)


def test_a_window_makes_a_causal_encoder_a_wavefront():
    """rec_steps_window=1 with per-position steps: each position runs once, at
    its own last step (here step i + 2), one step after its left neighbour,
    and a prefix still encodes as the prefix alone."""
    model = ut_model(
        causal_encoder=True,
        rec_steps_per_symbol=1.0,
        rec_steps_offset=1,
        rec_decoder_steps=2,
        num_rec_steps=8,
        rec_input_every_step=True,
        rec_steps_by_position=True,
        rec_steps_window=1,
    )
    source = tf.constant([[3, 7, 8, 9, 4, 1]])
    full, _ = model.encode(source)
    prefix, _ = model.encode(source[:, :3])
    np.testing.assert_allclose(full[:, :3].numpy(), prefix.numpy(), atol=1e-5)
    with pytest.raises(ValueError, match=r"\(rec_steps_window\)"):
        dataclasses.replace(model.hparams, rec_steps_by_position=False)
