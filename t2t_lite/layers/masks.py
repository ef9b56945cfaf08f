"""Attention biases: 0 where attention is allowed, a large negative elsewhere.

Attention adds the bias to float32 logits. The bias itself may pass through
a Keras layer call under a float16 policy, which casts floating inputs to
float16: -1e9 would become -inf there (and a fully masked row NaN), so the
large negative is float16's most negative finite value, which every dtype
holds and whose exp is exactly 0 in float32.
"""

from keras import ops

from t2t_lite import sequences

NEG_INF = -65504.0  # float16's minimum


def padding_mask(ids):
    """1.0 at real tokens, 0.0 at PAD. [B, L] -> [B, L] float32."""
    return ops.cast(ops.not_equal(ids, sequences.PAD_ID), "float32")


def padding_bias(ids):
    """Bias hiding PAD keys. ids [B, S] -> [B, 1, 1, S]."""
    return nonpadding_bias(padding_mask(ids))


def nonpadding_bias(nonpadding):
    """Bias hiding keys where nonpadding [B, S] is 0 -> [B, 1, 1, S]."""
    bias = (1.0 - ops.cast(nonpadding, "float32")) * NEG_INF
    return bias[:, None, None, :]  # [B, 1, 1, S]


def causal_bias(length):
    """Bias hiding future positions. -> [1, 1, T, T]."""
    allowed = ops.tril(ops.ones((length, length)))  # lower triangle
    return ((1.0 - allowed) * NEG_INF)[None, None]  # [1, 1, T, T]
