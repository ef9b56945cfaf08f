"""The Universal Transformer's recurrence: one shared block, signals at every step.

The forward and training pass (`UniversalStack.apply`) is keras.ops, so it
runs on every Keras backend; on TensorFlow a depth that varies per row runs
as a `tf.while_loop` that stops at the batch's deepest row, elsewhere as a
Python loop of `max_steps` masked steps (the same outputs: a row past its
steps keeps its state). The cached decoding steps serve the TensorFlow search.
"""

import dataclasses
from collections.abc import Callable

import keras
import tensorflow as tf
from keras import ops

from t2t_lite import sequences
from t2t_lite.layers import act, embedding, nesting, serialization, transformer_layers

STEP_SIGNALS = ("sinusoid", "learned", "none")


@serialization.serializable
class StepSignal(keras.layers.Layer):
    """The recurrence-step signal: a sinusoid of t (paper eq. 6-7), a learned one,
    or none (every step the same function of its input, as in looped
    Transformers: the only setting in which steps past those seen in training
    apply the block that was trained, not one shifted by an unseen signal)."""

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

    def signal(self, step):
        """Step t (1-based) -> float32 [1, 1, C]."""
        if not self.built:
            self.build()
        if self.kind == "sinusoid":
            return embedding.timing_signal(1, self.channels, start=step)  # [1, 1, C]
        if self.kind == "none":
            return ops.zeros((1, 1, self.channels))
        row = ops.take(ops.cast(self.embeddings, "float32"), step - 1, axis=0)  # [C]
        return ops.reshape(row * self.channels**0.5, (1, 1, self.channels))  # [1, 1, C]

    def call(self, step):
        return self.signal(step)


@serialization.config_dataclass
@dataclasses.dataclass(frozen=True)
class LengthDepth:
    """Steps that grow with the input: ceil(per_symbol * n) + offset for a source
    of n encoder positions, at least 1 and at most `cap` (the stack's max_steps).

    In training each row may move by a uniform draw in [-random, random]
    (`jitter`), so one model learns to run at many depths.
    """

    per_symbol: float
    offset: int
    random: int
    cap: int
    # Counts per position (`position_steps`), not per row; with them, position
    # i runs only the last `window` of its steps, its state its input until
    # then (0: all of them).
    by_position: bool = False
    window: int = 0

    def steps(self, lengths, jitter=None):
        """lengths [B] (int; any shape, jitter broadcast to it) -> steps of that shape, int32.

        The product is taken in float64 less 1e-9, so that a * n that is a
        whole number in decimal (0.1 * 30) does not round up past it (under
        JAX, float64 needs `jax_enable_x64`: refused without it).
        """
        if keras.backend.backend() == "jax":
            import jax

            if not jax.config.jax_enable_x64:
                raise ValueError(
                    "a depth that grows with the input (ut_depth_per_symbol) counts steps in "
                    "float64: under the JAX backend set jax.config.update('jax_enable_x64', True)"
                )
        scaled = self.per_symbol * ops.cast(lengths, "float64") - 1e-9  # [B]
        steps = ops.cast(ops.ceil(scaled), "int32") + self.offset
        if jitter is not None:
            steps = steps + jitter
        return ops.clip(steps, 1, self.cap)

    def position_steps(self, lengths, width, jitter=None):
        """Each position's steps [B, S]: position i of a row takes the steps of a
        source of i + 1 positions (its row's at most), for lengths [B] and S = width."""
        prefixes = ops.arange(1, width + 1, dtype="int32")[None, :]  # [1, S]
        moves = None if jitter is None else jitter[:, None]  # [B, 1]
        rows = self.steps(lengths, jitter)[:, None]  # [B, 1]
        return ops.minimum(self.steps(prefixes, moves), rows)  # [B, S]

    def jitter(self, batch_size, seed):
        """Training's per-row moves [B] int32 in [-random, random]; None when random is 0."""
        if not self.random:
            return None
        return keras.random.randint(
            (batch_size,), -self.random, self.random + 1, dtype="int32", seed=seed
        )


def source_lengths(encoder_bias, rows=None):
    """The count of real encoder positions per row, read off the encoder bias
    [B', 1, 1, S] (0 where real) -> [B'], or [rows] when the decoder has rows / B'
    consecutive rows per source (beam search's hypotheses)."""
    lengths = ops.sum(ops.cast(ops.equal(encoder_bias[:, 0, 0, :], 0.0), "int32"), 1)
    if rows is not None:  # [B'] -> [rows]
        lengths = ops.repeat(lengths, rows // ops.shape(lengths)[0])
    return lengths


@serialization.serializable
class UniversalStack(keras.layers.Layer):
    """Applies one block `num_steps` times, or under ACT, adding position + step signals.

    Each step is H_t = block(H_{t-1} + P_t), P_t = position signal + step
    signal (paper eq. 4-7); the block's norm placement decides post-norm (the
    paper) or pre-norm (tensor2tensor), the latter with a final norm here.
    The block's weights are shared by every step: the parameter count does not
    depend on the number of steps.

    Beyond the paper: `depth` (LengthDepth) gives each row its own number of
    steps from its source length (rows whose steps are done keep their
    state, as ACT keeps a halted position's); `use_positions=False` drops the
    position signal (the step signal stays); `input_every_step` adds the
    stack's input x_0 again at every step: H_t = block(H_{t-1} + P_t + x_0);
    `state_norm` normalizes the carried state first, H_t = block(LN(H_{t-1}) + P_t
    + LN'(x_0)), with the re-added input under a norm of its own, so that
    neither term outgrows the other (norms shared by every step).
    """

    def __init__(
        self,
        block: keras.layers.Layer,
        num_steps: int,
        step_signal: StepSignal,
        norm_position: str,
        halting: act.AdaptiveComputationTime | None = None,
        final_norm_name: str = "final_norm",
        depth: LengthDepth | None = None,
        use_positions: bool = True,
        input_every_step: bool = False,
        state_norm: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.block = block
        self.num_steps = num_steps
        self.step_signal = step_signal
        self.halting = halting
        self.depth = depth
        self.use_positions = use_positions
        self.input_every_step = input_every_step

        def norm(name: str, wanted: bool) -> keras.layers.LayerNormalization | None:
            epsilon = transformer_layers.LAYER_NORM_EPSILON
            return keras.layers.LayerNormalization(epsilon=epsilon, name=name) if wanted else None

        self.state_norm = norm("state_norm", state_norm)
        self.input_norm = norm("input_norm", state_norm and input_every_step)
        self.final_norm = norm(final_norm_name, norm_position == "pre")

    def build(self, input_shape=None):
        """Every weight from the stack input's shape [B, L, C]: the shared
        block's, the step signal's, the halting unit's and the norms'. None:
        each builds when first applied."""
        if input_shape is None:
            return
        sublayers = [self.block, self.step_signal, self.halting]
        nesting.build_each(
            input_shape, *sublayers, self.state_norm, self.input_norm, self.final_norm
        )

    def _with_signals(
        self,
        positions: Callable[[tf.Tensor | int], tf.Tensor],
        block_step: Callable[[tf.Tensor, tf.Tensor | int], tf.Tensor],
        stack_input: tf.Tensor,
    ) -> Callable[[tf.Tensor, tf.Tensor | int], tf.Tensor]:
        """step_fn(state, step) = block_step(block input, step): the state plus
        P_t = positions(t) + step signal (plus the stack's input, `input_every_step`)."""

        def step_fn(state: tf.Tensor, step: tf.Tensor | int) -> tf.Tensor:
            return block_step(self.block_input(state, positions(step), step, stack_input), step)

        return step_fn

    def block_input(
        self, state: tf.Tensor, position: tf.Tensor, step: tf.Tensor | int, stack_input: tf.Tensor
    ) -> tf.Tensor:
        """state [B, L, C] (normalized, `state_norm`) + position signal [1 or B, L, C]
        + step t's signal (+ the injected input, `injected`)."""
        if self.state_norm is not None:
            state = self.state_norm(state)
        x = state + ops.cast(position + self.step_signal.signal(step), state.dtype)
        return x + stack_input if self.input_every_step else x

    def injected(self, x: tf.Tensor) -> tf.Tensor:
        """The stack's input [B, L, C] as every step re-adds it: normalized once
        per call under `state_norm`, not again at every step."""
        return x if self.input_norm is None else self.input_norm(x)

    def row_steps(
        self, lengths: tf.Tensor, jitter: tf.Tensor | None = None, width: tf.Tensor | None = None
    ) -> tf.Tensor | None:
        """Each row's steps [B] for source lengths [B] when the depth grows with
        the input, or each position's [B, S] (`by_position`, S = width); else
        None (num_steps for every row)."""
        if self.depth is None:
            return None
        if self.depth.by_position:
            return self.depth.position_steps(lengths, width, jitter)
        return self.depth.steps(lengths, jitter)

    def _masked_steps(
        self, x: tf.Tensor, step_fn: Callable[[tf.Tensor, tf.Tensor], tf.Tensor], steps: tf.Tensor
    ) -> tf.Tensor:
        """max(steps) applications of step_fn; row b [B, L, C] takes the first
        steps[b] (steps [B]), or position s of row b the first steps[b, s] (steps
        [B, S], `LengthDepth.position_steps`)."""

        def body(step, state):
            step += 1
            running = step <= steps
            if len(steps.shape) == 2:
                if self.depth.window:  # per-position counts come from `depth`
                    running = ops.logical_and(running, step > steps - self.depth.window)
                running = running[..., None]  # [B, S, 1]
            else:
                running = ops.reshape(running, (-1, 1, 1))  # [B, 1, 1]
            return step, ops.where(running, step_fn(state, step), state)

        if keras.backend.backend() != "tensorflow":  # a fixed trip count (module docstring)
            for step in range(self.max_steps):
                x = body(step, x)[1]
            return x
        _, x = tf.while_loop(
            lambda step, state: step < tf.reduce_max(steps),
            body,
            (tf.constant(0), x),
            maximum_iterations=self.max_steps,
        )
        return x

    def _positions(
        self, length: tf.Tensor, channels: int, position_start: tf.Tensor | int
    ) -> Callable[[tf.Tensor | int], tf.Tensor]:
        """Step t (1-based) -> the position signal [1, L, C].

        A scalar position_start is every step's first position; a vector
        [max_steps] gives step t its own, position_start[t - 1].
        """
        if self.positions_per_step(position_start):
            return lambda step: embedding.timing_signal(
                length, channels, start=ops.take(position_start, step - 1, axis=0)
            )
        fixed = self.position_table(length, channels, position_start)
        return lambda step: fixed

    def positions_per_step(self, position_start) -> bool:
        """Whether each step reads positions of its own (a vector position_start)."""
        vector = ops.is_tensor(position_start) and len(position_start.shape) == 1
        return self.use_positions and vector

    def position_table(self, length, channels: int, position_start) -> tf.Tensor:
        """Every step's position signal [1, L, C] for a position_start that is
        not per step ([1, 1, C] of zeros without positions)."""
        if not self.use_positions:
            return ops.zeros((1, 1, channels))
        return embedding.timing_signal(length, channels, start=position_start)

    def apply(
        self,
        x: tf.Tensor,
        block_fn: Callable[[tf.Tensor], tf.Tensor],
        position_start: tf.Tensor | int,
        nonpadding: tf.Tensor,
        training: bool = False,
        row_steps: tf.Tensor | None = None,
    ) -> tuple[tf.Tensor, act.PonderStats | None]:
        """x [B, L, C]; block_fn applies self.block to [B, L, C]; nonpadding [B, L].

        position_start: the first position's index, one for every step (a
        scalar) or one per step (a vector [max_steps]). row_steps: each row's
        steps [B] under `depth` (under ACT, its most steps), or each position's
        [B, S] (fixed steps only); None: num_steps.

        Returns the output [B, L, C] and, under ACT, the ponder statistics.
        """
        if not self.built:
            self.build()
        x = ops.cast(x, self.compute_dtype)  # as Keras's __call__ would (this is no call)
        positions = self._positions(ops.shape(x)[1], x.shape[-1], position_start)
        step_fn = self._with_signals(
            positions, lambda state, step: block_fn(state), self.injected(x)
        )
        stats = None
        if self.halting is not None:
            x, stats = self.halting.apply(
                x, step_fn, nonpadding, training=training, budget=row_steps
            )
        elif row_steps is not None:
            x = self._masked_steps(x, step_fn, row_steps)
        else:
            for step in range(1, self.num_steps + 1):
                x = step_fn(x, step)
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
        if not self.use_positions:
            position = tf.zeros([1, 1, x.shape[-1]])  # [1, 1, C]
        stack_input = self.injected(x)
        row_steps = self.row_steps(source_lengths(encoder_bias, tf.shape(x)[0]))  # [B] or None

        def block_input(state: tf.Tensor, step: int) -> tf.Tensor:
            return self.block_input(state, position, step, stack_input)

        def full(state: tf.Tensor, step: int) -> tuple[tf.Tensor, dict]:
            return self.block.decode_step(
                block_input(state, step), cache[f"step_{step}"], index, cross, encoder_bias
            )

        def frozen(state: tf.Tensor, step: int) -> dict:
            return self.block.frozen_step(
                block_input(state, step), cache[f"step_{step}"], index, cross, encoder_bias
            )

        new = dict(cache)
        if self.halting is None and row_steps is None:
            for step in range(1, self.num_steps + 1):
                x, new[f"step_{step}"] = full(x, step)
        elif self.halting is None:
            x, step_caches = self._masked_cached_steps(x, full, frozen, row_steps)
            for step, step_cache in enumerate(step_caches, start=1):
                new[f"step_{step}"] = step_cache
        else:
            x, step_caches = self.halting.apply_cached(x, full, frozen, budget=row_steps)
            for step, step_cache in enumerate(step_caches, start=1):
                new[f"step_{step}"] = step_cache
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x, new

    def _masked_cached_steps(
        self,
        x: tf.Tensor,
        full: Callable[[tf.Tensor, int], tuple[tf.Tensor, dict]],
        frozen: Callable[[tf.Tensor, int], dict],
        row_steps: tf.Tensor,
    ) -> tuple[tf.Tensor, list]:
        """`_masked_steps` for one position, x [B, 1, C]: every step's cache
        is written (the block's, or once no row runs, only the frozen
        state's keys and values, so all caches keep one shape)."""
        caches = []
        for step in range(1, self.max_steps + 1):
            running = tf.reshape(step <= row_steps, [-1, 1, 1])  # [B, 1, 1]

            def run(x=x, step=step, running=running):
                new_x, step_cache = full(x, step)
                return tf.where(running, new_x, x), step_cache

            def skip(x=x, step=step):
                return x, frozen(x, step)

            if step == 1:  # every row takes at least one step
                x, step_cache = run()
            else:
                x, step_cache = tf.cond(tf.reduce_any(running), run, skip)
            caches.append(step_cache)
        return x, caches
