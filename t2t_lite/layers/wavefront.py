"""The wavefront computed one position at a time: a causal encoder's recurrence over positions.

Under `LengthDepth(by_position=True, window=1)` position i of a source runs
exactly one application of the shared block, at its step s_i; until then its
state is its input, afterwards that step's output. `UniversalStack`'s masked
loop applies the block to every position at every step, max(s) times over
[B, S]: O(S) block applications of S positions each, all but one position's
thrown away. When s rises strictly along the real positions and the
self-attention is causal, position i's step sees the finished states of
positions 0..i-1 and its own input, nothing else, so the encoder is a
recurrence over positions:

    z_i = block input of position i's input x_i
    h_i = block(z_i | keys/values of z_0'..z_{i-1}', and of z_i)
    z_i' = block input of h_i (what every later position's step reads)

one block application of one position each, the finished positions' keys
and values cached: O(S) work a position instead of O(S^2), the same
outputs and gradients. It holds only where the block input does not change
with the step (no step signal; a position signal fixed per position) and
the transition is position-wise: `applies` says so, and `encode` falls back
to the masked loop in the graph when two real positions of a row share a
step (a per-symbol rate below 1, or the step cap reached). Under dropout
each position's one application draws its own masks, as the kept
application does in the loop: the same distribution, not the same draws.
"""

from collections.abc import Callable

import tensorflow as tf

from t2t_lite.layers import attention, universal


def applies(stack: universal.UniversalStack, causal: bool, position_start) -> bool:
    """Whether `encode` may stand for `stack.apply` (a Python check)."""
    depth = stack.depth
    per_step_positions = isinstance(position_start, tf.Tensor) and position_start.shape.rank == 1
    return (
        causal
        and depth is not None
        and depth.by_position
        and depth.window == 1
        and stack.halting is None
        and stack.step_signal.kind == "none"
        and not (stack.use_positions and per_step_positions)
        and getattr(stack.block.ffn, "position_wise", False)
    )


def one_step_each(row_steps: tf.Tensor, nonpadding: tf.Tensor) -> tf.Tensor:
    """True (a scalar) when each row's real positions take strictly increasing
    steps: row_steps [B, S] int, nonpadding [B, S]."""
    rising = row_steps[:, 1:] > row_steps[:, :-1]  # [B, S - 1]
    later_is_real = tf.cast(nonpadding[:, 1:], tf.bool)  # [B, S - 1]
    return tf.reduce_all(rising | ~later_is_real)


def encode(
    stack: universal.UniversalStack,
    x: tf.Tensor,
    padding_bias: tf.Tensor,
    nonpadding: tf.Tensor,
    row_steps: tf.Tensor,
    position_start,
    masked: Callable[[], tf.Tensor],
    training: bool = False,
) -> tf.Tensor:
    """The stack's output [B, S, C] for its input x [B, S, C]: position by
    position where `one_step_each`, else `masked()` (the stack's own loop).
    padding_bias [B, 1, 1, S]; nonpadding [B, S]; row_steps [B, S]."""
    if not stack.built:
        stack.build()
    return tf.cond(
        one_step_each(row_steps, nonpadding),
        lambda: _by_position(stack, x, padding_bias, position_start, training),
        masked,
    )


def _by_position(
    stack: universal.UniversalStack,
    x: tf.Tensor,
    padding_bias: tf.Tensor,
    position_start,
    training: bool = False,
) -> tf.Tensor:
    """x [B, S, C] -> [B, S, C], one position per loop iteration."""
    block = stack.block
    layer = block.self_attention
    batch_size, length, channels = tf.shape(x)[0], tf.shape(x)[1], x.shape[-1]
    positions = stack.position_table(length, channels, position_start)  # [1, S or 1, C]
    injected = stack.injected(x)  # [B, S, C]

    def block_input(state: tf.Tensor, i: tf.Tensor) -> tf.Tensor:
        """state [B, 1, C] of position i -> its block input [B, 1, C]. The
        step is immaterial: `applies` admits only stacks without a step signal."""
        position = positions[:, tf.minimum(i, tf.shape(positions)[1] - 1)][:, tf.newaxis]
        return stack.block_input(state, position, 1, injected[:, i][:, tf.newaxis])

    def keys_values(z: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """What the self-attention reads of block input z [B, 1, C]: [B, H, 1, D] each."""
        return layer.project_memory(block.self_attention_residual.sublayer_input(z))

    def body(i, kv, outputs):
        z = block_input(x[:, i][:, tf.newaxis], i)  # [B, 1, C]
        kv = attention.write_kv(kv, *keys_values(z), i)
        bias = tf.minimum(padding_bias, attention.step_bias(i, length))  # [B, 1, 1, S]

        def attend(y):
            return layer.attend(y, kv.keys, kv.values, bias, training, query_start=i)

        h = block.self_attention_residual.apply(z, attend, training)
        h = block.ffn_residual.apply(
            h, lambda y: block.ffn(y, None, training=training), training
        )  # [B, 1, C]
        kv = attention.write_kv(kv, *keys_values(block_input(h, i)), i)  # finished
        return i + 1, kv, outputs.write(i, h[:, 0])

    kv = attention.empty_kv_cache(
        batch_size, layer.num_heads, layer.depth, length, x.dtype, layer.key_depth
    )
    outputs = tf.TensorArray(x.dtype, size=length, element_shape=[None, channels])
    _, _, outputs = tf.while_loop(
        lambda i, kv, outputs: i < length, body, (tf.constant(0), kv, outputs)
    )
    encoded = tf.transpose(outputs.stack(), [1, 0, 2])  # [S, B, C] -> [B, S, C]
    return stack.final_norm(encoded) if stack.final_norm is not None else encoded
