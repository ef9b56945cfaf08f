"""Transition functions: the position-wise FFN and the depthwise-separable convolution.

Their forward passes are keras.ops (every Keras backend); the decoding
steps' state (`initial_step_state`, `step`) serves the TensorFlow search.
"""

import keras
import tensorflow as tf
from keras import ops

from t2t_lite.layers import dense, nesting, serialization

TRANSITIONS = ("fc", "sepconv")


@serialization.serializable
class FeedForward(keras.layers.Layer):
    """Position-wise FFN: Dense(filter, relu) -> dropout -> Dense(hidden)."""

    position_wise = True  # no history between decoding steps

    def __init__(self, hidden_size: int, filter_size: int, relu_dropout: float, **kwargs):
        super().__init__(**kwargs)
        self.inner = dense.Dense(filter_size, activation="relu", name="inner")
        self.outer = dense.Dense(hidden_size, name="outer")
        self.dropout = keras.layers.Dropout(relu_dropout)

    def build(self, input_shape):
        nesting.build_each(input_shape, self.inner)
        nesting.build_each((*tuple(input_shape)[:-1], self.inner.units), self.outer)

    def call(self, x, nonpadding=None, training=False):
        # `nonpadding` is accepted so both transitions share one signature;
        # a position-wise function needs no mask.
        return self.outer(self.dropout(self.inner(x), training=training))

    def initial_step_state(self, batch_size: tf.Tensor, dtype) -> tuple:
        """Position-wise: nothing to remember between decoding steps."""
        return ()

    def step(self, x: tf.Tensor, state: tuple) -> tuple[tf.Tensor, tuple]:
        """One decoding position x [B, 1, C] -> ([B, 1, C], state)."""
        return self(x), state


@serialization.serializable
class SeparableConvolution(keras.layers.Layer):
    """Depthwise-separable conv (relu, to filter_size) -> dropout -> separable conv.

    tensor2tensor's `sepconv` transition for the Universal Transformer:
    kernel widths 3 then 5. Padding positions are zeroed before each
    convolution so they never leak into real ones. `causal=True` (the decoder)
    pads on the left only, so position t sees positions <= t.
    """

    position_wise = False  # decoding steps carry the causal windows' history

    def __init__(
        self,
        hidden_size: int,
        filter_size: int,
        relu_dropout: float,
        causal: bool,
        kernel_sizes: tuple[int, int] = (3, 5),
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.causal = causal
        self.kernel_sizes = kernel_sizes
        self.inner_channels = hidden_size
        self.filter_size = filter_size
        self.inner = keras.layers.SeparableConv1D(
            filter_size, kernel_sizes[0], activation="relu", name="inner"
        )
        self.outer = keras.layers.SeparableConv1D(hidden_size, kernel_sizes[1], name="outer")
        self.dropout = keras.layers.Dropout(relu_dropout)

    def _pad(self, x, kernel_size: int):
        """x [B, L, C] -> [B, L + k - 1, C], so a 'valid' conv keeps length L."""
        if self.causal:
            return ops.pad(x, [[0, 0], [kernel_size - 1, 0], [0, 0]])
        left = (kernel_size - 1) // 2
        return ops.pad(x, [[0, 0], [left, kernel_size - 1 - left], [0, 0]])

    def build(self, input_shape):
        """Every weight from x's shape [B, L, C] (the padded lengths change no weight)."""
        batch, _, channels = tuple(input_shape)
        nesting.build_each((batch, None, channels), self.inner)
        nesting.build_each((batch, None, self.filter_size), self.outer)

    def call(self, x, nonpadding=None, training=False):
        """x [B, L, C], nonpadding [B, L, 1] (1 at real positions) or None."""
        if nonpadding is not None:
            x = x * ops.cast(nonpadding, x.dtype)
        y = self.inner(self._pad(x, self.kernel_sizes[0]))  # [B, L, filter]
        y = self.dropout(y, training=training)
        if nonpadding is not None:
            y = y * ops.cast(nonpadding, y.dtype)
        return self.outer(self._pad(y, self.kernel_sizes[1]))  # [B, L, C]

    def initial_step_state(self, batch_size: tf.Tensor, dtype) -> tuple:
        """The causal windows' history: zeros, as the left padding of `call`."""
        first, second = self.kernel_sizes
        return (
            tf.zeros([batch_size, first - 1, self.inner_channels], dtype),  # [B, k1-1, C]
            tf.zeros([batch_size, second - 1, self.filter_size], dtype),  # [B, k2-1, F]
        )

    def step(self, x: tf.Tensor, state: tuple) -> tuple[tf.Tensor, tuple]:
        """One causal decoding position x [B, 1, C] -> ([B, 1, C], state): exact to `call`."""
        if not self.causal:
            raise ValueError("step() needs a causal (decoder) separable convolution")
        first_window = tf.concat([state[0], x], axis=1)  # [B, k1, C]
        y = self.inner(first_window)  # [B, 1, F]
        second_window = tf.concat([state[1], y], axis=1)  # [B, k2, F]
        return self.outer(second_window), (first_window[:, 1:], second_window[:, 1:])


def make_transition(
    kind: str, hidden_size: int, filter_size: int, relu_dropout: float, causal: bool
) -> keras.layers.Layer:
    """The transition named `kind` ("fc" or "sepconv"), named "ffn" in checkpoints."""
    if kind == "fc":
        return FeedForward(hidden_size, filter_size, relu_dropout, name="ffn")
    if kind == "sepconv":
        return SeparableConvolution(hidden_size, filter_size, relu_dropout, causal, name="ffn")
    raise ValueError(f"transition must be one of {TRANSITIONS}, got {kind!r}")
