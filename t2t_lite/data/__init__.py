"""Problems, TFRecord I/O and tf.data batching."""
