"""A dtype policy given to one layer or model reaches every layer it made.

Keras gives `dtype=` (a policy such as "mixed_bfloat16") to the layer it is
passed to; keras-hub hands the same policy to each sublayer it constructs
(`dtype=self.dtype_policy`). The package's containers (blocks, stacks, the
models) make their sublayers in their constructors without one, so those
would follow the global policy instead: a block given "mixed_bfloat16"
would add a float32 sublayer output to its bfloat16 input. `hand_down`
gives the container's policy to every layer it made, at any depth, before
any variable exists (variables take the policy's variable dtype when they
are built). Layers it was given (a stack's blocks, the embedding a
`FactEmbedding` reads) get it too: the container computes with them, and a
block left in float32 would meet its stack's bfloat16 states.
"""

import keras

from t2t_lite.layers import nesting


def hand_down(layer: keras.layers.Layer) -> None:
    """Sets layer's dtype policy on every layer it holds (nesting.nested)."""
    for sublayer in nesting.nested(layer):
        sublayer.dtype_policy = layer.dtype_policy
