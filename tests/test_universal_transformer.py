import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import checkpoints, experiment, registry
from t2t_lite.layers import embedding, masks
from t2t_lite.models import transformer, transformer_hparams, universal_transformer
from t2t_lite.models import universal_transformer_hparams as ut_hparams

UT_SETS = [
    n
    for n in registry.HPARAMS.names()
    if isinstance(registry.HPARAMS.get(n)(), ut_hparams.UniversalTransformerHParams)
]
INPUTS = tf.constant([[3, 4, 5, 6, 1], [7, 8, 1, 0, 0]])
TARGETS = tf.constant([[6, 5, 4, 3, 1], [8, 7, 1, 0, 0]])
FEATURES = {"inputs": INPUTS, "targets": TARGETS}


def ut_model(vocab_size=11, adaptive=False, **overrides):
    name = "adaptive_universal_transformer_test" if adaptive else "universal_transformer_test"
    hp = dataclasses.replace(registry.HPARAMS.get(name)(), **overrides)
    model = universal_transformer.UniversalTransformer(hp, vocab_size)
    checkpoints.build_model(model)
    return model


@pytest.mark.parametrize("name", UT_SETS)
def test_every_set_is_causal_and_blind_to_padding(name):
    """For every set's structure (fc or sepconv, fixed steps or ACT): more source
    padding changes no logit, a later target changes no earlier position's
    logits, and training mode adds the ponder cost exactly under ACT."""
    hp = dataclasses.replace(
        registry.HPARAMS.get(name)(),
        hidden_size=16,
        filter_size=24,
        num_heads=2,
        num_rec_steps=2,
        act_max_steps=3,
    )
    model = universal_transformer.UniversalTransformer(hp, 13)
    logits = model(FEATURES).numpy()
    assert logits.shape == (2, 5, 13)
    padded = model({"inputs": tf.pad(INPUTS, [[0, 0], [0, 3]]), "targets": TARGETS}).numpy()
    np.testing.assert_allclose(padded, logits, atol=1e-5)
    later = tf.tensor_scatter_nd_update(TARGETS, [[0, 2], [1, 2]], [9, 9])  # inputs at 3
    changed = model({"inputs": INPUTS, "targets": later}).numpy()
    np.testing.assert_allclose(changed[:, :3], logits[:, :3], atol=1e-5)
    assert not np.allclose(changed[:, 3], logits[:, 3], atol=1e-5)
    trained, aux = model.logits_and_aux(FEATURES, training=True)
    assert trained.shape == (2, 5, 13) and ("loss" in aux) == hp.adaptive


def test_sets_keep_tensor2tensor_relations():
    get = registry.HPARAMS.get
    assert get("universal_transformer_base")().hidden_size == 1024
    assert get("universal_transformer_small")().hidden_size == 512
    assert get("universal_transformer_tiny")().num_rec_steps == 8
    for size in ("base", "small", "tiny"):
        fixed, adaptive = (
            get(f"universal_transformer_{size}")(),
            get(f"adaptive_universal_transformer_{size}")(),
        )
        assert adaptive.recurrence_type == "act" and fixed.recurrence_type == "basic"
        # Adaptive sets may take up to twice the fixed depth, never fewer steps.
        assert adaptive.act_max_steps == 2 * fixed.num_rec_steps
    assert get("universal_transformer_sepconv_base")().transformer_ffn_type == "sepconv"


def copy_weights(source, target):
    assert [tuple(w.shape) for w in source.weights] == [tuple(w.shape) for w in target.weights]
    for s, t in zip(source.weights, target.weights, strict=True):
        t.assign(s)


@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_one_step_ut_equals_one_transformer_layer_plus_step_signal(norm_position):
    ut = ut_model(num_rec_steps=1, norm_position=norm_position)
    hp = dataclasses.replace(
        transformer_hparams.transformer_test(), num_hidden_layers=1, norm_position=norm_position
    )
    tr = transformer.Transformer(hp, 11)
    checkpoints.build_model(tr)
    copy_weights(ut, tr)
    channels = hp.hidden_size
    # Transformer layer input: embeddings + position signal + the step-1 sinusoid.
    step_one = embedding.timing_signal(1, channels, start=1)  # [1, 1, C]
    x = tr.embedding.embed(INPUTS) + embedding.timing_signal(5, channels) + step_one
    bias = masks.padding_bias(INPUTS)
    expected_encoded = tr.encoder(x, bias)
    encoded, _ = ut.encode(INPUTS)
    np.testing.assert_allclose(encoded.numpy(), expected_encoded.numpy(), atol=1e-5)
    y = tr.embedding.embed(transformer.shift_right(TARGETS))
    y = y + embedding.timing_signal(5, channels) + step_one
    decoded = tr.decoder(y, masks.causal_bias(5), expected_encoded, bias)
    expected_logits = tr.embedding.logits(decoded)
    logits = ut.decode(TARGETS, encoded, bias)
    np.testing.assert_allclose(logits.numpy(), expected_logits.numpy(), atol=1e-5)


@pytest.mark.parametrize("adaptive", [False, True])
def test_parameter_count_does_not_depend_on_steps(adaptive):
    counts = {
        ut_model(adaptive=adaptive, num_rec_steps=steps, act_max_steps=steps).count_params()
        for steps in (1, 3, 7)
    }
    assert len(counts) == 1


def test_checkpoint_holds_the_shared_blocks_once(tmp_path):
    stored = {}
    for steps in (1, 4):
        model = ut_model(adaptive=True, num_rec_steps=steps, act_max_steps=steps)
        path = checkpoints.make_checkpoint(model).write(str(tmp_path / f"steps{steps}"))
        names = [
            name
            for name, _ in tf.train.list_variables(path)
            if name.endswith(".ATTRIBUTES/VARIABLE_VALUE") and name.startswith("model/")
        ]
        # Every model variable is stored once (the seed state is the one non-weight).
        assert len(names) == len(model.weights)
        stored[steps] = sorted(names)
    assert stored[1] == stored[4]
    assert sum(n.startswith("model/encoder/block/self_attention/query/") for n in stored[4]) == 1


def test_learned_step_signal_has_one_row_per_step():
    model = ut_model(step_timing_signal_type="learned", num_rec_steps=3)
    tables = [w for w in model.weights if "step_signal" in w.path]
    assert sorted(tuple(w.shape) for w in tables) == [(3, 16), (3, 16)]
    assert not [w for w in ut_model().weights if "step_signal" in w.path]


def test_random_position_start_applies_in_training_only():
    fixed = ut_model()
    shifted = ut_model(position_start_index="random", position_start_max=1000)
    copy_weights(fixed, shifted)
    expected = fixed(FEATURES, training=False).numpy()
    np.testing.assert_allclose(shifted(FEATURES, training=False).numpy(), expected, atol=1e-6)
    # Training mode (the test set has no dropout) shifts positions, so logits change.
    assert not np.allclose(shifted(FEATURES, training=True).numpy(), expected, atol=1e-4)
    np.testing.assert_allclose(fixed(FEATURES, training=True).numpy(), expected, atol=1e-6)


def test_randomized_positions_apply_in_training_only_for_the_ut():
    """Randomized positions (coupled ones too) in the UT: evaluation is the plain
    model's; a range as long as the batch's longer side draws the consecutive
    positions, so training equals evaluation; a range of 400 moves the logits."""
    coupled = {"position_coupling": "addition", "position_separator_id": 2}
    fixed = ut_model(**coupled)
    drawn = ut_model(**coupled, position_start_index="randomized", position_start_max=400)
    tight = ut_model(**coupled, position_start_index="randomized", position_start_max=5)
    copy_weights(fixed, drawn)
    copy_weights(fixed, tight)
    expected = fixed(FEATURES, training=False).numpy()
    np.testing.assert_allclose(drawn(FEATURES, training=False).numpy(), expected, atol=1e-6)
    np.testing.assert_allclose(tight(FEATURES, training=True).numpy(), expected, atol=1e-5)
    assert not np.allclose(drawn(FEATURES, training=True).numpy(), expected, atol=1e-4)


def test_offset_semantics_shared_and_per_step():
    """ "random": one offset in [0, max) for both stacks; "random_per_step": a vector of
    max_steps offsets per stack, drawn independently; evaluation always starts at 0."""
    shared = ut_model(position_start_index="random", position_start_max=1000)
    per_step = ut_model(position_start_index="random_per_step", position_start_max=1000)
    assert shared.position_policy.starts(FEATURES, training=False) == (0, 0)
    assert per_step.position_policy.starts(FEATURES, training=False) == (0, 0)
    encoder, decoder = shared.position_policy.starts(FEATURES, training=True)
    assert encoder.shape == () and int(encoder) == int(decoder) and 0 <= int(encoder) < 1000
    encoder, decoder = per_step.position_policy.starts(FEATURES, training=True)
    steps = per_step.hparams.num_rec_steps
    assert encoder.shape == (steps,) and decoder.shape == (steps,)
    assert np.all((encoder.numpy() >= 0) & (encoder.numpy() < 1000))
    assert encoder.numpy().tolist() != decoder.numpy().tolist()  # 1 in 10^9 to collide
    # position_start_max=0: the limit is the batch's source length (5 here).
    length_limited = ut_model(position_start_index="random_per_step")
    for _ in range(5):
        for starts in length_limited.position_policy.starts(FEATURES, training=True):
            assert np.all((starts.numpy() >= 0) & (starts.numpy() < 5))


def test_a_per_step_start_shifts_each_steps_positions():
    """With an identity block and no final norm, the stack's output is the sum over
    steps t of (positions from start[t-1]) + step signal t."""
    model = ut_model(norm_position="post")
    stack = model.decoder
    length, channels = 4, model.hparams.hidden_size
    x = tf.zeros([1, length, channels])
    starts = tf.constant([0, 7, 3])
    output, _ = stack.apply(x, lambda h: h, starts, tf.ones([1, length]))
    expected = sum(
        embedding.timing_signal(length, channels, start=int(start)) + stack.step_signal.signal(step)
        for step, start in enumerate(starts.numpy(), start=1)
    )
    np.testing.assert_allclose(output.numpy(), expected.numpy(), atol=1e-5)
    scalar, _ = stack.apply(x, lambda h: h, 7, tf.ones([1, length]))
    assert not np.allclose(scalar.numpy(), output.numpy(), atol=1e-3)


@pytest.mark.parametrize(
    "overrides",
    [{}, {"transformer_ffn_type": "sepconv"}, {"recurrence_type": "act"}],
    ids=["fc", "sepconv", "act"],
)
def test_example_alone_equals_example_in_padded_batch(overrides):
    model = ut_model(**overrides)
    alone = {"inputs": tf.constant([[3, 4, 1]]), "targets": tf.constant([[4, 3, 1]])}
    batch = {
        "inputs": tf.constant([[3, 4, 1, 0, 0, 0], [5, 6, 7, 8, 9, 1]]),
        "targets": tf.constant([[4, 3, 1, 0, 0, 0, 0], [9, 8, 7, 6, 5, 1, 0]]),
    }
    logits_alone, aux_alone = model.logits_and_aux(alone)
    logits_batch, aux_batch = model.logits_and_aux(batch)
    np.testing.assert_allclose(logits_batch[0, :3].numpy(), logits_alone[0].numpy(), atol=1e-5)
    if aux_alone:
        assert float(aux_batch["encoder_act_steps"]) >= float(aux_alone["encoder_act_steps"])


@pytest.mark.parametrize(
    "overrides", [{"transformer_ffn_type": "sepconv"}, {"recurrence_type": "act"}]
)
def test_decoder_is_causal(overrides):
    model = ut_model(**overrides)
    encoded, bias = model.encode(INPUTS)
    logits = model.decode(TARGETS, encoded, bias).numpy()
    changed = tf.tensor_scatter_nd_update(TARGETS, [[0, 2]], [9])
    changed_logits = model.decode(changed, encoded, bias).numpy()
    # Logits at position t see targets < t only.
    np.testing.assert_allclose(changed_logits[0, :3], logits[0, :3], atol=1e-5)
    assert not np.allclose(changed_logits[0, 3:], logits[0, 3:], atol=1e-5)


def test_ponder_cost_is_weighted_mean_ponder_time():
    model = ut_model(adaptive=True, act_loss_weight=0.5)
    _, aux = model.logits_and_aux(FEATURES, training=True)
    expected = 0.5 * (float(aux["encoder_ponder_time"]) + float(aux["decoder_ponder_time"]))
    assert float(aux["loss"]) == pytest.approx(expected, rel=1e-6)
    for stack in ("encoder", "decoder"):
        assert 1.0 <= float(aux[f"{stack}_ponder_time"]) <= 4.0 + 1.0
        assert 1.0 <= float(aux[f"{stack}_act_steps"]) <= 4.0


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("act_max_steps=0", "act_max_steps"),
        ("act_type=graves", "act_type"),
        ("act_halting_kernel_init=ones", "act_halting_kernel_init"),
        ("transformer_ffn_type=conv", "transformer_ffn_type"),
        ("recurrence_type=lstm", "recurrence_type"),
        ("step_timing_signal_type=cosine", "step_timing_signal_type"),
        ("position_start_index=step", "position_start_index"),
        ("num_heads=3", "num_heads, hidden_size"),
        ("attention_key_channels=5", "attention_key_channels"),  # 2 heads do not divide it
        ("position_embedding=learned", "position_embedding"),  # a Transformer option
        ("num_rec_steps=0", "num_rec_steps"),
    ],
)
def test_impossible_hparams_are_refused_naming_the_keys(text, keys):
    with pytest.raises(ValueError, match=rf"invalid hparams \({keys}\)"):
        experiment.Experiment.resolve(
            "universal_transformer",
            "test_identity_small",
            "adaptive_universal_transformer_test",
            text,
        )
