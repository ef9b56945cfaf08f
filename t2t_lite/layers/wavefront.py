"""The wavefront computed one position at a time: a causal encoder's recurrence over positions.

Under `LengthDepth(by_position=True, window=1)` position i of a source runs
exactly one application of the shared block, at its step s_i; until then its
state is its input, afterwards that step's output. `UniversalStack`'s masked
loop applies the block to every position at every step, max(s) times over
[B, S]: O(S) block applications of S positions each, all but the few whose
step it is thrown away. The steps never fall along a row (a prefix of i + 1
positions takes at most the steps of a longer one, all capped alike), and
with a causal self-attention position i's step reads only positions
j <= i, each as it stands just before step s_i: finished (its output) where
s_j < s_i, still its input where s_j = s_i (itself, and its neighbours that
share the step: a rate below one step a symbol, or the cap). So the encoder
is a recurrence over positions:

    z_j = block input of x_j,  z_j' = block input of h_j (finished)
    h_i = block(z_i | keys/values of z_j' where s_j < s_i, else of z_j)

one block application of one position each, with the input keys and values
projected once for all positions and the finished ones cached as they come:
O(S) work a position instead of O(S^2), the same outputs and gradients. It
holds only where the block input does not change with the step (no step
signal; a position signal fixed per position) and the transition is
position-wise: `applies` says so. Under dropout each position's one
application draws its own masks, as the kept application does in the loop:
the same distribution, not the same draws.
"""

import keras
import tensorflow as tf

from t2t_lite.layers import attention, universal


def applies(stack: universal.UniversalStack, causal: bool, position_start) -> bool:
    """Whether `encode` may stand for `stack.apply` (a Python check)."""
    depth = stack.depth
    return (
        keras.backend.backend() == "tensorflow"  # a TensorArray loop; elsewhere the masked loop
        and causal
        and depth is not None
        and depth.by_position
        and depth.window == 1
        and stack.halting is None
        and stack.step_signal.kind == "none"
        and not stack.positions_per_step(position_start)
        and getattr(stack.block.ffn, "position_wise", False)
    )


def encode(
    stack: universal.UniversalStack,
    x: tf.Tensor,
    padding_bias: tf.Tensor,
    row_steps: tf.Tensor,
    position_start,
    training: bool = False,
) -> tf.Tensor:
    """The stack's output [B, S, C] for its input x [B, S, C], one position a
    loop iteration. padding_bias [B, 1, 1, S]; row_steps [B, S], non-decreasing
    along each row (`LengthDepth.position_steps`)."""
    if not stack.built:
        stack.build()
    block = stack.block
    layer = block.self_attention
    length, channels = tf.shape(x)[1], x.shape[-1]
    positions = stack.position_table(length, channels, position_start)  # [1 or B, S or 1, C]
    injected = stack.injected(x)  # [B, S, C]

    def keys_values(z: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """What the self-attention reads of block inputs z [B, L, C]: [B, H, L, D] each."""
        return layer.project_memory(block.self_attention_residual.sublayer_input(z))

    inputs = stack.block_input(x, positions, 1, injected)  # [B, S, C]; no step signal
    input_keys, input_values = keys_values(inputs)  # [B, H, S, D] each

    def body(i, done, outputs):
        z = inputs[:, i][:, tf.newaxis]  # [B, 1, C]
        finished = (row_steps < row_steps[:, i][:, tf.newaxis])[:, tf.newaxis, :, tf.newaxis]
        keys = tf.where(finished, done.keys, input_keys)  # [B, H, S, D]
        values = tf.where(finished, done.values, input_values)
        bias = tf.minimum(padding_bias, attention.step_bias(i, length))  # [B, 1, 1, S]

        def attend(y):
            return layer.attend(y, keys, values, bias, training, query_start=i)

        h = block.self_attention_residual.apply(z, attend, training)
        h = block.ffn_residual.apply(
            h, lambda y: block.ffn(y, None, training=training), training
        )  # [B, 1, C]
        position = positions[:, tf.minimum(i, tf.shape(positions)[1] - 1)][:, tf.newaxis]
        finished_input = stack.block_input(h, position, 1, injected[:, i][:, tf.newaxis])
        done = attention.write_kv(done, *keys_values(finished_input), i)
        return i + 1, done, outputs.write(i, h[:, 0])

    done = attention.KVCache(tf.zeros_like(input_keys), tf.zeros_like(input_values))
    outputs = tf.TensorArray(x.dtype, size=length, element_shape=[None, channels])
    _, _, outputs = tf.while_loop(
        lambda i, done, outputs: i < length,
        body,
        (0, done, outputs),
        maximum_iterations=length,  # the bound XLA's gradient of the loop needs
    )
    encoded = tf.transpose(outputs.stack(), [1, 0, 2])  # [S, B, C] -> [B, S, C]
    return stack.final_norm(encoded) if stack.final_norm is not None else encoded
