import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import checkpoints, registry
from t2t_lite.layers import masks
from t2t_lite.models import positions, transformer, transformer_hparams

TRANSFORMER_SETS = [
    n
    for n in registry.HPARAMS.names()
    if type(registry.HPARAMS.get(n)()) is transformer_hparams.TransformerHParams
]


def shrink(hp):
    """Keeps a set's structure (layers, norm, dropouts) at test size."""
    return dataclasses.replace(
        hp,
        hidden_size=16,
        filter_size=24,
        num_heads=2,
        num_hidden_layers=min(hp.num_hidden_layers, 2),
    )


def tiny_model(vocab_size=11, **overrides):
    hp = dataclasses.replace(transformer_hparams.transformer_test(), **overrides)
    return transformer.Transformer(hp, vocab_size)


@pytest.mark.parametrize("name", TRANSFORMER_SETS)
def test_every_set_is_causal_and_blind_to_padding(name):
    """For every set's structure: more source padding changes no logit, a later
    target changes no earlier position's logits, and training mode runs."""
    model = transformer.Transformer(shrink(registry.HPARAMS.get(name)()), 13)
    inputs = tf.constant([[3, 4, 5, 1, 0], [6, 1, 0, 0, 0]])
    targets = tf.constant([[7, 8, 1], [9, 1, 0]])
    logits = model({"inputs": inputs, "targets": targets}).numpy()
    assert logits.shape == (2, 3, 13)
    padded = model({"inputs": tf.pad(inputs, [[0, 0], [0, 3]]), "targets": targets}).numpy()
    np.testing.assert_allclose(padded, logits, atol=1e-5)
    # Target 1 is the decoder's input at position 2 only.
    changed = model({"inputs": inputs, "targets": tf.constant([[7, 5, 1], [9, 4, 0]])}).numpy()
    np.testing.assert_allclose(changed[:, :2], logits[:, :2], atol=1e-5)
    assert not np.allclose(changed[:, 2], logits[:, 2], atol=1e-5)
    trained = model({"inputs": inputs, "targets": targets}, training=True)
    assert trained.shape == (2, 3, 13)


def test_parameter_count_of_transformer_base_by_hand():
    v, d, ff, n = 37000, 512, 2048, 6
    encoder_block = 4 * d * d + (d * ff + ff + ff * d + d) + 2 * (2 * d)
    decoder_block = 8 * d * d + (d * ff + ff + ff * d + d) + 3 * (2 * d)
    expected = v * d + n * encoder_block + n * decoder_block + 2 * (2 * d)  # + final norms
    model = transformer.Transformer(transformer_hparams.transformer_base(), v)
    checkpoints.build_model(model)  # every variable, without Keras's symbolic trace
    assert model.count_params() == expected == 63_047_680


@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_decoder_is_causal(norm_position):
    model = tiny_model(norm_position=norm_position)
    inputs = tf.constant([[3, 4, 5, 1]])
    a = model({"inputs": inputs, "targets": tf.constant([[6, 7, 8, 1]])})
    b = model({"inputs": inputs, "targets": tf.constant([[6, 7, 2, 9]])})
    # Logits at t depend on targets < t only (decoder inputs are shifted right).
    np.testing.assert_allclose(a[:, :3], b[:, :3], atol=1e-5)
    assert not np.allclose(a[:, 3], b[:, 3])


def test_example_alone_equals_example_in_padded_batch():
    model = tiny_model()
    inputs, targets = tf.constant([[3, 4, 1]]), tf.constant([[5, 1]])
    alone = model({"inputs": inputs, "targets": targets})
    batch = model(
        {
            "inputs": tf.constant([[3, 4, 1, 0, 0], [2, 2, 2, 2, 1]]),
            "targets": tf.constant([[5, 1, 0], [6, 6, 1]]),
        }
    )
    np.testing.assert_allclose(alone[0], batch[0, :2], atol=1e-5)


def test_dropout_only_in_training():
    model = tiny_model(layer_prepostprocess_dropout=0.5)
    features = {"inputs": tf.constant([[3, 4, 1]]), "targets": tf.constant([[5, 1]])}
    np.testing.assert_array_equal(model(features), model(features))
    assert not np.allclose(model(features, training=True), model(features, training=True))


def test_shared_embedding_is_the_softmax():
    model = tiny_model()
    features = {"inputs": tf.constant([[3, 1]]), "targets": tf.constant([[4, 1]])}
    before = model(features)
    model.embedding.weights_matrix.assign(model.embedding.weights_matrix * 0)
    after = model(features)
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, tf.zeros_like(after))


@pytest.mark.parametrize("kind", ["random", "random_per_step"])
def test_offsets_shift_positions_in_training_only(kind):
    features = {
        "inputs": tf.constant([[3, 4, 5, 1, 0], [6, 1, 0, 0, 0]]),
        "targets": tf.constant([[7, 8, 1], [9, 1, 0]]),
    }
    fixed = tiny_model(layer_prepostprocess_dropout=0.0, attention_dropout=0.0, relu_dropout=0.0)
    shifted = tiny_model(
        layer_prepostprocess_dropout=0.0,
        attention_dropout=0.0,
        relu_dropout=0.0,
        position_start_index=kind,
        position_start_max=1000,
    )
    fixed(features)
    shifted(features)
    trainable = [w for w in shifted.weights if "seed" not in w.path]
    for source, target in zip(fixed.weights, trainable, strict=True):
        target.assign(source)
    expected = fixed(features, training=False).numpy()
    np.testing.assert_allclose(shifted(features, training=False).numpy(), expected, atol=1e-6)
    assert not np.allclose(shifted(features, training=True).numpy(), expected, atol=1e-4)
    draws = [shifted.position_policy.starts(features, training=True) for _ in range(3)]
    for encoder, decoder in draws:
        assert encoder.shape == () and decoder.shape == ()  # one offset per stack
        assert 0 <= int(encoder) < 1000 and 0 <= int(decoder) < 1000
    same = [int(encoder) == int(decoder) for encoder, decoder in draws]
    # "random": shared by both stacks; "random_per_step": drawn for each stack.
    assert all(same) if kind == "random" else not all(same)
    assert not [w for w in fixed.weights if "seed" in w.path]  # none without offsets


def test_reverse_coupling_puts_target_t_at_the_position_of_the_source_symbol_it_copies():
    """Sources of 3 and 1 symbols (then EOS, PAD): target t < n sits at n - 1 - t
    (+ offset), the EOS target (t = n) at n, the source EOS's own position, and
    t > n at t. Without coupling the start passes through."""
    model = tiny_model(position_coupling="reverse")
    _, bias = model.encode(tf.constant([[5, 6, 7, 1, 0], [5, 1, 0, 0, 0]]))
    positions = model.position_policy.decoder(4, bias, start=2).numpy().tolist()
    assert positions == [[4, 3, 2, 5], [2, 3, 4, 5]]
    # Decoding step 1, two hypotheses per source: the same positions as column 1.
    beam = model.position_policy.decoder(1, bias, rows=tf.constant(4), first=1).numpy().tolist()
    assert beam == [[1], [1], [1], [1]]
    step2 = model.position_policy.decoder(1, bias, rows=tf.constant(4), first=2).numpy().tolist()
    assert step2 == [[0], [0], [2], [2]]  # source 1's first symbol; source 2 past its EOS
    assert tiny_model().position_policy.decoder(4, bias, start=2) == 2


def test_coupled_positions_hold_in_evaluation_without_an_offset():
    """Teacher-forced logits of a reverse-coupled model equal those of the same
    weights fed the coupled position signal by hand; at evaluation no offset."""
    from t2t_lite.layers import embedding

    keras.utils.set_random_seed(3)
    model = tiny_model(position_coupling="reverse", layer_prepostprocess_dropout=0.0)
    inputs = tf.constant([[5, 6, 7, 1], [8, 1, 0, 0]])
    targets = tf.constant([[7, 6, 5, 1], [8, 1, 0, 0]])
    logits = model({"inputs": inputs, "targets": targets}, training=False).numpy()
    encoded, bias = model.encode(inputs)
    x = model.embedding.embed(transformer.shift_right(targets))
    x = x + embedding.timing_signal_at(tf.constant([[2, 1, 0, 3], [0, 1, 2, 3]]), 16)
    by_hand = model.embedding.logits(
        model.decoder(x, masks.causal_bias(4), encoded, bias, training=False)
    ).numpy()
    np.testing.assert_allclose(logits, by_hand, atol=1e-5)


def test_addition_coupling_restarts_source_positions_after_each_separator():
    """Little-endian "31 + 452" (ids: digits 3.., separator 2): digits of equal
    significance share a position, the separator and EOS sit one past their
    number; a second separator restarts again; the decoder's stay consecutive."""
    model = tiny_model(position_coupling="addition", position_separator_id=2)
    inputs = tf.constant([[4, 5, 2, 6, 7, 8, 1], [4, 2, 5, 2, 6, 1, 0]])
    positions = model.position_policy.encoder(inputs, 3).numpy().tolist()
    assert positions == [[3, 4, 5, 3, 4, 5, 6], [3, 4, 3, 4, 3, 4, 5]]
    encoded, bias = model.encode(inputs)
    assert model.position_policy.decoder(4, bias, start=3) == 3
    # The encoder runs on those positions' signal (evaluation: no offset).
    from t2t_lite.layers import embedding

    x = model.embedding.embed(inputs) + embedding.timing_signal_at(
        model.position_policy.encoder(inputs), 16
    )
    by_hand = model.encoder(x, bias, training=False)
    np.testing.assert_allclose(encoded.numpy(), by_hand.numpy(), atol=1e-5)
    assert tiny_model().position_policy.encoder(inputs, 3) == 3
    with pytest.raises(ValueError, match="position_separator_id >= 0"):
        tiny_model(position_coupling="addition")
    with pytest.raises(ValueError, match="only it takes one"):
        tiny_model(position_separator_id=2)


def test_position_every_layer_adds_the_signal_before_each_block():
    """With position_every_layer, each block after the first reads the position
    signal again (by hand: block(x + signal)); the encoder's on the coupled
    addition positions. Without it, the same weights give other outputs."""
    from t2t_lite.layers import embedding

    keras.utils.set_random_seed(5)
    model = tiny_model(
        position_every_layer=True,
        position_coupling="addition",
        position_separator_id=2,
        layer_prepostprocess_dropout=0.0,
    )
    inputs = tf.constant([[4, 5, 2, 6, 7, 8, 1], [4, 2, 5, 1, 0, 0, 0]])
    targets = tf.constant([[7, 6, 5, 1], [8, 1, 0, 0]])
    encoded, bias = model.encode(inputs)
    signal = embedding.timing_signal_at(model.position_policy.encoder(inputs), 16)  # [B, S, C]
    x = model.embedding.embed(inputs) + signal
    first, second = model.encoder.blocks
    by_hand = model.encoder.final_norm(second(first(x, bias) + signal, bias))
    np.testing.assert_allclose(encoded.numpy(), by_hand.numpy(), atol=1e-5)
    once = model.encoder.final_norm(second(first(x, bias), bias))
    assert np.abs(encoded.numpy() - once.numpy()).max() > 1e-3

    logits = model({"inputs": inputs, "targets": targets}, training=False).numpy()
    y_signal = embedding.timing_signal(4, 16)  # [1, T, C]
    y = model.embedding.embed(transformer.shift_right(targets)) + y_signal
    first, second = model.decoder.blocks
    causal = masks.causal_bias(4)
    y = second(first(y, encoded, causal, bias) + y_signal, encoded, causal, bias)
    by_hand = model.embedding.logits(model.decoder.final_norm(y)).numpy()
    np.testing.assert_allclose(logits, by_hand, atol=1e-5)


def test_position_every_layer_is_a_transformer_option():
    from t2t_lite.models import universal_transformer_hparams

    ut = universal_transformer_hparams.universal_transformer_tiny()
    with pytest.raises(ValueError, match="position_every_layer"):
        dataclasses.replace(ut, position_every_layer=True)


def test_coupling_needs_a_token_source_and_a_shared_offset():
    coupled = dataclasses.replace(
        transformer_hparams.transformer_test(), position_coupling="reverse"
    )
    with pytest.raises(ValueError, match="needs a token source"):
        transformer.Transformer(coupled, 11, input_encoding="none")
    with pytest.raises(ValueError, match="random_per_step"):
        dataclasses.replace(coupled, position_start_index="random_per_step")


def test_separate_embeddings_are_three_matrices_each_in_its_place():
    """Hand-derived: V=11, C=16 -> two more [11, 16] matrices (352 parameters);
    zeroing the source matrix changes the logits, and so does the softmax's,
    while the target embedding still feeds the decoder."""
    shared, separate = tiny_model(), tiny_model(shared_embedding_and_softmax_weights=False)
    features = {"inputs": tf.constant([[3, 4, 1]]), "targets": tf.constant([[5, 6, 1]])}
    shared(features), separate(features)
    count = lambda m: sum(v.shape.num_elements() for v in m.trainable_variables)
    assert count(separate) - count(shared) == 2 * 11 * 16
    assert separate.source_embedding is not separate.embedding is not separate.softmax
    before = separate(features).numpy()
    for layer in (separate.source_embedding, separate.softmax, separate.embedding):
        kept = layer.weights_matrix.numpy()
        layer.weights_matrix.assign(tf.zeros_like(kept))
        assert not np.allclose(separate(features).numpy(), before)
        layer.weights_matrix.assign(kept)


def test_randomized_positions_are_sorted_distinct_and_within_the_range():
    """Each row: `count` distinct positions of [0, limit), increasing; a range no
    longer than the count leaves only 0..count-1 (the consecutive positions)."""
    seed = keras.random.SeedGenerator(4)
    drawn = positions.draw_positions(64, 12, 40, seed).numpy()
    assert drawn.shape == (64, 12)
    assert (np.diff(drawn, axis=1) > 0).all() and drawn.min() >= 0 and drawn.max() < 40
    assert len({tuple(row) for row in drawn}) > 1  # drawn per row
    assert drawn.max() > 30  # the range's far end is reached, not only the first 12
    full = positions.draw_positions(3, 5, 5, seed).numpy().tolist()
    assert full == [[0, 1, 2, 3, 4]] * 3
    assert positions.draw_positions(1, 6, 2, seed).numpy().tolist() == [[0, 1, 2, 3, 4, 5]]


def test_randomized_positions_map_every_coupled_index_through_one_table():
    """Hand-derived: with the table [[10, 20, 30, 40, 50, 60, 70]] (row 1: its
    double), the addition-coupled indices [0, 1, 2, 0, 1, 2, 3] read
    [10, 20, 30, 10, 20, 30, 40]; the decoder's consecutive targets read the
    table's first T entries; reverse coupling's [2, 1, 0, 3] reads
    [30, 20, 10, 40]."""
    table = tf.constant([[10, 20, 30, 40, 50, 60, 70], [20, 40, 60, 80, 100, 120, 140]])
    model = tiny_model(position_coupling="addition", position_separator_id=2)
    inputs = tf.constant([[4, 5, 2, 6, 7, 8, 1], [4, 2, 5, 2, 6, 1, 0]])
    assert model.position_policy.encoder(inputs, table).numpy().tolist() == [
        [10, 20, 30, 10, 20, 30, 40],
        [20, 40, 20, 40, 20, 40, 60],
    ]
    _, bias = model.encode(inputs)
    assert model.position_policy.decoder(3, bias, table).numpy().tolist() == [
        [10, 20, 30],
        [20, 40, 60],
    ]
    plain = tiny_model()
    assert plain.position_policy.encoder(inputs[:, :4], table).numpy().tolist() == [
        [10, 20, 30, 40],
        [20, 40, 60, 80],
    ]
    reverse = tiny_model(position_coupling="reverse")
    _, bias = reverse.encode(tf.constant([[5, 6, 7, 1, 0], [5, 1, 0, 0, 0]]))
    assert reverse.position_policy.decoder(4, bias, table).numpy().tolist() == [
        [30, 20, 10, 40],
        [20, 40, 60, 80],
    ]


def test_randomized_positions_apply_in_training_only():
    """The same weights: evaluation reads consecutive positions (equal to a model
    without the option); training draws [B, K] positions, K the longer side,
    shared by encoder and decoder; with a range as long as K they are the
    consecutive ones and training equals evaluation (no dropout)."""
    features = {
        "inputs": tf.constant([[3, 4, 5, 1, 0], [6, 1, 0, 0, 0]]),
        "targets": tf.constant([[7, 8, 1], [9, 1, 0]]),
    }
    quiet = {"layer_prepostprocess_dropout": 0.0, "attention_dropout": 0.0, "relu_dropout": 0.0}
    fixed = tiny_model(**quiet)
    drawn = tiny_model(**quiet, position_start_index="randomized", position_start_max=400)
    tight = tiny_model(**quiet, position_start_index="randomized", position_start_max=5)
    for m in (fixed, drawn, tight):
        m(features)
    for other in (drawn, tight):
        trainable = [w for w in other.weights if "seed" not in w.path]
        for source, target in zip(fixed.weights, trainable, strict=True):
            target.assign(source)
    expected = fixed(features, training=False).numpy()
    np.testing.assert_allclose(drawn(features, training=False).numpy(), expected, atol=1e-6)
    np.testing.assert_allclose(tight(features, training=True).numpy(), expected, atol=1e-5)
    assert not np.allclose(drawn(features, training=True).numpy(), expected, atol=1e-4)
    encoder, decoder = drawn.position_policy.starts(features, training=True)
    assert encoder is decoder and encoder.shape == (2, 5)
    with pytest.raises(ValueError, match="position_start_max to at least"):
        tiny_model(position_start_index="randomized")


def test_spread_positions_place_index_k_of_n_at_k_times_the_range_over_n():
    """Hand-derived, range 400: a row of n = 4 positions reads 0, 100, 200, 300;
    n = 8 reads 0, 50, 100, 150; n = 7 with addition-coupled indices
    [0, 1, 2, 0, 1, 2, 3] reads floor(400 k / 7) = [0, 57, 114, 0, 57, 114, 171];
    reverse coupling of a 3-symbol source (n = 4) reads targets [2, 1, 0, 3] at
    [200, 100, 0, 300]."""
    spread = positions.Spread(tf.constant([4, 8]), 400)
    index = tf.range(4)[tf.newaxis]
    assert positions.place(spread, index).numpy().tolist() == [
        [0, 100, 200, 300],
        [0, 50, 100, 150],
    ]
    spreading = {"position_start_index": "randomized", "position_start_max": 400}
    model = tiny_model(
        **spreading, position_eval="spread", position_coupling="addition", position_separator_id=2
    )
    inputs = tf.constant([[4, 5, 2, 6, 7, 8, 1]])
    assert model.position_policy.encoder(inputs).numpy().tolist() == [[0, 57, 114, 0, 57, 114, 171]]
    assert model.position_policy.encoder(inputs, 0).numpy().tolist() == [[0, 1, 2, 0, 1, 2, 3]]
    reverse = tiny_model(**spreading, position_eval="spread", position_coupling="reverse")
    _, bias = reverse.encode(tf.constant([[5, 6, 7, 1, 0]]))
    assert reverse.position_policy.decoder(4, bias).numpy().tolist() == [[200, 100, 0, 300]]


@pytest.mark.slow  # fast tier budget: the offsets and randomized-position tests cover training-only positions
def test_spread_positions_change_evaluation_only():
    """The same weights and draws: training is the same with or without
    position_eval=spread; evaluation differs, except where the range equals the
    source's length (n = 5 positions, range 5: floor(5 k / 5) = k, consecutive)."""
    features = {"inputs": tf.constant([[3, 4, 5, 6, 1]]), "targets": tf.constant([[7, 8, 1]])}
    quiet = {"layer_prepostprocess_dropout": 0.0, "attention_dropout": 0.0, "relu_dropout": 0.0}
    wide = {"position_start_index": "randomized", "position_start_max": 400}
    models = [
        tiny_model(**quiet, **wide),
        tiny_model(**quiet, **wide, position_eval="spread"),
        tiny_model(**quiet, position_start_index="randomized", position_start_max=5),
        tiny_model(
            **quiet, position_start_index="randomized", position_start_max=5, position_eval="spread"
        ),
    ]
    for m in models:
        m(features)
        for source, target in zip(models[0].weights, m.weights, strict=True):
            target.assign(source)  # the seed generator's state too: the same draws
    consecutive, spread, tight, tight_spread = (m(features).numpy() for m in models)
    assert not np.allclose(spread, consecutive, atol=1e-4)
    np.testing.assert_allclose(tight_spread, tight, atol=1e-6)
    trained = [m(features, training=True).numpy() for m in models[:2]]
    np.testing.assert_allclose(trained[1], trained[0], atol=1e-6)
    with pytest.raises(ValueError, match="needs position_start_index=randomized"):
        tiny_model(position_eval="spread")
    with pytest.raises(ValueError, match="needs a token source"):
        transformer.Transformer(models[1].hparams, 20, input_encoding="none")


def test_relative_positions_are_self_attentions_own():
    """max_relative_position=2 adds a key table and a value table of 5 rows
    (distances -2..2) of one head's depth to every self-attention and none to
    the encoder-decoder attention; the parameter count grows by exactly those."""
    plain, relative = tiny_model(), tiny_model(max_relative_position=2)
    for model in (plain, relative):
        model(model.dummy_features())
    tables = [w for w in relative.weights if "relative_" in w.path]
    hp = relative.hparams
    assert len(tables) == 2 * (hp.encoder_layers + hp.decoder_layers)
    assert all("self_attention" in w.path for w in tables)
    depth = hp.hidden_size // hp.num_heads
    assert all(tuple(w.shape) == (5, depth) for w in tables)
    assert relative.count_params() - plain.count_params() == len(tables) * 5 * depth
