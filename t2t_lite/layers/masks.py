"""Attention biases: 0 where attention is allowed, a large negative elsewhere.

Biases are float32: attention logits are promoted to float32 before the bias is
added, so -1e9 stays finite under float16 and bfloat16 compute.
"""

import tensorflow as tf

PAD_ID = 0
NEG_INF = -1e9


def padding_mask(ids: tf.Tensor) -> tf.Tensor:
    """1.0 at real tokens, 0.0 at PAD. [B, L] -> [B, L] float32."""
    return tf.cast(tf.not_equal(ids, PAD_ID), tf.float32)


def padding_bias(ids: tf.Tensor) -> tf.Tensor:
    """Bias hiding PAD keys. ids [B, S] -> [B, 1, 1, S]."""
    bias = (1.0 - padding_mask(ids)) * NEG_INF
    return bias[:, tf.newaxis, tf.newaxis, :]  # [B, 1, 1, S]


def causal_bias(length: tf.Tensor | int) -> tf.Tensor:
    """Bias hiding future positions. -> [1, 1, T, T]."""
    allowed = tf.linalg.band_part(tf.ones([length, length]), -1, 0)  # lower triangle
    return ((1.0 - allowed) * NEG_INF)[tf.newaxis, tf.newaxis]  # [1, 1, T, T]
