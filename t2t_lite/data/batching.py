"""Token-budget batching with a few length buckets."""

import tensorflow as tf

from t2t_lite import sequences


def example_length(example: dict[str, tf.Tensor]) -> tf.Tensor:
    """max(len(inputs), len(targets)) of one example."""
    return tf.maximum(tf.size(example["inputs"]), tf.size(example["targets"]))


def row_lengths(rows: dict[str, tf.RaggedTensor]) -> tf.Tensor:
    """example_length of each of N ragged rows [N, (len)] -> [N]."""
    return tf.maximum(rows["inputs"].row_lengths(), rows["targets"].row_lengths())


def curriculum_length(start: int, steps_per_length: int, step: int) -> int:
    """The longest example (example_length) a length curriculum admits at `step`."""
    return start + step // steps_per_length


class LengthCurriculum:
    """A length curriculum's limit as a host variable (`limit`) that a training
    dataset's filter reads, moved on by `advance` as steps are trained, until
    it reaches `longest` (past it every example is in and nothing changes)."""

    def __init__(self, start: int, steps_per_length: int, longest: int, step: int):
        self.start, self.steps_per_length, self.longest = start, steps_per_length, longest
        self.current = min(curriculum_length(start, steps_per_length, step), longest)
        with tf.device("/cpu:0"):
            self.limit = tf.Variable(self.current, dtype=tf.int32, trainable=False)

    def advance(self, step: int) -> int | None:
        """The new limit once `step` is trained, if it moved (else None)."""
        new = min(curriculum_length(self.start, self.steps_per_length, step), self.longest)
        if new == self.current:
            return None
        self.current = new
        self.limit.assign(new)
        return new


def batch_sizes(lengths: list[int], tokens: int) -> list[int]:
    """Examples per batch for each bucket so that batch * length <= tokens."""
    return [max(1, tokens // length) for length in lengths]


def bucket_by_tokens(
    dataset: tf.data.Dataset,
    tokens: int,
    max_length: int,
    step: float,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """Batches examples (no longer than max_length) within a token budget.

    Every feature of a batch (inputs and targets, and any other sequence of
    the inputs' length) is padded with 0 to the bucket's length, so every
    batch has one of sequences.bucket_lengths(max_length, step) sequence lengths.
    """
    lengths = sequences.bucket_lengths(max_length, step)
    sizes = batch_sizes(lengths, tokens)
    return dataset.bucket_by_sequence_length(
        example_length,
        # A bucket holds lengths < boundary; padding goes to boundary - 1.
        bucket_boundaries=[n + 1 for n in lengths],
        bucket_batch_sizes=sizes + [1],
        padded_shapes={key: [None] for key in dataset.element_spec},
        pad_to_bucket_boundary=True,
        drop_remainder=drop_remainder,
    )
