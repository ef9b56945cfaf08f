"""Adaptive Computation Time (Graves, 2016), per position, as in the UT paper (2.2).

`apply` (the forward and training pass) is keras.ops, so it runs on every
Keras backend. On TensorFlow its loop is a `tf.while_loop` that ends when
every position has halted; elsewhere it is a Python loop of `max_steps`
steps, because JAX's `while_loop` has no reverse-mode gradient: the steps
after the last halt change nothing (halted positions keep their state and get
weight 0), so the outputs are the same. `apply_cached` serves the TensorFlow
search. No tensor is updated in place (`a = a + b`, never `a += b`, which
PyTorch does in place: the carry's zeros are one tensor).
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import keras
import tensorflow as tf
from keras import ops

from t2t_lite.layers import dense, serialization

ACT_TYPES = ("accumulated", "basic")
# The halting unit's kernel initialiser. With "glorot_uniform" the logit's
# spread grows with the state's norm: bAbI facts (sums of word embeddings)
# start with many p_1 > 1 - epsilon, so those positions halt at step 1 where
# the saturated sigmoid passes almost no gradient, and the ponder cost keeps
# them there. "zeros" starts every position at p = sigmoid(bias).
HALTING_KERNEL_INITS = ("glorot_uniform", "zeros")


class PonderStats(NamedTuple):
    """Per-position pondering of one ACT loop."""

    n_updates: tf.Tensor  # [B, L] steps that updated the position (0 at padding)
    remainders: tf.Tensor  # [B, L] weight R given at the halting step (0 at padding)
    steps: tf.Tensor  # [] int32, loop trips executed (compute actually spent)
    weight_sums: tf.Tensor  # [B, L] float32 sum of the step weights: 1 (0 at padding)

    def ponder_time(self) -> tf.Tensor:
        """N + R per position [B, L]: the quantity the ponder cost penalises."""
        return self.n_updates + self.remainders

    def mean_ponder_time(self, nonpadding):
        """Mean of N + R over non-pad positions (nonpadding [B, L]) -> []."""
        nonpadding = ops.cast(nonpadding, "float32")
        total = ops.sum(self.ponder_time() * nonpadding)
        return total / ops.maximum(ops.sum(nonpadding), 1.0)


@serialization.serializable
class AdaptiveComputationTime(keras.layers.Layer):
    """Runs a step function until each position halts, combining its step states.

    At step t (1-based) the step function maps the carried state to s_t and a
    sigmoid unit (bias initialised to `halting_bias_init`) gives each running
    position a halting probability p_t = sigmoid(W s_t + b) (Graves: from the
    new state). A position halts at the first step whose p would take its
    accumulated probability past 1 - epsilon, or at `max_steps`, whichever
    comes first, and then gets the remainder R = 1 - (sum of its earlier p).
    Its step weights (p_1 .. p_{N-1}, R) therefore sum to exactly 1, also for
    positions forced to halt at `max_steps`.

    Halted positions keep their state unchanged for the remaining steps (the
    paper's copy), so other positions attend to their final state and the
    result for a position does not depend on what else is in the batch.
    Padding positions count as halted from the start.

    act_type:
      "accumulated": output = sum_t w_t s_t (Graves 2016's weighted sum; the
        weights sum to 1). Not the UT paper's listing.
      "basic": the running interpolation of the UT paper's appendix listing
        and tensor2tensor's default, o_t = w_t s_t + (1 - w_t) o_{t-1} with
        o_0 = 0, so step t's state ends up weighted by w_t * prod_{u>t} (1 - w_u)
        (the weights sum to 1 - prod_t (1 - w_t), less than 1).

    The loop ends when every non-pad position has halted.

    halting_kernel_init: see HALTING_KERNEL_INITS.
    """

    def __init__(
        self,
        max_steps: int,
        epsilon: float,
        act_type: str = "accumulated",
        halting_bias_init: float = 1.0,
        halting_kernel_init: str = "glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if max_steps < 1:
            raise ValueError(f"act_max_steps must be >= 1, got {max_steps}")
        if act_type not in ACT_TYPES:
            raise ValueError(f"act_type must be one of {ACT_TYPES}, got {act_type!r}")
        if halting_kernel_init not in HALTING_KERNEL_INITS:
            raise ValueError(
                f"act_halting_kernel_init must be one of {HALTING_KERNEL_INITS}, "
                f"got {halting_kernel_init!r}"
            )
        if not 0.0 < epsilon < 1.0:
            raise ValueError(f"act_epsilon must be in (0, 1), got {epsilon}")
        self.max_steps = max_steps
        self.threshold = 1.0 - epsilon
        self.act_type = act_type
        self.halting = dense.Dense(
            1,
            activation="sigmoid",
            kernel_initializer=halting_kernel_init,
            bias_initializer=keras.initializers.Constant(halting_bias_init),
            name="halting",
        )

    def build(self, input_shape):
        self.halting.build(input_shape)

    def _initial_carry(self, state, nonpadding) -> tuple:
        """(state, output, accumulated, remainders, n_updates, running) before step 1."""
        running = ops.cast(nonpadding, "float32")  # [B, L] 1 while not halted
        zeros = ops.zeros_like(running)  # [B, L]
        return state, ops.zeros_like(state), zeros, zeros, zeros, running

    def _limit(self, budget):
        """The step at which each row must halt: max_steps, or budget [B] (capped) as [B, 1]."""
        if budget is None:
            return self.max_steps
        return ops.minimum(budget, self.max_steps)[:, None]  # [B, 1]

    def _advance(
        self, step, limit, new_state, state, output, accumulated, remainders, n_updates, running
    ) -> tuple:
        """Folds step `step`'s new state [B, L, C] into the carry; returns the next carry.

        limit: the last step allowed, max_steps or per row [B, 1] (`_limit`).
        """
        p = ops.cast(ops.squeeze(self.halting(new_state), -1), "float32")  # [B, L]
        last = ops.cast(step >= limit, "float32")  # [] or [B, 1]
        passes = ops.cast(accumulated + p * running > self.threshold, "float32")
        halts = running * ops.maximum(passes, last)  # [B, L] halting at this step
        continues = running - halts
        accumulated = accumulated + p * continues
        remainder = halts * (1.0 - accumulated)  # [B, L] gradient flows to earlier p
        weight = p * continues + remainder  # [B, L] this step's share
        w = ops.cast(weight[..., None], state.dtype)  # [B, L, 1]
        if self.act_type == "accumulated":
            output = output + w * new_state
        else:
            output = w * new_state + (1.0 - w) * output
        # Positions that were running take the new state; halted ones keep theirs.
        state = ops.where(running[..., None] > 0, new_state, state)
        return (
            state,
            output,
            accumulated + remainder,
            remainders + remainder,
            n_updates + running,
            continues,
        )

    def apply_cached(
        self,
        state: tf.Tensor,
        step_fn: Callable[[tf.Tensor, int], tuple[tf.Tensor, Any]],
        frozen_fn: Callable[[tf.Tensor, int], Any],
        budget: tf.Tensor | None = None,
    ) -> tuple[tf.Tensor, list]:
        """`apply` for one decoding position of every row, state [B, 1, C].

        step_fn(state, t) -> (new state, step t's cache); frozen_fn(state, t)
        -> the same cache for a frozen state, without the new state. Every
        step's cache is made, halted or not, so later positions find a halted
        position's frozen keys and values. While a row runs, step_fn runs
        for the batch; from the first step at which every row has halted,
        only frozen_fn (the carry no longer changes). Returns the output
        (equal to `apply`'s for the same position) and the caches of steps
        1..max_steps. budget: as in `apply`.
        """
        if not self.built:
            self.build(state.shape)
        limit = self._limit(budget)
        carry = self._initial_carry(state, tf.ones(tf.shape(state)[:2]))
        caches = []
        for step in range(1, self.max_steps + 1):

            def run(carry=carry, step=step):
                new_state, cache = step_fn(carry[0], step)
                return self._advance(step, limit, new_state, *carry), cache

            def skip(carry=carry, step=step):
                return carry, frozen_fn(carry[0], step)

            if step == 1:
                carry, cache = run()
            else:
                carry, cache = tf.cond(tf.reduce_any(carry[-1] > 0), run, skip)
            caches.append(cache)
        return carry[1], caches

    def apply(
        self,
        state: tf.Tensor,
        step_fn: Callable[[tf.Tensor, tf.Tensor], tf.Tensor],
        nonpadding: tf.Tensor,
        training: bool = False,
        budget: tf.Tensor | None = None,
    ) -> tuple[tf.Tensor, PonderStats]:
        """state [B, L, C], step_fn(state, step) -> [B, L, C], nonpadding [B, L].

        budget: each row's most steps [B] (length-scaled ACT), capped at
        max_steps; None: max_steps for every row.

        Returns the combined output [B, L, C] and the ponder statistics.
        (`apply`, not `__call__`: Keras only takes tensors as call arguments.)
        """
        if not self.built:
            self.build(state.shape)
        state = ops.cast(state, self.compute_dtype)  # as Keras's __call__ would (this is no call)
        limit = self._limit(budget)
        if keras.backend.backend() != "tensorflow":  # a fixed trip count (module docstring)
            carry = self._initial_carry(state, nonpadding)
            steps = ops.zeros((), "int32")  # trips that had a running position
            for step in range(1, self.max_steps + 1):
                steps = steps + ops.cast(ops.any(carry[-1] > 0), "int32")
                carry = self._advance(step, limit, step_fn(carry[0], step), *carry)
            _, output, weight_sums, remainders, n_updates, _ = carry
            return output, PonderStats(n_updates, remainders, steps, weight_sums)

        def body(step, *carry):
            step += 1
            return (step, *self._advance(step, limit, step_fn(carry[0], step), *carry))

        def cond(step, state, output, accumulated, remainders, n_updates, running):
            return tf.logical_and(step < self.max_steps, tf.reduce_any(running > 0))

        step, _, output, weight_sums, remainders, n_updates, _ = tf.while_loop(
            cond,
            body,
            (tf.constant(0), *self._initial_carry(state, nonpadding)),
            maximum_iterations=self.max_steps,
        )
        return output, PonderStats(n_updates, remainders, step, weight_sums)
