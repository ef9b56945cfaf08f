"""Multi-head scaled dot-product attention (paper section 3.2).

The layer's forward pass is keras.ops (every Keras backend); the decoding
caches below it (KVCache, write_kv, step_bias) and `attend_grouped` serve
t2t_lite's TensorFlow search only.
"""

import contextlib
import math
from collections.abc import Iterator
from typing import NamedTuple

import keras
import tensorflow as tf
from keras import ops

from t2t_lite.layers import dense, einsum, masks, nesting, serialization


@contextlib.contextmanager
def recording(model: keras.layers.Layer) -> Iterator[list[tuple[str, tf.Tensor]]]:
    """Collects the attention weights `model`'s attention layers compute inside the block.

    Yields a list that fills with (layer name, float32 weights [B, H, T, S]),
    in call order: a shared UT block appears once per recurrence step. The
    weights are the softmax the layer itself used (before attention dropout).
    The recorder lives on the model's own layers (no module state): other
    models record nothing, and after the block this one records nothing
    either. Meant for eager calls.
    """
    records: list[tuple[str, tf.Tensor]] = []
    layers = [
        layer
        for layer in nesting.nested(model, include_self=True)  # every nested layer, once
        if isinstance(layer, MultiHeadAttention)
    ]
    previous = [layer.recorder for layer in layers]  # an enclosing recording, if any
    for layer in layers:
        layer.recorder = records.append
    try:
        yield records
    finally:
        for layer, recorder in zip(layers, previous, strict=True):
            layer.recorder = recorder


@serialization.serializable
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention with bias-free projections, as in tensor2tensor.

    key_channels: the query and key projections' width (tensor2tensor's
    attention_key_channels; 0: hidden_size), so each head compares queries and
    keys of key_channels / num_heads (`key_depth`) while its values keep
    hidden_size / num_heads (`depth`): the paper's Table 3 (B) varies d_k alone.

    max_relative_position: k > 0 adds relative positions (Shaw et al. 2018,
    tensor2tensor's dot_product_relative): one learned vector per distance
    j - i clipped to [-k, k], shared by the heads, added to every key j that
    query i compares (logits) and to every value it reads (outputs); 0: off.
    For self-attention, where query and key positions are one sequence's.

    length_scale: L > 1 turns on the scalable softmax (Nakanishi 2025): each
    head's logits times s_h * log(n), n the keys its query sees under the bias
    and s_h a learned scalar initialised to 1 / log(L); 0: off. With
    length_scale_learned=False the factor is max(1, log(n) / log(L)), fixed:
    the plain softmax up to L keys, sharper past them (log-length scaling).
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        dropout: float,
        key_channels: int = 0,
        length_scale: int = 0,
        length_scale_learned: bool = True,
        max_relative_position: int = 0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.supports_masking = True  # one output per query: the query's mask holds
        key_channels = key_channels or hidden_size
        for name, channels in (("hidden_size", hidden_size), ("key_channels", key_channels)):
            if channels % num_heads:
                raise ValueError(f"num_heads={num_heads} does not divide {name}={channels}")
        self.num_heads = num_heads
        self.depth = hidden_size // num_heads
        self.key_depth = key_channels // num_heads
        options = {"use_bias": False, "kernel_initializer": "glorot_uniform"}
        self.query = dense.Dense(key_channels, name="q", **options)
        self.key = dense.Dense(key_channels, name="k", **options)
        self.value = dense.Dense(hidden_size, name="v", **options)
        self.output_projection = dense.Dense(hidden_size, name="output", **options)
        self.dropout = keras.layers.Dropout(dropout)
        # Set by `recording` for the length of its block: called with (name, weights).
        self.recorder = None
        self.max_relative_position = max_relative_position
        if max_relative_position:
            distances = 2 * max_relative_position + 1
            self.relative_keys = self.add_weight(
                name="relative_keys",
                shape=(distances, self.key_depth),
                initializer="glorot_uniform",
            )
            self.relative_values = self.add_weight(
                name="relative_values", shape=(distances, self.depth), initializer="glorot_uniform"
            )
        self.length_scale = None  # the learned s_h, [H]
        self.fixed_length = 0 if length_scale_learned else length_scale
        if length_scale and length_scale_learned:
            self.length_scale = self.add_weight(
                name="length_scale",
                shape=(num_heads,),
                initializer=keras.initializers.Constant(1.0 / math.log(length_scale)),
                dtype="float32",
            )

    def build(self, input_shape):
        """Every weight from the queries' shape [..., C] (keys and values are
        read from a memory of the same width C, as in every model here)."""
        channels = tuple(input_shape)[:-1]
        nesting.build_each(input_shape, self.query, self.key, self.value)
        nesting.build_each((*channels, self.num_heads * self.depth), self.output_projection)

    def split_heads(self, x, depth: int | None = None):
        """[B, L, H * D] -> [B, H, L, D] (D: `depth`, default the values' depth)."""
        shape = ops.shape(x)
        x = ops.reshape(
            x, (shape[0], shape[1], self.num_heads, depth or self.depth)
        )  # [B, L, H, D]
        return ops.transpose(x, (0, 2, 1, 3))  # [B, H, L, D]

    def merge_heads(self, x):
        """[B, H, L, D] -> [B, L, C]."""
        x = ops.transpose(x, (0, 2, 1, 3))  # [B, L, H, D]
        shape = ops.shape(x)
        return ops.reshape(x, (shape[0], shape[1], self.num_heads * self.depth))  # [B, L, C]

    def project_memory(self, memory):
        """Keys [B, H, S, Dk] and values [B, H, S, D] of `memory` [B, S, C]."""
        keys = self.split_heads(self.key(memory), self.key_depth)
        return keys, self.split_heads(self.value(memory))

    def softmax(self, logits, bias):
        """float32 attention weights of logits [B, H, T, S] under an additive bias
        (broadcast to them), the scalable softmax's scale applied where it is on."""
        logits, bias = ops.cast(logits, "float32"), ops.cast(bias, "float32")
        if self.length_scale is not None or self.fixed_length:
            # The bias's own batch and query axes (the key axis broadcast to S),
            # not a copy of the logits' [B, H, T, S].
            seen = ops.cast(bias > masks.NEG_INF / 2, "float32") + ops.zeros_like(
                logits[:1, :1, :1]
            )
            keys = ops.maximum(ops.sum(seen, -1, keepdims=True), 1.0)  # [B|1, 1, T|1, 1]
            log_keys = ops.log(keys)
            if self.fixed_length:
                logits = logits * ops.maximum(1.0, log_keys / math.log(self.fixed_length))
            else:
                scale = ops.reshape(self.length_scale, (1, -1, 1, 1))  # [1, H, 1, 1]
                logits = logits * scale * log_keys
        return ops.softmax(logits + bias, axis=-1)

    def attend(self, query, keys, values, bias, training: bool = False, query_start=0):
        """query [B, T, C] over projected keys/values [B, H, S, D] -> [B, T, C].
        query_start: the first query's position among the keys' (relative
        positions only: a decoding step's index)."""
        q = self.split_heads(self.query(query), self.key_depth) * (
            self.key_depth**-0.5
        )  # [B, H, T, Dk]
        logits = einsum.einsum("bhtd,bhsd->bhts", q, keys)  # [B, H, T, S]
        distances = None
        if self.max_relative_position:
            distances = self.distances(query_start, ops.shape(q)[2], ops.shape(keys)[2], q.dtype)
            by_distance = einsum.einsum("bhtd,rd->bhtr", q, ops.cast(self.relative_keys, q.dtype))
            logits = logits + einsum.einsum(
                "bhtr,tsr->bhts", by_distance, distances
            )  # [B, H, T, S]
        # Softmax in float32: the bias and the normalisation stay exact under
        # mixed precision.
        weights = self.softmax(logits, bias)
        if self.recorder is not None:  # a Python check: traced graphs record nothing
            self.recorder((self.name, weights))
        weights = self.dropout(ops.cast(weights, values.dtype), training=training)
        context = einsum.einsum("bhts,bhsd->bhtd", weights, values)  # [B, H, T, D]
        if distances is not None:
            per_distance = einsum.einsum("bhts,tsr->bhtr", weights, distances)  # [B, H, T, 2k+1]
            relative_values = ops.cast(self.relative_values, values.dtype)
            context = context + einsum.einsum("bhtr,rd->bhtd", per_distance, relative_values)
        return self.output_projection(self.merge_heads(context))

    def distances(self, query_start, queries, keys, dtype):
        """One-hot clipped distances [T, S, 2k+1]: row k + clip(j - i, -k, k) for
        query i = query_start + t and key j = s."""
        k = self.max_relative_position
        query_positions = ops.cast(query_start, "int32") + ops.arange(queries, dtype="int32")
        offsets = ops.arange(keys, dtype="int32")[None, :] - query_positions[:, None]  # [T, S]
        return ops.one_hot(ops.clip(offsets, -k, k) + k, 2 * k + 1, dtype=dtype)

    def attend_grouped(
        self, query: tf.Tensor, keys: tf.Tensor, values: tf.Tensor, bias: tf.Tensor
    ) -> tf.Tensor:
        """One position per row, query [N, 1, C], over keys/values [B, H, S, D]
        shared by consecutive groups of N / B rows (a beam search's hypotheses
        of one input): each group's queries attend together, so the memory is
        read once per input, not once per hypothesis. bias [B, 1, 1, S].
        -> [N, 1, C]. (Inference only: no dropout, nothing recorded; a memory
        has no relative positions.)"""
        if self.max_relative_position:
            raise ValueError(
                "attend_grouped reads a memory: relative positions are self-attention's"
            )
        shape = tf.shape(query)
        rows, group = tf.shape(keys)[0], shape[0] // tf.shape(keys)[0]
        q = self.query(query) * (self.key_depth**-0.5)  # [N, 1, H * Dk]
        q = tf.reshape(q, [rows, group, self.num_heads, self.key_depth])  # [B, G, H, Dk]
        q = tf.transpose(q, [0, 2, 1, 3])  # [B, H, G, D]
        logits = tf.einsum("bhgd,bhsd->bhgs", q, keys)  # [B, H, G, S]
        weights = self.softmax(logits, bias)
        context = tf.einsum("bhgs,bhsd->bhgd", tf.cast(weights, values.dtype), values)
        context = tf.transpose(context, [0, 2, 1, 3])  # [B, G, H, D]
        context = tf.reshape(context, [shape[0], 1, self.num_heads * self.depth])  # [N, 1, C]
        return self.output_projection(context)

    def call(self, query, memory, bias=None, training=False, memory_mask=None):
        """query [B, T, C] attends to memory [B, S, C] under `bias`
        (masks.as_bias: an additive bias, or a 0/1 bool or int mask);
        memory_mask [B, S] (Keras's implicit mask of memory, which it passes
        here) hides padded keys."""
        bias = masks.combined(bias, memory_mask)
        keys, values = self.project_memory(memory)
        return self.attend(query, keys, values, bias, training=training)


class KVCache(NamedTuple):
    """Self-attention keys and values of decoded positions, [B, H, T, D] each,
    preallocated for T positions and written at each position's index. Shapes
    never change (XLA needs that); attention reads all T (masked)."""

    keys: tf.Tensor
    values: tf.Tensor


class GrowingKVCache(NamedTuple):
    """Keys and values [B, H, t, D] of exactly the t positions decoded so far:
    each step appends one, so attention, beam reordering and the write cost
    the prefix, not the maximum length. The time axis changes in a loop, so
    loops over it need shape invariants (`shape_invariants`); not for XLA."""

    keys: tf.Tensor
    values: tf.Tensor


def empty_kv_cache(
    batch_size: tf.Tensor,
    num_heads: int,
    depth: int,
    max_length: int | None,
    dtype,
    key_depth: int | None = None,
) -> KVCache | GrowingKVCache:
    """A growing cache when max_length is None, else one preallocated for max_length
    (keys of key_depth per head, default depth; values of depth)."""
    length = 0 if max_length is None else max_length
    kind = GrowingKVCache if max_length is None else KVCache
    # Two tensors: the keys and values must not share a buffer.
    return kind(
        *(tf.zeros([batch_size, num_heads, length, d], dtype) for d in (key_depth or depth, depth))
    )


def write_kv(
    cache: KVCache | GrowingKVCache, keys: tf.Tensor, values: tf.Tensor, index: tf.Tensor | int
) -> KVCache | GrowingKVCache:
    """The cache with keys/values [B, H, 1, D] of position `index` written (or appended)."""
    if isinstance(cache, GrowingKVCache):
        return GrowingKVCache(
            tf.concat([cache.keys, keys], axis=2), tf.concat([cache.values, values], axis=2)
        )
    return KVCache(write_at(cache.keys, keys, index), write_at(cache.values, values, index))


def shape_invariants(structure):
    """Loop shape invariants for a nest of tensors: a GrowingKVCache's time axis is free."""
    if isinstance(structure, GrowingKVCache):
        return GrowingKVCache(
            *(tf.TensorShape([t.shape[0], t.shape[1], None, t.shape[3]]) for t in structure)
        )
    if isinstance(structure, dict):
        return {key: shape_invariants(value) for key, value in structure.items()}
    if isinstance(structure, tuple | list):
        items = [shape_invariants(item) for item in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else type(structure)(items)
    return tf.TensorShape(structure.shape)


def write_at(cache: tf.Tensor, new: tf.Tensor, index: tf.Tensor | int) -> tf.Tensor:
    """Writes new [B, H, 1, D] at position `index` of cache [B, H, T, D] (fixed shape).

    A scatter of the B * H vectors, so the cache keeps its shape (no shape
    invariants, XLA-friendly) and nothing else of it is rewritten: where the
    runtime can reuse the buffer the update is in place; a one-hot blend
    rewrote the whole cache three times per step.
    """
    shape = tf.shape(cache)
    rows, heads = tf.meshgrid(tf.range(shape[0]), tf.range(shape[1]), indexing="ij")  # [B, H]
    positions = tf.fill(tf.shape(rows), tf.cast(index, tf.int32))  # [B, H]
    indices = tf.stack([rows, heads, positions], axis=-1)  # [B, H, 3]
    return tf.tensor_scatter_nd_update(cache, indices, new[:, :, 0, :])


def step_bias(index: tf.Tensor | int, length: tf.Tensor | int) -> tf.Tensor:
    """Bias letting the position at `index` see cache positions 0..index. -> [1, 1, 1, T].

    (All of a growing cache, which holds exactly positions 0..index.)
    """
    visible = tf.range(length) <= index  # [T]
    return tf.where(visible, 0.0, masks.NEG_INF)[tf.newaxis, tf.newaxis, tf.newaxis]
