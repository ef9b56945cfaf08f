"""The Universal Transformer's recurrence: one shared block, signals at every step."""

from collections.abc import Callable

import keras
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.layers import act, embedding, transformer_layers

STEP_SIGNALS = ("sinusoid", "learned")


class StepSignal(keras.layers.Layer):
    """The recurrence-step signal: a sinusoid of t (paper eq. 6-7) or a learned one."""

    def __init__(self, kind: str, max_steps: int, channels: int, **kwargs):
        super().__init__(**kwargs)
        if kind not in STEP_SIGNALS:
            raise ValueError(f"step_timing_signal_type must be one of {STEP_SIGNALS}, got {kind!r}")
        self.kind = kind
        self.max_steps = max_steps
        self.channels = channels

    def build(self, input_shape=None):
        if self.kind == "learned":
            # tensor2tensor's initialisation: N(0, C^-1/2), scaled by sqrt(C) when used.
            self.embeddings = self.add_weight(
                name="embeddings",
                shape=(self.max_steps, self.channels),
                initializer=keras.initializers.RandomNormal(stddev=self.channels**-0.5),
            )

    def signal(self, step: tf.Tensor | int) -> tf.Tensor:
        """Step t (1-based) -> float32 [1, 1, C]."""
        if not self.built:
            self.build()
        if self.kind == "sinusoid":
            return embedding.timing_signal(1, self.channels, start=step)  # [1, 1, C]
        row = tf.gather(tf.cast(self.embeddings, tf.float32), step - 1)  # [C]
        return tf.reshape(row * self.channels**0.5, [1, 1, self.channels])  # [1, 1, C]

    def call(self, step):
        return self.signal(step)


class UniversalStack(keras.layers.Layer):
    """Applies one block `num_steps` times, or under ACT, adding position + step signals.

    Each step is H_t = block(H_{t-1} + P_t), P_t = position signal + step
    signal (paper eq. 4-7); the block's norm placement decides post-norm (the
    paper) or pre-norm (tensor2tensor), the latter with a final norm here.
    The block's weights are shared by every step: the parameter count does not
    depend on the number of steps.
    """

    def __init__(
        self,
        block: keras.layers.Layer,
        num_steps: int,
        step_signal: StepSignal,
        norm_position: str,
        halting: act.AdaptiveComputationTime | None = None,
        final_norm_name: str = "final_norm",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.block = block
        self.num_steps = num_steps
        self.step_signal = step_signal
        self.halting = halting
        self.final_norm = (
            keras.layers.LayerNormalization(
                epsilon=transformer_layers.LAYER_NORM_EPSILON, name=final_norm_name
            )
            if norm_position == "pre"
            else None
        )

    def build(self, input_shape=None):
        # Sublayers build when first applied; there is no state of this layer's own.
        pass

    def _with_signals(
        self,
        positions: Callable[[tf.Tensor | int], tf.Tensor],
        block_step: Callable[[tf.Tensor, tf.Tensor | int], tf.Tensor],
    ) -> Callable[[tf.Tensor, tf.Tensor | int], tf.Tensor]:
        """step_fn(state, step) = block_step(state + P_t, step), P_t = positions(t) + step signal."""

        def step_fn(state: tf.Tensor, step: tf.Tensor | int) -> tf.Tensor:
            signal = positions(step) + self.step_signal.signal(step)  # [1, L, C]
            return block_step(state + tf.cast(signal, state.dtype), step)

        return step_fn

    def _positions(
        self, length: tf.Tensor, channels: int, position_start: tf.Tensor | int
    ) -> Callable[[tf.Tensor | int], tf.Tensor]:
        """Step t (1-based) -> the position signal [1, L, C].

        A scalar position_start is every step's first position; a vector
        [max_steps] gives step t its own, position_start[t - 1].
        """
        if isinstance(position_start, tf.Tensor) and position_start.shape.rank == 1:
            return lambda step: embedding.timing_signal(
                length, channels, start=tf.gather(position_start, step - 1)
            )
        fixed = embedding.timing_signal(length, channels, start=position_start)
        return lambda step: fixed

    def apply(
        self,
        x: tf.Tensor,
        block_fn: Callable[[tf.Tensor], tf.Tensor],
        position_start: tf.Tensor | int,
        nonpadding: tf.Tensor,
        training: bool = False,
    ) -> tuple[tf.Tensor, act.PonderStats | None]:
        """x [B, L, C]; block_fn applies self.block to [B, L, C]; nonpadding [B, L].

        position_start: the first position's index, one for every step (a
        scalar) or one per step (a vector [max_steps]).

        Returns the output [B, L, C] and, under ACT, the ponder statistics.
        """
        if not self.built:
            self.build()
        positions = self._positions(tf.shape(x)[1], x.shape[-1], position_start)
        step_fn = self._with_signals(positions, lambda state, step: block_fn(state))
        stats = None
        if self.halting is None:
            for step in range(1, self.num_steps + 1):
                x = step_fn(x, step)
        else:
            x, stats = self.halting.apply(x, step_fn, nonpadding, training=training)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x, stats

    @property
    def max_steps(self) -> int:
        return self.halting.max_steps if self.halting is not None else self.num_steps

    def initial_cache(self, encoded: tf.Tensor, max_length: int | None) -> dict:
        """A decoder stack's decoding state: per recurrence step "step_<t>", empty
        self-attention keys/values [B, H, T, D] (growing from T = 0 when
        max_length is None; weights are shared,
        activations are not); under sequences.STATIC_CACHE the shared block's
        cross-attention keys/values of `encoded` [B, H, S, D], computed once.
        """
        batch_size = tf.shape(encoded)[0]
        cache = {sequences.STATIC_CACHE: self.block.cross_memory(encoded)}
        for step in range(1, self.max_steps + 1):
            cache[f"step_{step}"] = self.block.initial_cache(batch_size, max_length, encoded.dtype)
        return cache

    def decode_step(
        self,
        x: tf.Tensor,
        index: tf.Tensor,
        cache: dict,
        encoder_bias: tf.Tensor,
        position: tf.Tensor | None = None,
    ) -> tuple[tf.Tensor, dict]:
        """The decoder stack at one position: x [B, 1, C] -> ([B, 1, C], cache with
        this stack's entries updated; other entries passed through).

        Each recurrence step t reads and writes its own entry "step_<t>".
        Under ACT every step's entry is written, so later positions find the
        keys and values of a halted position's frozen state; once every row
        has halted, a step only writes those (`DecoderBlock.frozen_step`)
        instead of applying the block, which is exact: halted rows' states
        and outputs no longer change. `position`: the step's position signal's
        positions when they are not `index` ([B, 1], coupled positions).
        """
        cross = cache[sequences.STATIC_CACHE]
        start = index if position is None else position  # a scalar, or [B, 1] coupled positions
        position = embedding.timing_signal(1, x.shape[-1], start=start)  # [1 or B, 1, C]

        def block_input(state: tf.Tensor, step: int) -> tf.Tensor:
            signal = position + self.step_signal.signal(step)  # [1, 1, C]
            return state + tf.cast(signal, state.dtype)

        def full(state: tf.Tensor, step: int) -> tuple[tf.Tensor, dict]:
            return self.block.decode_step(
                block_input(state, step), cache[f"step_{step}"], index, cross, encoder_bias
            )

        def frozen(state: tf.Tensor, step: int) -> dict:
            return self.block.frozen_step(
                block_input(state, step), cache[f"step_{step}"], index, cross, encoder_bias
            )

        new = dict(cache)
        if self.halting is None:
            for step in range(1, self.num_steps + 1):
                x, new[f"step_{step}"] = full(x, step)
        else:
            x, step_caches = self.halting.apply_cached(x, full, frozen)
            for step, step_cache in enumerate(step_caches, start=1):
                new[f"step_{step}"] = step_cache
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x, new
