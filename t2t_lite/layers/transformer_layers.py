"""Residual wrapping and the encoder/decoder blocks and stacks."""

import dataclasses
from collections.abc import Callable

import keras
import tensorflow as tf
from keras import ops

from t2t_lite import sequences
from t2t_lite.layers import attention, masks, nesting, serialization, transition

NORM_POSITIONS = ("pre", "post")
LAYER_NORM_EPSILON = 1e-6


@serialization.serializable
class Residual(keras.layers.Layer):
    """Residual connection with dropout and layer norm around a sublayer.

    "post" is the paper's LayerNorm(x + Dropout(f(x))); "pre" is
    tensor2tensor's x + Dropout(f(LayerNorm(x))), which needs a final norm
    after the stack.

    It is applied through `apply`, not `__call__`: Keras only lets tensors be
    positional call arguments.
    """

    def __init__(self, norm_position: str, dropout: float, **kwargs):
        super().__init__(**kwargs)
        if norm_position not in NORM_POSITIONS:
            raise ValueError(
                f"norm_position must be one of {NORM_POSITIONS}, got {norm_position!r}"
            )
        self.norm_position = norm_position
        self.norm = keras.layers.LayerNormalization(epsilon=LAYER_NORM_EPSILON, name="norm")
        self.dropout = keras.layers.Dropout(dropout)

    def build(self, input_shape):
        nesting.build_each(input_shape, self.norm)

    def sublayer_input(self, x: tf.Tensor) -> tf.Tensor:
        """What `apply` feeds the sublayer: norm(x) (pre) or x (post)."""
        return self.norm(x) if self.norm_position == "pre" else x

    def apply(self, x, sublayer: Callable[[tf.Tensor], tf.Tensor], training=False):
        """Wraps `sublayer` (a callable, so this is not Keras's __call__, which
        would cast x to the layer's compute dtype: done here)."""
        x = ops.cast(x, self.compute_dtype)
        if self.norm_position == "pre":
            return x + self.dropout(sublayer(self.norm(x)), training=training)
        return self.norm(x + self.dropout(sublayer(x), training=training))


@serialization.config_dataclass
@dataclasses.dataclass(frozen=True)
class BlockConfig:
    """Plain arguments shared by encoder and decoder blocks."""

    hidden_size: int
    filter_size: int
    num_heads: int
    norm_position: str
    layer_prepostprocess_dropout: float
    attention_dropout: float
    relu_dropout: float
    # The transition function: "fc" (position-wise FFN) or "sepconv".
    transition: str = "fc"
    attention_key_channels: int = 0  # queries' and keys' width (0: hidden_size)
    attention_length_scale: int = 0  # scalable softmax's reference length (0: off)
    attention_length_scale_learned: bool = True  # False: max(1, log n / log L), fixed
    max_relative_position: int = 0  # self-attention's relative positions, clipped at k (0: off)

    def attention(self, name: str, relative: bool = False) -> attention.MultiHeadAttention:
        """An attention layer; `relative`: a self-attention, which takes the
        relative positions where they are on."""
        return attention.MultiHeadAttention(
            self.hidden_size,
            self.num_heads,
            self.attention_dropout,
            self.attention_key_channels,
            self.attention_length_scale,
            self.attention_length_scale_learned,
            self.max_relative_position if relative else 0,
            name=name,
        )

    def residual(self, name: str) -> Residual:
        return Residual(self.norm_position, self.layer_prepostprocess_dropout, name=name)

    def transition_layer(self, causal: bool) -> keras.layers.Layer:
        return transition.make_transition(
            self.transition, self.hidden_size, self.filter_size, self.relu_dropout, causal
        )


@serialization.serializable
class EncoderBlock(keras.layers.Layer):
    """Self-attention then the feed-forward network."""

    def __init__(self, config: BlockConfig, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True  # the output keeps the input's positions (and mask)
        self.self_attention = config.attention("self_attention", relative=True)
        self.self_attention_residual = config.residual("self_attention_residual")
        self.ffn = config.transition_layer(causal=False)
        self.ffn_residual = config.residual("ffn_residual")

    def build(self, input_shape):
        """Every sublayer's weights from x's shape [B, S, C], as keras-hub's blocks."""
        sublayers = [self.self_attention, self.self_attention_residual]
        nesting.build_each(input_shape, *sublayers, self.ffn, self.ffn_residual)

    def call(
        self,
        x,
        bias=None,
        nonpadding=None,
        training=False,
        mask=None,
        padding_mask=None,
        attention_mask=None,
    ):
        """x [B, S, C], bias [B, 1, 1, S] (or a 0/1 mask: masks.as_bias);
        padding_mask [B, S] (keras-hub's: 1 at real tokens), attention_mask
        [B, S, S] (1: the query may attend to the key) and Keras's implicit mask
        (`mask`, which Keras passes when x is the only tensor argument) hide
        what they hide; nonpadding [B, S, 1] is needed by "sepconv"."""
        bias = masks.combined(bias, mask, padding_mask, attention_mask)
        x = self.self_attention_residual.apply(
            x, lambda y: self.self_attention(y, y, bias, training=training), training=training
        )
        return self.ffn_residual.apply(
            x, lambda y: self.ffn(y, nonpadding, training=training), training=training
        )


@serialization.serializable
class DecoderBlock(keras.layers.Layer):
    """Causal self-attention, encoder-decoder attention, then the FFN.

    Without an encoder (`cross_attention=False`: a decoder-only language
    model) the block has no encoder-decoder attention and ignores `encoded`.
    """

    def __init__(self, config: BlockConfig, cross_attention: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.self_attention = config.attention("self_attention", relative=True)
        self.self_attention_residual = config.residual("self_attention_residual")
        self.has_cross_attention = cross_attention
        if cross_attention:
            self.cross_attention = config.attention("encdec_attention")
            self.cross_attention_residual = config.residual("encdec_attention_residual")
        self.ffn = config.transition_layer(causal=True)
        self.ffn_residual = config.residual("ffn_residual")

    def build(self, input_shape):
        """Every sublayer's weights from x's shape [B, T, C] (the memory it
        attends to has the same width C)."""
        sublayers = [self.self_attention, self.self_attention_residual, self.ffn, self.ffn_residual]
        if self.has_cross_attention:
            sublayers += [self.cross_attention, self.cross_attention_residual]
        nesting.build_each(input_shape, *sublayers)

    def call(
        self,
        x,
        encoded=None,
        self_bias=None,
        encoder_bias=None,
        training=False,
        mask=None,
        padding_mask=None,
        attention_mask=None,
    ):
        """x [B, T, C]; self_bias: the self-attention's (None: causal, the
        decoder's own; a bias given is taken as it is); encoder_bias over
        encoded [B, S, C] (or its 0/1 mask); padding_mask [B, T],
        attention_mask [B, T, T] and Keras's implicit mask hide what they hide,
        on top of the causal bias."""
        if self_bias is None:  # causal unless told otherwise, never by accident
            self_bias = masks.causal_bias(ops.shape(x)[1])
        self_bias = masks.combined(self_bias, mask, padding_mask, attention_mask)
        x = self.self_attention_residual.apply(
            x, lambda y: self.self_attention(y, y, self_bias, training=training), training=training
        )
        if self.has_cross_attention:
            x = self.cross_attention_residual.apply(
                x,
                lambda y: self.cross_attention(y, encoded, encoder_bias, training=training),
                training=training,
            )
        return self.ffn_residual.apply(
            x, lambda y: self.ffn(y, training=training), training=training
        )

    def cross_memory(self, encoded: tf.Tensor) -> dict:
        """The static cache entries for `encoded` [B, S, C]: its projected
        cross-attention keys/values [B, H, S, D] (none without an encoder)."""
        if not self.has_cross_attention:
            return {}
        cross_k, cross_v = self.cross_attention.project_memory(encoded)
        return {"cross_k": cross_k, "cross_v": cross_v}

    def initial_cache(self, batch_size: tf.Tensor, max_length: int | None, dtype) -> dict:
        """Empty self-attention keys/values ("self_attention": preallocated for
        max_length positions, or growing when it is None) and the transition's history."""
        attention_layer = self.self_attention
        kv = attention.empty_kv_cache(
            batch_size,
            attention_layer.num_heads,
            attention_layer.depth,
            max_length,
            dtype,
            attention_layer.key_depth,
        )
        return {"self_attention": kv, "ffn": self.ffn.initial_step_state(batch_size, dtype)}

    def decode_step(
        self,
        x: tf.Tensor,
        cache: dict,
        index: tf.Tensor,
        cross: dict,
        encoder_bias: tf.Tensor,
    ) -> tuple[tf.Tensor, dict]:
        """The block at one position: x [B, 1, C] -> ([B, 1, C], updated cache).

        Keys/values of this position are written at `index`; `cross` is
        `cross_memory`'s entries: the encoder's projected keys/values
        [B', H, S, D], computed once, where x's B rows are B' groups of
        B / B' hypotheses of one input each (beam search; B' = B otherwise),
        and encoder_bias is [B', 1, 1, S].
        """
        new = dict(cache)

        def self_attend(y):
            k, v = self.self_attention.project_memory(y)  # [B, H, 1, D] each
            kv = new["self_attention"] = attention.write_kv(cache["self_attention"], k, v, index)
            bias = attention.step_bias(index, tf.shape(kv.keys)[2])
            return self.self_attention.attend(y, kv.keys, kv.values, bias, query_start=index)

        def ffn(y):
            out, new["ffn"] = self.ffn.step(y, cache["ffn"])
            return out

        x = self.self_attention_residual.apply(x, self_attend)
        if self.has_cross_attention:
            x = self.cross_attention_residual.apply(
                x,
                lambda y: self.cross_attention.attend_grouped(
                    y, cross["cross_k"], cross["cross_v"], encoder_bias
                ),
            )
        return self.ffn_residual.apply(x, ffn), new

    def frozen_step(
        self,
        x: tf.Tensor,
        cache: dict,
        index: tf.Tensor,
        cross: dict,
        encoder_bias: tf.Tensor,
    ) -> dict:
        """The cache `decode_step` would leave for input x [B, 1, C], without its output.

        For a halted (frozen) state under ACT: later positions read only what
        it leaves in the cache. With the position-wise FFN that is the
        self-attention keys/values of x, two projections instead of the whole
        block; a transition with history (sepconv) needs the block's
        intermediate values, so the block runs.
        """
        if not self.ffn.position_wise:
            return self.decode_step(x, cache, index, cross, encoder_bias)[1]
        y = self.self_attention_residual.sublayer_input(x)
        k, v = self.self_attention.project_memory(y)  # [B, H, 1, D] each
        return {**cache, "self_attention": attention.write_kv(cache["self_attention"], k, v, index)}


@serialization.serializable
class Stack(keras.layers.Layer):
    """A tuple of blocks with a final layer norm in the pre-norm placement.

    Blocks are held in a tuple: Keras 3 tracks lists too, but
    tf.train.Checkpoint silently skips layers held in a Python list.
    """

    def __init__(self, blocks: tuple, norm_position: str, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.blocks = tuple(blocks)
        self.final_norm = (
            keras.layers.LayerNormalization(epsilon=LAYER_NORM_EPSILON, name="final_norm")
            if norm_position == "pre"
            else None
        )

    def build(self, input_shape):
        """Every block's weights (and the final norm's) from x's shape [B, L, C]."""
        nesting.build_each(input_shape, *self.blocks, self.final_norm)

    def call(
        self,
        x,
        bias=None,
        encoded=None,
        encoder_bias=None,
        training=False,
        signal=None,
        mask=None,
        padding_mask=None,
        attention_mask=None,
    ):
        """signal (e.g. the position signal [1 or B, L, C]), when given, is added
        to the input of every block after the first (the first's input has it).
        bias: the blocks' self-attention bias (a decoder stack's None: causal);
        padding_mask [B, L], attention_mask [B, L, L] and Keras's implicit
        mask hide what they hide."""
        if bias is None and isinstance(self.blocks[0], DecoderBlock):
            bias = masks.causal_bias(ops.shape(x)[1])
        bias = masks.combined(bias, mask, padding_mask, attention_mask)
        for i, block in enumerate(self.blocks):
            if signal is not None and i > 0:
                x = x + signal
            if encoded is None:
                x = block(x, bias, training=training)
            else:
                x = block(x, encoded, bias, encoder_bias, training=training)
        return self.final_norm(x) if self.final_norm is not None else x

    def initial_cache(self, encoded: tf.Tensor, max_length: int | None) -> dict:
        """A decoder stack's decoding state, entry "layer_<i>" per block: empty
        self-attention keys/values [B, H, T, D] (growing from T = 0 when
        max_length is None); under sequences.STATIC_CACHE,
        "layer_<i>" holds the cross-attention keys/values of `encoded`
        [B, H, S, D], computed once.
        """
        batch_size = tf.shape(encoded)[0]
        cache, static = {}, {}
        for i, block in enumerate(self.blocks):
            cache[f"layer_{i}"] = block.initial_cache(batch_size, max_length, encoded.dtype)
            static[f"layer_{i}"] = block.cross_memory(encoded)
        cache[sequences.STATIC_CACHE] = static
        return cache

    def decode_step(
        self,
        x: tf.Tensor,
        index: tf.Tensor,
        cache: dict,
        encoder_bias: tf.Tensor,
        position: tf.Tensor | None = None,
        signal: tf.Tensor | None = None,
    ) -> tuple[tf.Tensor, dict]:
        """The decoder stack at one position: x [B, 1, C] -> ([B, 1, C], cache with
        this stack's entries updated; other entries passed through). `position`
        is not read: the model's embedding added the timing signal; `signal`
        ([1 or B, 1, C]), when given, is added before every block after the first."""
        new = dict(cache)
        for i, block in enumerate(self.blocks):
            if signal is not None and i > 0:
                x = x + signal
            cross = cache[sequences.STATIC_CACHE][f"layer_{i}"]
            x, new[f"layer_{i}"] = block.decode_step(
                x, cache[f"layer_{i}"], index, cross, encoder_bias
            )
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x, new
