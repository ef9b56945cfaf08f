"""Mixed precision: float32 logits, and the UT and ACT trained and decoded in fp16 and bf16."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from test_cached_decoding import INPUTS, REAL, TARGETS, cached_logits
from test_scale_out import random_batch

from t2t_lite import experiment
from t2t_lite.layers import embedding, masks
from t2t_lite.training import steps

POLICIES = {"fp16": "mixed_float16", "bf16": "mixed_bfloat16"}
# Cached decoding against teacher forcing: the same math on [B, 1] slices
# rather than [B, T], each rounded to the compute dtype (unit roundoff 2^-11
# for float16, 2^-8 for bfloat16) over a few layers and steps. On x86 CPUs
# the two agreed exactly, or to 5e-4 (fp16, oneDNN off); GPU kernels may
# round otherwise. A caching bug shows as differences of order 1.
CACHED_ATOL = {"fp16": 2e-2, "bf16": 1e-1}
# Against float32 on the same weights, logits of magnitude ~3 (a UT test model):
# the largest difference measured was 2.5e-3 (fp16) and 1.9e-2 (bf16); the
# first step's loss and gradient norm within 1.5e-4 and 1e-3 relative. A
# skipped or mis-cast sublayer differs by order 1.
FLOAT32_ATOL = {"fp16": 2e-2, "bf16": 1e-1}
LOSS_RTOL = {"fp16": 5e-3, "bf16": 2e-2}


@pytest.mark.parametrize("precision", sorted(POLICIES))
def test_logits_are_float32_values_under_mixed_precision(precision):
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(POLICIES[precision])
    try:
        layer = embedding.SharedEmbedding(50, 16)
        layer.build()
    finally:
        keras.mixed_precision.set_global_policy(previous)
    assert layer.compute_dtype != "float32"
    x = tf.cast(tf.random.stateless_normal([2, 3, 16], seed=(1, 2)), layer.compute_dtype)
    logits = layer.logits(x)
    assert logits.dtype == tf.float32
    # The float32 product of the same (low-precision) inputs and float32
    # weights; a product in the compute dtype would be off by ~1e-3 relative.
    expected = np.einsum("btc,vc->btv", x.numpy().astype(np.float32), layer.weights_matrix.numpy())
    np.testing.assert_allclose(logits.numpy(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "precision",
    # One precision a model in the fast tier (its time budget); both in the slow tier.
    [pytest.param(p, marks=pytest.mark.slow) if p == "fp16" else p for p in sorted(POLICIES)],
)
@pytest.mark.parametrize(
    ("hparams_set", "overrides"),
    [
        # The plain UT: what the other two hold and more (slow tier, for time).
        pytest.param("universal_transformer_test", "", marks=pytest.mark.slow),
        # bf16 on a CPU without it is emulated: slow tier (the fast tier trains fp16, test_scale_out).
        pytest.param("adaptive_universal_transformer_test", "", marks=pytest.mark.slow),
        # Steps that grow with the source (a loop of per-row masked steps; slow
        # tier: the fast tier's ACT row holds a per-row loop under bf16 too).
        pytest.param(
            "universal_transformer_test",
            (
                "rec_steps_per_symbol=1.0,num_rec_steps=5,rec_steps_random=1,"
                "rec_input_every_step=True,causal_encoder=True"
            ),
            marks=pytest.mark.slow,
        ),
    ],
    ids=["ut", "adaptive_ut", "ut_length_depth"],
)
def test_universal_transformers_train_and_decode_under_mixed_precision(
    precision, hparams_set, overrides
):
    exp = experiment.Experiment.resolve(
        "universal_transformer", "test_identity_small", hparams_set, overrides
    )
    keras.utils.set_random_seed(3)
    reference, reference_optimizer, reference_step = steps.build_training_state(exp, 12, "none")
    model, optimizer, step = steps.build_training_state(exp, 12, precision)
    model.set_weights(reference.get_weights())  # the same weights, computed in float32
    assert model.embedding.compute_dtype == {"fp16": "float16", "bf16": "bfloat16"}[precision]
    batch = random_batch(7, 4, 6)
    np.testing.assert_allclose(
        model.logits_and_aux(batch)[0].numpy(),
        reference.logits_and_aux(batch)[0].numpy(),
        atol=FLOAT32_ATOL[precision],
    )
    strategy = tf.distribute.get_strategy()
    train_step = steps.make_train_step(model, optimizer, strategy, 0.1, step, clip_grad_norm=1.0)
    reference_train_step = steps.make_train_step(
        reference, reference_optimizer, strategy, 0.1, reference_step, clip_grad_norm=1.0
    )
    for seed in range(3):
        batch = random_batch(seed, 4, 6)
        loss, weight, grad_norm, metrics = train_step((batch,))
        if seed == 0:  # the first step starts from the same weights: loss and gradient agree
            expected = reference_train_step((batch,))
            assert float(weight) == float(expected[1])
            np.testing.assert_allclose(float(loss), float(expected[0]), rtol=LOSS_RTOL[precision])
            np.testing.assert_allclose(
                float(grad_norm), float(expected[2]), rtol=LOSS_RTOL[precision]
            )
        assert all(np.isfinite(float(v)) for v in metrics.values())

    batch = random_batch(7, 4, 6)
    logits, _ = model.logits_and_aux(batch)
    assert logits.dtype == tf.float32 and np.isfinite(logits.numpy()).all()
    if exp.hparams.adaptive:
        # Each real position's halting weights sum to 1; padding has none.
        encoded, bias, encoder_stats = model.encode_with_stats(batch["inputs"])
        _, decoder_stats = model.decode_with_stats(batch["targets"], encoded, bias)
        for stats, ids in ((encoder_stats, batch["inputs"]), (decoder_stats, batch["targets"])):
            real = masks.padding_mask(ids).numpy() > 0
            sums = stats.weight_sums.numpy()
            np.testing.assert_allclose(sums[real], 1.0, atol=1e-6)
            np.testing.assert_array_equal(sums[~real], 0.0)
            assert (stats.remainders.numpy()[real] > 0).all()

    encoded, bias = model.encode(INPUTS)
    full = model.decode(TARGETS, encoded, bias).numpy()
    cached = cached_logits(model).numpy()
    np.testing.assert_allclose(cached[REAL], full[REAL], atol=CACHED_ATOL[precision])
