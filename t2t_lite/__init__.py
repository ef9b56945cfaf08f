"""t2t_lite: the Transformer and the Universal Transformer for TF2 / Keras 3."""

__version__ = "0.1.0"
