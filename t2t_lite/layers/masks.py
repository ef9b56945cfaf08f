"""Attention biases: 0 where attention is allowed, a large negative elsewhere.

Attention adds the bias to float32 logits. The bias itself may pass through
a Keras layer call under a float16 policy, which casts floating inputs to
float16: -1e9 would become -inf there (and a fully masked row NaN), so the
large negative is float16's most negative finite value, which every dtype
holds and whose exp is exactly 0 in float32.

The layers take what a Keras user brings too (`as_bias`, `combined`):
a keras-hub 0/1 mask of a bool or integer dtype (`padding_mask` [B, S],
`attention_mask` [B, T, S]: 1 attends) is read as the bias it means, and
Keras's implicit mask (an `Embedding(mask_zero=True)` upstream) hides the
padded keys; a floating bias is additive, as it always was.
"""

import weakref

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


def as_bias(bias):
    """An attention bias from what a caller gives: None (attend to every key),
    a floating additive bias as it is, or a 0/1 mask of a bool or integer
    dtype (1 attends): [B, S] (padding) -> [B, 1, 1, S], [B, T, S] -> [B, 1, T, S].
    Refused (ValueError): a mask of another rank, and, where the values can be
    read (eager execution), a floating bias with a positive value, which is
    a 0/1 mask read as a bias (it would add 1 where it means "attend")."""
    if bias is None:
        return ops.zeros((1, 1, 1, 1))
    if _CHECKED.get(id(bias)) is bias:  # read before (a stack's, then its blocks')
        return bias
    dtype = backend_dtype(bias)
    if dtype.startswith(("float", "bfloat")):
        if _readable(bias) and float(ops.max(ops.cast(bias, "float32"))) > 0.0:
            raise ValueError(
                "a floating attention bias is added to the logits (0 attends, a large negative "
                "hides); this one holds positive values, as a 0/1 mask does: pass a mask as bool "
                "or int (1 attends), or masks.nonpadding_bias(mask)"
            )
        return _checked(bias)
    if dtype != "bool" and "int" not in dtype:
        raise ValueError(f"an attention bias or mask must be float, bool or int, not {dtype}")
    rank = len(ops.shape(bias))
    if rank == 2:
        return nonpadding_bias(bias)
    if rank == 3:
        return ((1.0 - ops.cast(bias, "float32")) * NEG_INF)[:, None]  # [B, 1, T, S]
    raise ValueError(
        f"a {dtype} attention mask must be [batch, keys] (padding) or [batch, queries, keys], "
        f"not of rank {rank}"
    )


def combined(bias, *key_masks):
    """as_bias(bias) with each given mask ([B, S], True or 1 at real keys; None:
    none) hiding its padded keys. The minimum, not the sum: a mask met twice
    (a block's and its attention's) hides as once, and stays finite in float16."""
    bias = as_bias(bias)
    for mask in key_masks:
        if mask is not None:
            bias = _checked(ops.minimum(ops.cast(bias, "float32"), as_bias(mask)))
    return bias


# The floating biases as_bias has read (or made from those it read), so that a
# bias handed down a stack to its blocks and their attention is read once, at
# the stack's entry: eagerly, each read is a reduction and a wait for its value.
_CHECKED: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


def _checked(bias):
    if type(bias).__module__.startswith("numpy"):  # mutable: read each time
        return bias
    try:
        _CHECKED[id(bias)] = bias
    except TypeError:  # a value that cannot be weakly referenced: read again next time
        pass
    return bias


def backend_dtype(x) -> str:
    """x's dtype as Keras names it ("float32", "bool", "int32")."""
    import keras

    return keras.backend.standardize_dtype(x.dtype)


def _readable(x) -> bool:
    """Whether x's values can be read now (eager, not traced)."""
    import tensorflow as tf

    if isinstance(x, tf.Tensor):
        return tf.executing_eagerly() and not isinstance(x, tf.__internal__.SymbolicTensor)
    return hasattr(x, "__array__") and not type(x).__name__.endswith("Tracer")
