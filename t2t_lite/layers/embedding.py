"""Shared embedding/softmax matrix; the sinusoidal timing signal and learned positions."""

import math

import keras
from keras import ops

from t2t_lite.layers import einsum, masks, serialization


def timing_signal(
    length,
    channels: int,
    start=0,
    min_timescale: float = 1.0,
    max_timescale: float = 1.0e4,
):
    """Sinusoids of positions start..start+length-1 -> [1, L, C] float32.

    Like tensor2tensor, the channels are [sin(all timescales), cos(all
    timescales)] concatenated, not interleaved; an odd C gets a zero column.
    A start of shape [B, L] gives every row its own positions explicitly
    (coupled positions) -> [B, L, C]; length is then L.
    """
    return timing_signal_at(positions_of(length, start), channels, min_timescale, max_timescale)


def positions_of(length, start=0):
    """Positions start..start+length-1 -> [1, L]; a [B, L] start is taken as each
    row's explicit positions (coupled positions) -> [B, L]."""
    if ops.is_tensor(start) and len(start.shape) == 2:
        return start  # [B, L]
    return (ops.arange(length, dtype="int32") + start)[None]  # [1, L]


def timing_signal_at(
    positions,
    channels: int,
    min_timescale: float = 1.0,
    max_timescale: float = 1.0e4,
):
    """Sinusoids of explicit positions [B, L] (any integers) -> [B, L, C] float32."""
    positions = ops.cast(positions, "float32")
    num_timescales = channels // 2
    log_increment = math.log(max_timescale / min_timescale) / max(num_timescales - 1, 1)
    inv_timescales = min_timescale * ops.exp(
        ops.arange(num_timescales, dtype="float32") * -log_increment
    )
    scaled = positions[..., None] * inv_timescales  # [B, L, C/2]
    signal = ops.concatenate([ops.sin(scaled), ops.cos(scaled)], axis=-1)  # [B, L, 2*(C/2)]
    if channels % 2:
        signal = ops.pad(signal, [[0, 0], [0, 0], [0, 1]])  # [B, L, C]
    return signal


@serialization.serializable
class LearnedPositions(keras.layers.Layer):
    """A learned [P, C] table of position vectors (the paper's Table 3 (E)), read
    like `timing_signal`: positions start..start+length-1 -> [1, L, C], or a
    [B, L] start of explicit positions -> [B, L, C]. A position past the table
    reads its last row (a position never trained has no vector of its own).
    Initialized N(0, 0.5): the sinusoids' variance per channel.
    """

    def __init__(self, max_positions: int, hidden_size: int, **kwargs):
        super().__init__(**kwargs)
        self.max_positions, self.hidden_size = max_positions, hidden_size

    def build(self, input_shape=None):
        self.table = self.add_weight(
            name="table",
            shape=(self.max_positions, self.hidden_size),
            initializer=keras.initializers.RandomNormal(stddev=0.5**0.5),
        )

    def signal(self, length, start=0):
        if not self.built:
            self.build()
        positions = ops.clip(positions_of(length, start), 0, self.max_positions - 1)
        return ops.take(ops.cast(self.table, "float32"), positions, axis=0)  # [1 or B, L, C]


@serialization.serializable
class SharedEmbedding(keras.layers.Layer):
    """One [V, C] matrix for source and target embeddings and the softmax."""

    def __init__(self, vocab_size: int, hidden_size: int, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size

    def build(self, input_shape=None):
        self.weights_matrix = self.add_weight(
            name="weights",
            shape=(self.vocab_size, self.hidden_size),
            initializer=keras.initializers.RandomNormal(stddev=self.hidden_size**-0.5),
        )

    def embed(self, ids):
        """ids [B, L] -> [B, L, C], scaled by sqrt(C), zero at PAD."""
        if not self.built:
            self.build()
        emb = ops.take(ops.cast(self.weights_matrix, self.compute_dtype), ids, axis=0)
        mask = ops.cast(masks.padding_mask(ids), self.compute_dtype)[..., None]
        return emb * (self.hidden_size**0.5) * mask  # [B, L, C]

    def logits(self, x, kernel=None):
        """x [B, T, C] -> float32 logits [B, T, V]; `kernel` is `softmax_kernel()`
        computed once, for loops that take the logits at every step."""
        if not self.built:
            self.build()
        # In float32 under mixed precision too: the softmax's inputs keep full precision.
        x = ops.cast(x, "float32")
        if kernel is not None:
            return einsum.einsum("btc,cv->btv", x, kernel)  # [B, T, V]
        return einsum.einsum("btc,vc->btv", x, ops.cast(self.weights_matrix, "float32"))

    def softmax_kernel(self):
        """The float32 matrix transposed, [C, V]: with V contiguous, the decoding
        step's product runs 1.6-1.8x faster on AVX2 CPUs (docs/benchmarks.md)."""
        if not self.built:
            self.build()
        return ops.transpose(ops.cast(self.weights_matrix, "float32"))  # [C, V]

    def call(self, ids):
        return self.embed(ids)
