"""layers/dense.py: the one-matmul Dense against Keras's own."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import dense


@pytest.mark.parametrize("shape", [(5, 6), (2, 3, 6), (2, 3, 4, 6)])
def test_the_same_product_as_keras_dense(shape):
    """Same weights, the same outputs to the bit (tensordot reshapes to the same
    [N, C] matmul), at ranks 2 to 4, with a bias and an activation; and the
    static shape kept."""
    ours = dense.Dense(7, activation="relu", name="ours")
    theirs = keras.layers.Dense(7, activation="relu", name="theirs")
    x = tf.random.stateless_normal(shape, seed=[1, 2])
    ours.build(x.shape)
    theirs.build(x.shape)
    theirs.set_weights(ours.get_weights())
    assert [w.path.split("/")[-1] for w in ours.weights] == ["kernel", "bias"]
    np.testing.assert_array_equal(ours(x).numpy(), theirs(x).numpy())
    assert ours(x).shape == (*shape[:-1], 7)


def test_unknown_leading_axes_keep_the_known_ones():
    """Traced with rows and length unknown: the output's static shape is
    [None, None, units], as Keras's Dense gives."""
    layer = dense.Dense(3)
    layer.build((None, None, 4))
    f = tf.function(layer, input_signature=[tf.TensorSpec([None, None, 4])])
    assert f.get_concrete_function().structured_outputs.shape.as_list() == [None, None, 3]
    assert f(tf.ones([2, 5, 4])).shape == (2, 5, 3)
