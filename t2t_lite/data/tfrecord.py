"""Sharded TFRecord files of tf.train.Example: writing, parsing, checking."""

import json
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import tensorflow as tf

from t2t_lite import files

FEATURES = ("inputs", "targets")


class CorruptRecordError(ValueError):
    """A TFRecord file is corrupt or truncated."""


# The pipeline's message for a token id outside the vocabulary (`parse`).
OUTSIDE = "token id outside the vocabulary"
EMPTY = "a record without token ids"


def shard_paths(prefix: str, num_shards: int) -> list[str]:
    """tensor2tensor's shard names: {prefix}-{i:05d}-of-{n:05d}."""
    return [f"{prefix}-{i:05d}-of-{num_shards:05d}" for i in range(num_shards)]


def serialize(example: dict[str, list[int]]) -> bytes:
    """A dict of int lists -> serialized tf.train.Example."""
    proto = tf.train.Example()
    features = proto.features.feature
    for key, values in example.items():
        features[key].int64_list.value.extend(values)  # about twice as fast as constructors
    # Deterministic: protobuf may otherwise write the map entries in any order,
    # and the same seed must give byte-identical shards.
    return proto.SerializeToString(deterministic=True)


def write_shards(
    examples: Iterable[dict[str, list[int]]], paths: list[str], shuffle_seed: int | None = None
) -> int:
    """Writes examples round-robin into `paths`; returns the example count.

    Each shard is written under a temporary name of this writer's own
    (`files.incomplete_name`) and renamed when complete, so
    an interrupted run never leaves a partial file under a final name (on
    object stores such as GCS the rename is a copy of the complete object).
    With `shuffle_seed`, each shard's records are then put in a seeded random
    order, one shard in memory at a time (tensor2tensor shuffles its shards so).
    """
    # This writer's own temporary names: two writers never share a file.
    tmp_paths = [files.incomplete_name(path) for path in paths]
    tokens = {key: 0 for key in FEATURES}
    with files.removed_on_failure(tmp_paths):
        writers = [tf.io.TFRecordWriter(path) for path in tmp_paths]
        count = 0
        try:
            for count, example in enumerate(examples, start=1):
                writers[(count - 1) % len(writers)].write(serialize(example))
                for key in FEATURES:
                    tokens[key] += len(example[key])
        finally:
            for writer in writers:
                writer.close()
        for index, (tmp, path) in enumerate(zip(tmp_paths, paths, strict=True)):
            if shuffle_seed is not None:
                _shuffle_file(tmp, [shuffle_seed, index])
            tf.io.gfile.rename(tmp, path, overwrite=True)
    stats = {"examples": count, **{f"{key}_tokens": n for key, n in tokens.items()}}
    files.write_atomically(stats_path(paths), json.dumps(stats, sort_keys=True))
    return count


def stats_path(paths: list[str]) -> str:
    """<data_dir>/<problem>-<split>.stats.json beside a split's shards
    (<problem>-<split>-NNNNN-of-NNNNN): its examples and tokens, for summaries.
    Shards named otherwise get <first shard>.stats.json, in their own directory."""
    directory, name = os.path.split(paths[0])
    shard = re.fullmatch(r"(.+)-\d+-of-\d+", name)
    return os.path.join(directory, (shard.group(1) if shard else name) + ".stats.json")


def read_stats(paths: list[str]) -> dict[str, int] | None:
    """A split's example and token counts as datagen wrote them (None: data written
    before these counts were kept, or unreadable)."""
    path = stats_path(paths)
    try:
        return json.loads(files.read_text(path)) if tf.io.gfile.exists(path) else None
    except ValueError:
        return None


def _shuffle_file(path: str, seed: list[int]) -> None:
    """Rewrites a TFRecord file's records in a seeded random order."""
    records = [r for batch in tf.data.TFRecordDataset(path).batch(8192) for r in batch.numpy()]
    order = np.random.default_rng(seed).permutation(len(records))
    with tf.io.TFRecordWriter(path) as writer:
        for i in order:
            writer.write(records[i])


def parse(serialized: tf.Tensor, vocab_size: int | None = None) -> dict[str, tf.RaggedTensor]:
    """N serialized Examples [N] -> {"inputs": [N, (S)], "targets": [N, (T)]}
    int32 ragged rows, one parse for all N (a parse per record costs several
    times as much in a tf.data pipeline).

    With vocab_size, an id outside [0, vocab_size), or a record whose inputs
    or targets hold no id (every problem writes at least EOS; a record of
    another tool may lack the features), fails the pipeline with an error
    that `next_element` turns into one naming the file and record.
    """
    spec = {key: tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int32) for key in FEATURES}
    parsed = tf.io.parse_example(serialized, spec)
    checks = []
    if vocab_size is not None:
        ids = tf.concat([parsed[key].flat_values for key in FEATURES], 0)
        inside = tf.reduce_all((ids >= 0) & (ids < vocab_size))
        checks.append(tf.debugging.Assert(inside, [f"{OUTSIDE} [0, {vocab_size})"]))
        filled = tf.reduce_all([tf.reduce_all(parsed[key].row_lengths() > 0) for key in FEATURES])
        checks.append(tf.debugging.Assert(filled, [EMPTY]))
    with tf.control_dependencies(checks):
        return {key: tf.cast(parsed[key], tf.int32) for key in FEATURES}


def _as_lists(record: tf.Tensor) -> dict[str, list[int]]:
    """One serialized Example -> its features as int lists, eagerly."""
    return {key: value[0].numpy().tolist() for key, value in parse(record[None]).items()}


def read_records(path: str) -> Iterator[dict[str, list[int]]]:
    """Eagerly reads one file's examples as int lists (tests and tools)."""
    for record in tf.data.TFRecordDataset(path):
        yield _as_lists(record)


def read_examples(paths: list[str], limit: int = -1) -> list[dict[str, list[int]]]:
    """The first `limit` examples of a split's shards (all when limit < 0), checked."""
    examples: list[dict[str, list[int]]] = []
    for path in paths:
        check_file(path)
        for example in read_records(path):
            if 0 <= limit <= len(examples):
                return examples
            examples.append(example)
    return examples


def spread_examples(paths: list[str], count: int) -> list[dict[str, list[int]]]:
    """`count` examples spread evenly over a split's shards, in order: of n
    examples the floor(i * n / count)-th for i < count (all where n <= count).
    A split's first examples are no sample of it when its files are sorted
    (translate_gettext writes its splits in source order); checked, as
    read_examples."""
    total = sum(check_file(path) for path in paths)
    wanted = {i * total // count for i in range(count)} if total > count else None
    examples, index = [], 0
    for path in paths:
        for record in tf.data.TFRecordDataset(path):
            if wanted is None or index in wanted:
                examples.append(_as_lists(record))
            index += 1
    return examples


def check_file(path: str) -> int:
    """Reads every record of `path` -> how many it holds; raises
    CorruptRecordError naming it."""
    count = 0
    try:
        for _ in tf.data.TFRecordDataset(path):
            count += 1
    except tf.errors.DataLossError as err:
        raise CorruptRecordError(
            f"{path}: corrupt or truncated TFRecord file ({err.message.strip()}); "
            "delete it and run t2t-datagen again"
        ) from None
    return count


def check_features(path: str) -> bool:
    """Checks the first record of `path` holds FEATURES as int64 lists; False if it has none.

    Raises ValueError naming the file and the feature: a shard written by
    another tool would otherwise parse every missing feature as empty and
    train on nothing.
    """
    try:
        records = [r.numpy() for r in tf.data.TFRecordDataset(path).take(1)]
    except tf.errors.DataLossError:
        check_file(path)  # names the file
        raise
    if not records:
        return False
    try:
        features = tf.train.Example.FromString(records[0]).features.feature
    except Exception:  # noqa: BLE001 (any undecodable record is the same user error)
        raise ValueError(f"{path}: record 1 is not a tf.train.Example") from None
    for key in FEATURES:
        if key not in features:
            found = ", ".join(sorted(features)) or "none"
            raise ValueError(
                f"{path}: record 1 has no {key!r} feature (its features: {found}); "
                f"expected int64 lists {' and '.join(map(repr, FEATURES))}, as "
                "t2t-datagen writes them"
            )
        kind = features[key].WhichOneof("kind")
        if kind != "int64_list":
            raise ValueError(
                f"{path}: record 1's {key!r} feature is a {kind or 'empty feature'}, "
                "expected an int64 list of token ids"
            )
    return True


def find_corrupt(paths: list[str], error: Exception) -> CorruptRecordError:
    """Names the first corrupt file among `paths`, after `error` was seen reading them."""
    for path in paths:
        try:
            check_file(path)
        except CorruptRecordError as named:
            return named
    return CorruptRecordError(f"corrupt TFRecord data in one of {paths}: {error}")


def next_element(iterator: Any, paths: list[str]) -> Any:
    """next(iterator), turning a data-loss error or an id outside the vocabulary
    (`parse`) into an error that names the file."""
    try:
        return next(iterator)
    except tf.errors.DataLossError as err:
        raise find_corrupt(paths, err) from None
    except tf.errors.InvalidArgumentError as err:
        if EMPTY in str(err):
            raise find_empty(paths) from None
        found = re.search(re.escape(OUTSIDE) + r" \[0, (\d+)\)", str(err))
        if not found:
            raise
        raise find_outside(paths, int(found.group(1))) from None


def find_empty(paths: list[str]) -> ValueError:
    """Names the first record among `paths` whose inputs or targets hold no id."""
    for path in paths:
        for number, record in enumerate(tf.data.TFRecordDataset(path), start=1):
            features = tf.train.Example.FromString(record.numpy()).features.feature
            for key in FEATURES:
                if key not in features or not features[key].int64_list.value:
                    found = ", ".join(sorted(features)) or "none"
                    return ValueError(
                        f"{path}: record {number} has no {key!r} token ids (its features: "
                        f"{found}); expected int64 lists {' and '.join(map(repr, FEATURES))} "
                        "with at least EOS, as t2t-datagen writes them"
                    )
    return ValueError(f"a record without token ids in one of {paths}")


def find_outside(paths: list[str], vocab_size: int) -> ValueError:
    """Names the first record among `paths` holding an id outside [0, vocab_size)."""
    for path in paths:
        for number, example in enumerate(read_records(path), start=1):
            for key in FEATURES:
                bad = [i for i in example[key] if not 0 <= i < vocab_size]
                if bad:
                    return ValueError(
                        f"{path}: record {number}'s {key!r} holds token id {bad[0]}, outside "
                        f"the vocabulary [0, {vocab_size}): the data was made with another "
                        "vocabulary; run t2t-datagen again into an empty --data_dir"
                    )
    return ValueError(f"a token id outside the vocabulary [0, {vocab_size}) in one of {paths}")
