"""A Dense layer whose product is one 2-D matmul, at any rank.

Keras's Dense multiplies a [..., C] input with `tf.tensordot`, which, where
the leading axes' sizes are unknown when traced (the trainer's generalised
shapes), computes its transpose permutation as a tensor. Inside a
`tf.while_loop` (the UT's masked loop, the wavefront) the loop's gradient
then carries that permutation as a loop value, and XLA refuses it: a
transpose's permutation must be a compile-time constant. Flattening the
leading axes, one matmul, and restoring them is the same product, element
for element (tensordot's own reshape, without its transpose), and compiles.
Other Keras backends have no such loop: there it is keras.layers.Dense.
"""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="t2t_lite")
class Dense(keras.layers.Dense):
    """keras.layers.Dense with rank > 2 inputs multiplied as [N, C] x [C, units]."""

    def call(self, inputs, training=None):
        if keras.backend.backend() != "tensorflow" or not isinstance(inputs, tf.Tensor):
            return super().call(inputs, training=training)
        if inputs.shape.rank is None or inputs.shape.rank <= 2:
            return super().call(inputs, training=training)
        leading = inputs.shape[:-1]
        flat = tf.reshape(inputs, [-1, inputs.shape[-1]])  # [..., C] -> [N, C]
        product = super().call(flat, training=training)  # [N, units]
        if leading.is_fully_defined():  # eager, or a traced shape: no shape ops
            return tf.reshape(product, leading.as_list() + [self.units])  # [..., units]
        shape = tf.concat([tf.shape(inputs)[:-1], [self.units]], 0)
        out = tf.reshape(product, shape)  # [N, units] -> [..., units]
        out.set_shape(leading.concatenate([self.units]))  # the axes known when traced
        return out
