"""Keras 3 layers shared by the Transformer and the Universal Transformer."""
