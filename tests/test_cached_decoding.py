"""Cached one-position decoding equals the teacher-forced pass, for every family."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from test_transformer import tiny_model
from test_universal_transformer import ut_model

from t2t_lite import checkpoints

INPUTS = tf.constant([[3, 4, 5, 1, 0], [6, 1, 0, 0, 0]])
TARGETS = tf.constant([[7, 8, 9, 10, 1], [9, 1, 0, 0, 0]])
REAL = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], bool)  # positions up to EOS


def transformer_model(**overrides):
    model = tiny_model(**overrides)
    checkpoints.build_model(model)
    return model


SPREAD = {
    "position_start_index": "randomized",
    "position_start_max": 400,
    "position_eval": "spread",
}
MODELS = {
    "transformer_pre": lambda: transformer_model(),
    "transformer_post": lambda: transformer_model(norm_position="post"),
    "ut": lambda: ut_model(),
    "ut_post_learned_step": lambda: ut_model(
        norm_position="post", step_timing_signal_type="learned"
    ),
    "ut_sepconv": lambda: ut_model(transformer_ffn_type="sepconv"),
    "adaptive_ut": lambda: ut_model(adaptive=True),
    "adaptive_ut_sepconv": lambda: ut_model(adaptive=True, transformer_ffn_type="sepconv"),
    "transformer_coupled": lambda: transformer_model(position_coupling="reverse"),
    "transformer_every_layer": lambda: transformer_model(position_every_layer=True),
    "transformer_key_channels": lambda: transformer_model(attention_key_channels=8),
    "transformer_learned_positions": lambda: transformer_model(position_embedding="learned"),
    "transformer_separate_embeddings": lambda: transformer_model(
        shared_embedding_and_softmax_weights=False
    ),
    "ut_separate_embeddings": lambda: ut_model(shared_embedding_and_softmax_weights=False),
    "ut_key_channels": lambda: ut_model(attention_key_channels=8),
    "transformer_coupled_every_layer": lambda: transformer_model(
        position_coupling="reverse", position_every_layer=True
    ),
    "ut_coupled": lambda: ut_model(position_coupling="reverse"),
    "adaptive_ut_coupled": lambda: ut_model(adaptive=True, position_coupling="reverse"),
    "ut_addition_coupled": lambda: ut_model(  # 4 separates "3" from "5"
        position_coupling="addition", position_separator_id=4
    ),
    # Steps that grow with the source: ceil(n) - 1 for n = 4 and 2 real positions
    # (3 and 1 steps); ACT with budgets ceil(n / 2) (2 and 1), bias low so the
    # budget is what halts most positions.
    "ut_length_depth": lambda: ut_model(
        rec_steps_per_symbol=1.0, rec_steps_offset=-1, num_rec_steps=5
    ),
    "ut_length_depth_input_every_step_no_positions": lambda: ut_model(
        rec_steps_per_symbol=1.0,
        num_rec_steps=6,
        rec_input_every_step=True,
        position_embedding="none",
    ),
    "ut_length_depth_fixed_decoder": lambda: ut_model(
        rec_steps_per_symbol=1.0, num_rec_steps=6, rec_decoder_steps=2
    ),
    "ut_length_depth_no_step_signal": lambda: ut_model(
        rec_steps_per_symbol=1.0,
        num_rec_steps=6,
        rec_input_every_step=True,
        step_timing_signal_type="none",
    ),
    "ut_length_depth_state_norm": lambda: ut_model(
        rec_steps_per_symbol=1.0, num_rec_steps=6, rec_input_every_step=True, rec_state_norm=True
    ),
    "ut_steps_by_position": lambda: ut_model(
        rec_steps_per_symbol=1.0,
        num_rec_steps=6,
        rec_decoder_steps=2,
        rec_steps_by_position=True,
        causal_encoder=True,
    ),
    "ut_length_depth_causal_encoder": lambda: ut_model(
        rec_steps_per_symbol=1.0, num_rec_steps=6, causal_encoder=True, position_embedding="none"
    ),
    "transformer_causal_encoder": lambda: transformer_model(causal_encoder=True),
    "adaptive_ut_length_depth": lambda: ut_model(
        adaptive=True, rec_steps_per_symbol=0.5, act_max_steps=4, act_halting_bias_init=-2.0
    ),
    "adaptive_ut_state_norm": lambda: ut_model(
        adaptive=True, act_halting_bias_init=-2.0, rec_state_norm=True
    ),
    "transformer_no_positions": lambda: transformer_model(position_embedding="none"),
    # Relative positions: a decoding step's query sits at its index among the keys.
    "transformer_relative": lambda: transformer_model(max_relative_position=2),
    "ut_relative_no_positions": lambda: ut_model(
        max_relative_position=2, position_embedding="none"
    ),
    "adaptive_ut_relative": lambda: ut_model(
        adaptive=True, act_halting_bias_init=-2.0, max_relative_position=2
    ),
    # Scalable softmax: each query's scale counts the keys it sees, cached or not.
    "transformer_length_scale": lambda: transformer_model(attention_length_scale=3),
    "ut_length_scale": lambda: ut_model(attention_length_scale=3),
    "ut_log_length_scale": lambda: ut_model(
        attention_length_scale=2, attention_length_scale_learned=False
    ),
    # Evaluation's positions spread like randomized training's (range 400 over
    # each row's source length), plain and coupled.
    "transformer_spread": lambda: transformer_model(**SPREAD),
    "transformer_spread_reverse": lambda: transformer_model(**SPREAD, position_coupling="reverse"),
    "ut_spread_addition": lambda: ut_model(
        **SPREAD, position_coupling="addition", position_separator_id=4
    ),
    "adaptive_ut_spread": lambda: ut_model(adaptive=True, **SPREAD),
    "adaptive_ut_basic_long": lambda: ut_model(
        adaptive=True, act_type="basic", act_halting_bias_init=-1.0, act_max_steps=6
    ),
}


def cached_logits(model, max_length=7, decode_step=None):
    """Feeds the shifted targets one position at a time -> [B, T, V].

    decode_step: the model's by default; a tf.function of it runs each step
    as a graph (what the search's compiled loop runs).
    """
    decode_step = decode_step or model.decode_step
    encoded, bias = model.encode(INPUTS)
    cache = model.init_cache(encoded, bias, max_length)
    decoder_inputs = tf.pad(TARGETS, [[0, 0], [1, 0]])  # PAD start symbol
    logits = []
    for index in range(TARGETS.shape[1]):
        step_logits, cache = decode_step(decoder_inputs[:, index], tf.constant(index), cache)
        logits.append(step_logits)
    return tf.stack(logits, axis=1)


def traced_step(model, max_length):
    """model.decode_step as one graph for every step: its signature is the first
    step's, with each dimension that the step changes (a growing cache's
    length) unknown."""
    encoded, bias = model.encode(INPUTS)
    cache = model.init_cache(encoded, bias, max_length)
    ids, index = TARGETS[:, 0], tf.constant(0)
    _, after = model.decode_step(ids, index, cache)

    def spec(before, later):
        dims = [b if b == a else None for b, a in zip(before.shape, later.shape, strict=True)]
        return tf.TensorSpec(dims, before.dtype)

    cache_spec = tf.nest.map_structure(spec, cache, after)
    signature = (tf.TensorSpec.from_tensor(ids), tf.TensorSpec.from_tensor(index), cache_spec)
    return tf.function(model.decode_step, input_signature=signature)


# Combinations whose every feature a faster variant above checks on its own
# run in the slow tier (docs/testing.md): causal encoder (ut_steps_by_position),
# input every step and no positions (ut_length_depth_no_step_signal,
# transformer_no_positions), relative positions (ut_relative_no_positions),
# the state norm (adaptive_ut_state_norm), spread and coupled positions
# (ut_spread_addition, ut_coupled), each also under ACT (adaptive_ut);
# coupled positions at every layer (transformer_coupled,
# transformer_every_layer), spread with reverse coupling (transformer_spread,
# transformer_coupled), and the UT's key channels and separate embeddings
# (the attention and embedding layers of transformer_key_channels and
# transformer_separate_embeddings, in the stack that ut checks).
SLOW_COMBINATIONS = {
    # Combinations whose parts the fast tier checks one by one (for its time budget).
    "adaptive_ut",  # ACT cached: the fast tier compares greedy searches, cached and not
    "adaptive_ut_basic_long",
    "ut_length_depth_no_step_signal",
    "adaptive_ut_sepconv",
    "adaptive_ut_state_norm",
    "adaptive_ut_length_depth",
    "ut_length_depth_fixed_decoder",
    "ut_log_length_scale",
    "ut_spread_addition",
    "ut_addition_coupled",
    "ut_length_depth_causal_encoder",
    # Options the fast tier checks on the other family or in a sibling
    # combination (its time budget on a 2-core AVX2 machine: docs/testing.md).
    "transformer_post",  # post-norm: the layer harness's Residual("post"), ut_post_learned_step
    "transformer_no_positions",  # ut_relative_no_positions stays
    "transformer_causal_encoder",
    "ut_sepconv",  # sepconv's cached steps: test_steps_after_every_row_halted_only_write_the_cache
    "transformer_learned_positions",
    "transformer_spread",  # transformer_coupled and the beam search's coupled rows stay
    "transformer_every_layer",
    "transformer_separate_embeddings",
    "transformer_key_channels",
    "ut_coupled",  # transformer_coupled stays
    "ut_length_scale",  # transformer_length_scale stays
    "ut_length_depth_input_every_step_no_positions",
    "adaptive_ut_relative",
    "ut_length_depth_state_norm",
    "adaptive_ut_spread",
    "adaptive_ut_coupled",
    "transformer_coupled_every_layer",
    "transformer_spread_reverse",
    "ut_key_channels",
    "ut_separate_embeddings",
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow) if name in SLOW_COMBINATIONS else name
        for name in sorted(MODELS)
    ],
)
def test_cached_logits_equal_teacher_forced_logits(name):
    """Both cache layouts (preallocated to 7 positions, and growing), stepped
    eagerly and as one traced step, give the teacher-forced logits. The model
    is built once for both layouts: building is a third of the test's time."""
    model = MODELS[name]()
    encoded, bias = model.encode(INPUTS)
    full = model.decode(TARGETS, encoded, bias).numpy()
    for max_length in (7, None):
        eager = cached_logits(model, max_length).numpy()
        np.testing.assert_allclose(eager[REAL], full[REAL], atol=1e-5, err_msg=f"{max_length=}")
        # One traced step for every position: growing caches change shape per
        # step, so their lengths are unknown in its signature.
        step = traced_step(model, max_length)
        compiled = cached_logits(model, max_length, step).numpy()
        assert step.experimental_get_tracing_count() == 1
        np.testing.assert_allclose(compiled[REAL], full[REAL], atol=1e-5, err_msg=f"{max_length=}")


@pytest.mark.parametrize("transition", ["fc", "sepconv"])
def test_steps_after_every_row_halted_only_write_the_cache(transition, monkeypatch):
    """Once all rows have halted, a recurrence step runs `frozen_step` (and
    no block application); the logits still equal teacher forcing. A zero
    halting kernel and a bias of 10 give p = 0.99995 > 1 - epsilon at every
    position, so every position halts at step 1 whatever the other weights."""
    from t2t_lite.layers import transformer_layers

    model = ut_model(adaptive=True, transformer_ffn_type=transition, act_halting_bias_init=10.0)
    for stack in (model.encoder, model.decoder):
        kernel = stack.halting.halting.kernel
        kernel.assign(tf.zeros_like(kernel))
    calls = {"decode_step": 0, "frozen_step": 0}
    block = transformer_layers.DecoderBlock

    def counting(name, method):
        def counted(self, *args, **kwargs):
            calls[name] += 1
            return method(self, *args, **kwargs)

        return counted

    for name_ in calls:
        monkeypatch.setattr(block, name_, counting(name_, getattr(block, name_)))
    logits = cached_logits(model).numpy()  # eager: only the taken branch runs
    encoded, bias = model.encode(INPUTS)
    full = model.decode(TARGETS, encoded, bias).numpy()
    np.testing.assert_allclose(logits[REAL], full[REAL], atol=1e-5)
    positions, max_steps = TARGETS.shape[1], model.hparams.act_max_steps
    assert calls["frozen_step"] == positions * (max_steps - 1)
    # sepconv's frozen step applies the block itself (the convolution's history).
    assert calls["decode_step"] == positions * (max_steps if transition == "sepconv" else 1)


def test_cache_entries_keep_their_shapes():
    model = MODELS["adaptive_ut"]()
    encoded, bias = model.encode(INPUTS)
    cache = model.init_cache(encoded, bias, 7)
    _, after = model.decode_step(tf.constant([0, 0]), tf.constant(0), cache)
    shapes = tf.nest.map_structure(lambda t: tuple(t.shape), cache)
    assert tf.nest.map_structure(lambda t: tuple(t.shape), after) == shapes
    # One self-attention entry per recurrence step, [B, H, T, D].
    steps = [key for key in cache if key.startswith("step_")]
    assert len(steps) == model.hparams.act_max_steps
    assert shapes["step_1"]["self_attention"].keys == (2, 2, 7, 8)


def never_pad(step_fn):
    """The step function with PAD made impossible to choose.

    An untrained model may pick PAD; the teacher-forced pass then treats
    that position as padding (halted under ACT) while the cached step,
    which never sees targets, treats it as real. The two agree on every
    output a trained model produces, so the comparison excludes PAD.
    """
    pad = tf.one_hot(0, 11, on_value=-1e9, off_value=0.0)  # [V]

    def step(ids, index, cache):
        logits, cache = step_fn(ids, index, cache)
        return logits + pad, cache

    return step


@pytest.mark.parametrize("name", ["transformer_pre", "adaptive_ut", "ut_coupled"])
def test_cached_and_uncached_greedy_search_agree(name):
    from t2t_lite.decoding import reference, search

    model = MODELS[name]()
    encoded, bias = model.encode(INPUTS)
    cache = model.init_cache(encoded, bias, 8)
    cached_ids, cached_scores = search.sample(never_pad(model.decode_step), cache, 2, 8)
    init_cache, step_fn = reference.uncached_step_fn(model, 8)
    ids, scores = search.sample(never_pad(step_fn), init_cache(encoded, bias), 2, 8)
    np.testing.assert_array_equal(ids.numpy(), cached_ids.numpy())
    np.testing.assert_allclose(scores.numpy(), cached_scores.numpy(), atol=1e-4)


@pytest.mark.parametrize("beam_size", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_outputs_stop_at_input_length_plus_extra_length(beam_size):
    from t2t_lite.decoding import decoder

    # An untrained model seldom emits EOS, so the limit is what stops it
    # (seeded: which rows reach the limit depends on the initial weights).
    keras.utils.set_random_seed(0)
    model = MODELS["transformer_pre"]()
    hp = decoder.DecodeHParams(beam_size=beam_size, extra_length=2, batch_size=3)
    inputs = [[3], [4, 5, 6], [7, 8, 9, 10, 3]]
    outputs = decoder.Decoder(model, hp).decode_ids(inputs)
    lengths = [len(hyps[0][0]) for hyps in outputs]
    limits = [len(i) + 2 for i in inputs]
    assert all(n <= limit for n, limit in zip(lengths, limits, strict=True))
    assert any(n == limit for n, limit in zip(lengths, limits, strict=True))


@pytest.mark.parametrize(
    "name",
    [
        "transformer_coupled",
        "adaptive_ut_coupled",
        pytest.param("ut_length_depth", marks=pytest.mark.slow),  # adaptive_ut_length_depth stays
        "adaptive_ut_length_depth",
        "transformer_length_scale",
        pytest.param("transformer_spread_reverse", marks=pytest.mark.slow),
        pytest.param("ut_spread_addition", marks=pytest.mark.slow),
    ],
)
def test_coupled_positions_follow_each_hypothesis_source_under_beam_search(name):
    """Beam rows share their source's static cache entries (B rows) while the
    decoder has B * K rows: each hypothesis must get its own source's length
    (for its coupled positions, its number of steps, or the count of source keys
    its scalable softmax reads).
    The uncached reference tiles everything per hypothesis, so it is the oracle."""
    from t2t_lite.decoding import reference, search

    model = MODELS[name]()
    encoded, bias = model.encode(INPUTS)
    cache = model.init_cache(encoded, bias, 8)
    cached = search.beam_search(never_pad(model.decode_step), cache, 2, 8, 3, 0.6)
    init_cache, step_fn = reference.uncached_step_fn(model, 8)
    uncached = search.beam_search(never_pad(step_fn), init_cache(encoded, bias), 2, 8, 3, 0.6)
    np.testing.assert_array_equal(cached[0].numpy(), uncached[0].numpy())
    np.testing.assert_allclose(cached[1].numpy(), uncached[1].numpy(), atol=1e-4)


@pytest.mark.parametrize("name", ["transformer_coupled", "adaptive_ut_sepconv"])
def test_the_eager_build_creates_what_keras_symbolic_build_creates(name, tmp_path):
    """checkpoints.build_model skips Keras's symbolic pass over container
    layers: a checkpoint of a model Keras built its own way (a symbolic call,
    then the real one) restores into it with every object consumed."""
    model = MODELS[name]()
    reference = type(model)(model.hparams, 11)
    reference(reference.dummy_features(), training=False)  # Keras's own build
    path = tf.train.Checkpoint(model=reference).write(str(tmp_path / "keras_built"))
    status = tf.train.Checkpoint(model=model).read(path)
    status.assert_consumed()
    assert len(model.weights) == len(reference.weights)
