import math

import numpy as np
import tensorflow as tf

from t2t_lite.layers import attention, embedding, masks, transformer_layers


def test_padding_bias_by_hand():
    bias = masks.padding_bias(tf.constant([[5, 3, 0]]))
    assert bias.shape == (1, 1, 1, 3)
    np.testing.assert_array_equal(bias.numpy().ravel(), [0.0, 0.0, masks.NEG_INF])


def test_causal_bias_by_hand():
    bias = masks.causal_bias(3).numpy()[0, 0]
    n = masks.NEG_INF
    np.testing.assert_array_equal(bias, [[0, n, n], [0, 0, n], [0, 0, 0]])


def test_timing_signal_by_hand():
    # C=4: timescales 1 and 1e4 -> inv_timescales [1, 1e-4]; [sin | cos] halves.
    signal = embedding.timing_signal(3, 4).numpy()[0]
    for pos in range(3):
        expected = [math.sin(pos), math.sin(pos * 1e-4), math.cos(pos), math.cos(pos * 1e-4)]
        np.testing.assert_allclose(signal[pos], expected, atol=1e-6)


def test_timing_signal_start_offset_and_odd_channels():
    shifted = embedding.timing_signal(2, 5, start=3).numpy()[0]
    plain = embedding.timing_signal(5, 5).numpy()[0]
    np.testing.assert_allclose(shifted, plain[3:5], atol=1e-6)
    np.testing.assert_array_equal(shifted[:, 4], [0.0, 0.0])


def test_embedding_scales_by_sqrt_depth_and_zeroes_pad():
    layer = embedding.SharedEmbedding(5, 4)
    layer.build()
    layer.weights_matrix.assign(np.arange(20, dtype=np.float32).reshape(5, 4))
    out = layer.embed(tf.constant([[2, 0]])).numpy()[0]
    np.testing.assert_allclose(out[0], [16.0, 18.0, 20.0, 22.0])  # row 2 * sqrt(4)
    np.testing.assert_array_equal(out[1], [0.0] * 4)
    logits = layer.logits(tf.constant([[[1.0, 0.0, 0.0, 0.0]]]))
    np.testing.assert_allclose(logits.numpy().ravel(), [0, 4, 8, 12, 16])


def test_attention_ignores_masked_keys():
    tf.random.set_seed(0)
    layer = attention.MultiHeadAttention(8, 2, dropout=0.0)
    query = tf.random.normal([1, 2, 8])
    memory = tf.random.normal([1, 3, 8])
    other = tf.concat([memory[:, :2], tf.random.normal([1, 1, 8]) * 100], axis=1)
    bias = masks.padding_bias(tf.constant([[4, 4, 0]]))
    np.testing.assert_allclose(layer(query, memory, bias), layer(query, other, bias), atol=1e-5)


def test_attention_with_one_key_returns_its_projected_value():
    layer = attention.MultiHeadAttention(4, 2, dropout=0.0)
    memory = tf.constant([[[1.0, 2.0, 3.0, 4.0]]])
    out = layer(tf.ones([1, 2, 4]), memory, tf.zeros([1, 1, 1, 1]))
    expected = layer.output_projection(layer.value(memory))
    np.testing.assert_allclose(out.numpy(), np.repeat(expected.numpy(), 2, axis=1), atol=1e-6)


def test_post_norm_output_is_normalized_and_pre_norm_is_residual():
    x = tf.random.normal([2, 3, 8], seed=1)
    post = transformer_layers.Residual("post", 0.0)
    out = post.apply(x, lambda y: 2.0 * y)
    np.testing.assert_allclose(tf.reduce_mean(out, -1), tf.zeros([2, 3]), atol=1e-5)
    pre = transformer_layers.Residual("pre", 0.0)
    out = pre.apply(x, lambda y: tf.zeros_like(y))
    np.testing.assert_allclose(out, x)


def test_attention_with_narrower_keys_against_numpy():
    """attention_key_channels=4 of hidden 8, 2 heads: queries and keys of 2 per
    head, values of 4; scores scaled by 1/sqrt(2). Checked against numpy."""
    tf.random.set_seed(1)
    layer = attention.MultiHeadAttention(8, 2, dropout=0.0, key_channels=4)
    query, memory = tf.random.normal([1, 3, 8]), tf.random.normal([1, 5, 8])
    out = layer(query, memory, tf.zeros([1, 1, 1, 5])).numpy()
    assert layer.query.kernel.shape == (8, 4) and layer.key.kernel.shape == (8, 4)
    assert layer.value.kernel.shape == (8, 8) and layer.key_depth == 2 and layer.depth == 4
    q = query.numpy()[0] @ layer.query.kernel.numpy()  # [3, 4]
    k = memory.numpy()[0] @ layer.key.kernel.numpy()  # [5, 4]
    v = memory.numpy()[0] @ layer.value.kernel.numpy()  # [5, 8]
    heads = []
    for h in range(2):
        scores = q[:, 2 * h : 2 * h + 2] @ k[:, 2 * h : 2 * h + 2].T / math.sqrt(2)  # [3, 5]
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        heads.append(weights @ v[:, 4 * h : 4 * h + 4])  # [3, 4]
    expected = np.concatenate(heads, -1) @ layer.output_projection.kernel.numpy()
    np.testing.assert_allclose(out[0], expected, atol=1e-5)


def test_relative_attention_against_loops():
    """max_relative_position=2, 2 heads of 4, 6 positions: every distance past
    2 reads the vectors of +-2. Checked against a loop over queries and keys."""
    tf.random.set_seed(3)
    layer = attention.MultiHeadAttention(8, 2, dropout=0.0, max_relative_position=2)
    x = tf.random.normal([1, 6, 8])
    out = layer(x, x, tf.zeros([1, 1, 1, 6])).numpy()[0]
    assert layer.relative_keys.shape == (5, 4) and layer.relative_values.shape == (5, 4)
    a_k, a_v = layer.relative_keys.numpy(), layer.relative_values.numpy()
    q, k, v = (
        x.numpy()[0] @ dense.kernel.numpy() for dense in (layer.query, layer.key, layer.value)
    )
    heads = []
    for h in range(2):
        cols = slice(4 * h, 4 * h + 4)
        context = np.zeros([6, 4])
        for i in range(6):
            rows = [min(max(j - i, -2), 2) + 2 for j in range(6)]
            scores = np.array([q[i, cols] @ (k[j, cols] + a_k[rows[j]]) for j in range(6)]) / 2.0
            weights = np.exp(scores - scores.max())
            weights /= weights.sum()
            context[i] = sum(weights[j] * (v[j, cols] + a_v[rows[j]]) for j in range(6))
        heads.append(context)
    expected = np.concatenate(heads, -1) @ layer.output_projection.kernel.numpy()
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_relative_attention_is_the_same_at_every_offset():
    """Only distances count: five vectors read alone under a causal mask, or
    after three others that the mask hides from them, give the same outputs
    (absolute indices would differ by 3)."""
    tf.random.set_seed(4)
    layer = attention.MultiHeadAttention(8, 2, dropout=0.0, max_relative_position=3)
    x = tf.random.normal([1, 5, 8])
    longer = tf.concat([tf.random.normal([1, 3, 8]), x], axis=1)
    window = np.full([8, 8], masks.NEG_INF, np.float32)
    for i in range(3, 8):
        window[i, 3 : i + 1] = 0.0
    alone = layer(x, x, masks.causal_bias(5)).numpy()[0]
    inside = layer(longer, longer, tf.constant(window)[tf.newaxis, tf.newaxis]).numpy()[0, 3:]
    np.testing.assert_allclose(inside, alone, atol=1e-5)


def test_scalable_softmax_scales_logits_by_log_keys_seen_by_hand():
    """length_scale=4: s = 1/log 4. A query seeing 2 keys (the third masked)
    has its logits halved (log 2 / log 4): softmax([1, 0] / 2) =
    [e^0.5, 1] / (e^0.5 + 1); a query seeing 4 keys keeps them (scale 1); a
    causal bias counts each query's own keys (1 key: weight 1 whatever its logit)."""
    layer = attention.MultiHeadAttention(4, 1, dropout=0.0, length_scale=4)
    assert [w.name for w in layer.trainable_weights] == ["length_scale"]
    np.testing.assert_allclose(layer.length_scale.numpy(), [1 / math.log(4)], rtol=1e-6)
    masked = layer.softmax(tf.constant([[[[1.0, 0.0, 5.0]]]]), masks.padding_bias([[4, 4, 0]]))
    e = math.exp(0.5)
    np.testing.assert_allclose(masked.numpy().ravel(), [e / (e + 1), 1 / (e + 1), 0], atol=1e-6)
    logits = tf.constant([[[[0.3, -1.2, 2.0, 0.7]]]])
    four = layer.softmax(logits, tf.zeros([1, 1, 1, 4]))
    np.testing.assert_allclose(four, tf.nn.softmax(logits), atol=1e-6)
    causal = layer.softmax(tf.fill([1, 1, 2, 2], 3.0), masks.causal_bias(2)).numpy()[0, 0]
    np.testing.assert_allclose(causal, [[1.0, 0.0], [0.5, 0.5]], atol=1e-6)


def test_fixed_log_length_scaling_by_hand():
    """length_scale=4, not learned: no weight; the factor is max(1, log n / log 4):
    1 for 2 and 4 keys (the plain softmax), 2 for 16 keys."""
    layer = attention.MultiHeadAttention(
        4, 1, dropout=0.0, length_scale=4, length_scale_learned=False
    )
    assert layer.trainable_weights == [] and layer.length_scale is None
    two = tf.constant([[[[1.0, 0.0]]]])
    np.testing.assert_allclose(
        layer.softmax(two, tf.zeros([1, 1, 1, 2])), tf.nn.softmax(two), atol=1e-6
    )
    sixteen = tf.constant([[[[1.0] + [0.0] * 15]]])
    e = math.exp(2.0)  # the first logit doubled
    weights = layer.softmax(sixteen, tf.zeros([1, 1, 1, 16])).numpy().ravel()
    np.testing.assert_allclose(weights[:2], [e / (e + 15), 1 / (e + 15)], atol=1e-6)


def test_scalable_softmax_scale_is_trained():
    """The loss reaches s_h: a nonzero gradient for every head's scale."""
    tf.random.set_seed(3)
    layer = attention.MultiHeadAttention(8, 2, dropout=0.0, length_scale=3)
    query, memory = tf.random.normal([2, 3, 8]), tf.random.normal([2, 6, 8])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(query, memory, tf.zeros([2, 1, 1, 6])) ** 2)
    grad = tape.gradient(loss, layer.length_scale)
    assert grad.shape == (2,) and np.all(np.abs(grad.numpy()) > 0)


def test_scalable_softmax_is_off_by_default_and_changes_nothing_at_its_length():
    """Off: no weight of its own. On, at n = L keys: the same output as off."""
    tf.random.set_seed(2)
    off = attention.MultiHeadAttention(8, 2, dropout=0.0)
    on = attention.MultiHeadAttention(8, 2, dropout=0.0, length_scale=5)
    query, memory = tf.random.normal([1, 2, 8]), tf.random.normal([1, 5, 8])
    bias = tf.zeros([1, 1, 1, 5])
    off(query, memory, bias), on(query, memory, bias)  # build
    assert off.length_scale is None and len(off.weights) == 4 and len(on.weights) == 5
    for name in ("query", "key", "value", "output_projection"):
        getattr(on, name).kernel.assign(getattr(off, name).kernel)
    np.testing.assert_allclose(on(query, memory, bias), off(query, memory, bias), atol=1e-5)


def test_learned_positions_read_rows_and_clamp_past_the_table():
    table = embedding.LearnedPositions(4, 3)
    table.build()
    rows = table.table.numpy()
    np.testing.assert_array_equal(table.signal(3, start=2)[0].numpy(), rows[[2, 3, 3]])
    explicit = tf.constant([[0, 5], [1, 1]])  # coupled positions, per row
    np.testing.assert_array_equal(table.signal(2, start=explicit).numpy(), rows[[[0, 3], [1, 1]]])
