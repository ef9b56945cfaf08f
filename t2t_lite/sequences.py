"""Sequence conventions: reserved ids, EOS, truncation and length buckets.

Data, layers, decoding and export all follow these; nothing else defines
them. Every stored sequence is its symbols then one EOS; batches pad with PAD
after it. Ids above EOS are symbols.
"""

import numpy as np
import tensorflow as tf
from absl import logging

PAD_ID = 0
EOS_ID = 1
# PAD and EOS: a problem's own symbols start at this id (bAbI reserves FACT_END_ID too).
NUM_RESERVED_IDS = 2
# The unknown token of word and subword vocabularies (data/subword.py's RESERVED):
# what word dropout (hparam input_word_dropout) replaces an input token by.
UNKNOWN_ID = 2
# Fact-encoded inputs (input_encoding "facts", bAbI): every fact, the
# question included, ends with this id; the words between are one fact.
FACT_END_ID = 2
FACT_END_TOKEN = "."
# How a model reads a problem's inputs (Problem.input_encoding, saved in
# experiment.json): "tokens", a source sequence for an encoder; "facts",
# facts ending with FACT_END_ID, each embedded as one encoder position;
# "none", no source: a decoder-only model of the targets (Text2Self).
INPUT_ENCODINGS = ("tokens", "facts", "none")
# The reserved ids' names where a vocabulary is written out as tokens.
PAD_TOKEN = "<pad>"
EOS_TOKEN = "<EOS>"
# Decoding caches: the entries under this key are fixed for the whole search
# and the same for every hypothesis of an input row (the encoder bias, the
# encoder's keys and values). Beam search neither tiles nor reorders them:
# a step sees B * K hypothesis rows, K consecutive per input, and B static rows.
STATIC_CACHE = "static"
BUCKET_MULTIPLE = 8  # the shortest bucket, and the longest is a multiple of it
# Growth from one length bucket to the next (tensor2tensor's length_bucket_step).
LENGTH_BUCKET_STEP = 1.1


def with_eos(ids: list[int]) -> list[int]:
    """Symbols -> the stored sequence: the symbols, then EOS."""
    return [*ids, EOS_ID]


def strip_eos(ids: list[int]) -> list[int]:
    """A stored sequence without its final EOS."""
    return ids[:-1] if ids and ids[-1] == EOS_ID else list(ids)


def until_eos(ids) -> list[int]:
    """The ids before the first EOS or PAD (a decoded or padded row)."""
    out = []
    for i in list(ids):
        if i in (EOS_ID, PAD_ID):
            break
        out.append(int(i))
    return out


def symbol_lengths(ids: tf.Tensor) -> tf.Tensor:
    """ids [..., T] (padded or decoded rows) -> [...] int32: the symbols before the
    first EOS or PAD, i.e. len(until_eos(row)), computed in the graph."""
    in_row = tf.math.cumprod(tf.cast(ids > EOS_ID, tf.int32), axis=-1)  # [..., T]
    return tf.reduce_sum(in_row, axis=-1)


def truncate(ids: list[int], limit: int, where: str) -> list[int]:
    """ids cut to `limit` symbols, with a warning naming `where` (e.g. the line)."""
    if len(ids) > limit:
        logging.warning(
            "%s: %d symbols, longer than max_input_length=%d; truncated", where, len(ids), limit
        )
        return ids[:limit]
    return ids


def round_up(n: int, multiple: int = BUCKET_MULTIPLE) -> int:
    return -(-n // multiple) * multiple


def bucket_lengths(max_length: int, step: float) -> list[int]:
    """Padded lengths of the length buckets, last >= max_length.

    tensor2tensor's rule: from 8, each length is the last times `step` (at
    least one more), and the last is rounded up to a multiple of 8. Step 1.1
    (LENGTH_BUCKET_STEP) pads little: 42 buckets for length 256, and batches of
    short sentences about 8% padding, against about 30% with doubling buckets
    (step 2: 4 buckets for length 41, 7 for 401, the fewest shapes for a step
    that XLA compiles once per shape).
    """
    lengths = []
    length = BUCKET_MULTIPLE
    while length < max_length:
        lengths.append(length)
        length = max(length + 1, int(length * step))
    if not lengths or lengths[-1] < max_length:
        last = round_up(max_length)
        lengths = [n for n in lengths if n < last] + [last]
    return lengths


def pad_batch(rows: list[list[int]], length: int) -> np.ndarray:
    """Host-side batching: [len(rows), length] int32, each row's ids then PAD."""
    batch = np.full([len(rows), length], PAD_ID, np.int32)
    for index, ids in enumerate(rows):
        batch[index, : len(ids)] = ids
    return batch


def doubling_bucket(length: int) -> int:
    """The smallest of 8, 16, 32, ... that holds `length` (decoding's batch shapes)."""
    bucket = BUCKET_MULTIPLE
    while bucket < length:
        bucket *= 2
    return bucket
