"""`einsum` for the layers: `tf.einsum` on the TensorFlow backend, `keras.ops.einsum`
on the others.

Keras's TensorFlow einsum rewrites some equations ("bhtd,bhsd->bhts" among
them) into reshapes, transposes and matmuls of its own. Traced with unknown
sizes inside the UT's and ACT's `tf.while_loop` (the trainer's relaxed
evaluation shapes), the rewrite gives the function outputs of shape [0]
while the values inside the loop are right: `tests/test_training.py`'s ACT
run caught it. TensorFlow's own einsum has no such rewrite, and is what the
layers ran before they were written for every backend.
"""

import keras
import tensorflow as tf
from keras import ops


def einsum(equation: str, *operands):
    if keras.backend.backend() == "tensorflow":
        return tf.einsum(equation, *operands)
    return ops.einsum(equation, *operands)
