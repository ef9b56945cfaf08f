"""Checkpoint averaging (the paper's last 5 or 20 checkpoints), key by key.

Every variable of the checkpoints is read by its checkpoint key, so model
weights, wherever the object graph puts them, and optimizer slots are all
averaged; the newest checkpoint's object graph is written with the averages,
so the result restores exactly like the checkpoints it came from.
"""

import os

import numpy as np
import tensorflow as tf
from absl import logging
from google.protobuf import message
from tensorflow.core.protobuf import tensor_bundle_pb2

from t2t_lite import checkpoints, files, run_dir, run_lock, stamp

# Beside an average: the checkpoints it was made of (`depends_on`, in `stamp`'s form).
SOURCES_SUFFIX = ".sources.json"
# How long an averaging waits for another one into the same directory to finish.
LOCK_WAIT_S = 600.0


def select(model_dir: str, num_last: int, explicit: list[str]) -> list[str]:
    """The checkpoints to average, oldest first: the explicit list, or model_dir's last N."""
    if explicit:
        seen = set()
        for path in explicit:
            if files.absolute(path) in seen:
                raise ValueError(f"--checkpoints names {path!r} twice; name each checkpoint once")
            seen.add(files.absolute(path))
            if not tf.io.gfile.exists(path + ".index"):
                raise FileNotFoundError(f"--checkpoints: no checkpoint at {path!r}")
        return sorted(explicit, key=checkpoints.step_of)
    if num_last < 1:
        raise ValueError(f"--num_last_checkpoints must be >= 1, got {num_last}")
    available = run_dir.kept_checkpoints(model_dir)
    if len(available) < num_last:
        raise ValueError(
            f"--num_last_checkpoints={num_last}, but {model_dir!r} holds {len(available)} "
            "checkpoint(s): a run writes one every --save_checkpoints_steps (by default every "
            "--local_eval_frequency steps) and at its last step, and keeps the newest "
            "--keep_checkpoint_max; checkpoint more often (or keep more) to average more"
        )
    return available[-num_last:]


def default_output(model_dir: str, paths: list[str]) -> str:
    """Where the average of `paths` goes by default: <model_dir>/averaged/model.ckpt-<newest step>."""
    return os.path.join(
        model_dir,
        run_dir.AVERAGED_DIR,
        f"{checkpoints.CHECKPOINT_NAME}-{checkpoints.step_of(paths[-1])}",
    )


def _signature(reader) -> dict[str, tuple[list[int], tf.DType]]:
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    return {key: (shapes[key], dtypes[key]) for key in shapes}


def check_compatible(paths: list[str], readers: list) -> dict[str, tuple[list[int], tf.DType]]:
    """Every checkpoint has the newest one's variables, shapes and dtypes; else an error."""
    newest = _signature(readers[-1])
    for path, reader in zip(paths[:-1], readers[:-1], strict=True):
        other = _signature(reader)
        for key in sorted(set(newest) | set(other)):
            if key not in other or key not in newest:
                has, lacks = (paths[-1], path) if key not in other else (path, paths[-1])
                raise ValueError(
                    f"variable {key!r} is in {has} but not in {lacks}: "
                    "checkpoints of different models cannot be averaged"
                )
            if other[key] != newest[key]:
                raise ValueError(
                    f"variable {key!r} is {_describe(other[key])} in {path} but "
                    f"{_describe(newest[key])} in {paths[-1]}: "
                    "checkpoints of different models cannot be averaged"
                )
    return newest


def _describe(spec: tuple[list[int], tf.DType]) -> str:
    shape, dtype = spec
    return f"{dtype.name}{list(shape)}"


def average(paths: list[str], output_path: str) -> None:
    """Writes the average of `paths` (oldest first) to the checkpoint prefix output_path.

    Floating-point variables are summed in float64 and cast back to their
    dtype; other variables (step, optimizer iterations) come from the newest.
    Replaces an existing checkpoint at output_path only when the new one is
    complete (`write_replacing`).
    """
    readers = [checkpoints.reader(path) for path in paths]
    variables = check_compatible(paths, readers)
    names, tensors = [], []
    for key, (_, dtype) in sorted(variables.items()):
        if dtype.is_floating:
            total = sum(
                np.asarray(_read(r, path, key), np.float64)
                for r, path in zip(readers, paths, strict=True)
            )
            value = tf.cast(total / len(readers), dtype)
        else:
            value = tf.constant(_read(readers[-1], paths[-1], key), dtype)
        names.append(key)
        tensors.append(value)
    directory = os.path.dirname(files.absolute(output_path))
    files.check_writable_dir(directory, "--output_path's directory")
    # Two averagings into one directory (two t2t-compare tables over one run)
    # would remove each other's shards and temporaries: one writes at a time.
    lock = run_lock.RunLock(directory, run_lock.AVERAGE_LOCK_FILE, "averaged into", "--output_path")
    lock.acquire_waiting(LOCK_WAIT_S)
    try:
        files.remove_incomplete(directory)  # of any step's average
        record = output_path + SOURCES_SUFFIX
        if tf.io.gfile.exists(record):  # a kill before the new record leaves none, not the old
            tf.io.gfile.remove(record)
        write_replacing(output_path, names, tensors)
        stamp.keep(record, depends_on(paths), {})
        # The directory's "checkpoint" file names it, so the directory works as
        # a --checkpoint_path too.
        name = os.path.basename(output_path)
        files.write_atomically(
            os.path.join(directory, "checkpoint"),
            f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n',
        )
    finally:
        lock.release()


def depends_on(paths: list[str]) -> dict:
    """What an average is made of: each source checkpoint's name and fingerprint
    (a retrained run reuses names, not values), oldest first."""
    return {"sources": [[os.path.basename(path), checkpoints.fingerprint(path)] for path in paths]}


def _legacy_sources(old: dict) -> tuple[dict, dict] | None:
    """An average's record written before `stamp`: {"sources": [[name, fingerprint], ...]}."""
    return ({"sources": old["sources"]}, {}) if set(old) == {"sources"} else None


def is_average_of(output_path: str, paths: list[str]) -> bool:
    """Whether the checkpoint at output_path is the average of exactly `paths`, as
    `average` recorded beside it (no record, or a damaged one: unknown, so False)."""
    if not tf.io.gfile.exists(output_path + ".index"):
        return False
    record = output_path + SOURCES_SUFFIX
    try:
        return stamp.kept_body(record, depends_on(paths), _legacy_sources, output_path) is not None
    except ValueError as err:
        logging.warning("%s; averaging again.", err)
        return False


def live_shard_count(output_path: str) -> int | None:
    """The shard count the checkpoint index at prefix output_path names (None: no index).

    The index is a table whose first entry, under the empty key, is the
    bundle's header; the writer stores it uncompressed, so its bytes are
    read directly. An index that cannot be parsed is a ValueError.
    """
    index = output_path + ".index"
    if not tf.io.gfile.exists(index):
        return None
    with tf.io.gfile.GFile(index, "rb") as f:
        head = f.read(4096)
    try:
        shared, at = _varint(head, 0)
        key_length, at = _varint(head, at)
        value_length, at = _varint(head, at)
        if shared or key_length:
            raise ValueError("the first entry is not the header")
        value = head[at : at + value_length]
        header = tensor_bundle_pb2.BundleHeaderProto.FromString(value)
    except (IndexError, ValueError, message.DecodeError) as err:
        raise ValueError(
            f"cannot replace {output_path}: its index {index} cannot be read ({err}); "
            "choose another --output_path"
        ) from None
    return header.num_shards


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """A little-endian base-128 integer at data[at:] -> (value, the offset after it)."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def write_replacing(output_path: str, names: list[str], tensors: list[tf.Tensor]) -> None:
    """Writes a checkpoint at prefix output_path; the rename of its .index is the commit.

    The live checkpoint's shard count is read from its index; data files of
    any other count are a killed write's and are removed first. The new data
    files take another count, so they never overwrite the live checkpoint's;
    the index is renamed over the old one last, and only then are the old
    count's files removed. A kill at any moment leaves the old checkpoint or
    the new one readable, and the next write cleans what it left. (The
    rename is atomic on local and HDFS storage; on object stores such as
    gs:// it is a copy, and a kill during it can still leave no index.)
    """
    live = live_shard_count(output_path)
    for path in tf.io.gfile.glob(f"{output_path}.data-?????-of-?????"):
        if live is None or not path.endswith(f"-of-{live:05d}"):
            tf.io.gfile.remove(path)  # a killed write's: the live index does not use it
    count = next((c for c in (1, 2) if c != live and c <= len(names)), None)
    if count is None:
        raise ValueError(
            f"cannot replace {output_path} in place: it holds a single variable; "
            "choose another --output_path"
        )
    temporary = files.incomplete_name(output_path)
    try:
        _write_shards(temporary, output_path, names, tensors, count)
    except Exception:  # a full disk: this run's temporary files go
        for path in tf.io.gfile.glob(f"{temporary}*"):
            tf.io.gfile.remove(path)
        raise
    for path in tf.io.gfile.glob(f"{output_path}.data-?????-of-?????"):
        if not path.endswith(f"-of-{count:05d}"):
            tf.io.gfile.remove(path)


def _write_shards(
    temporary: str, output_path: str, names: list[str], tensors: list[tf.Tensor], count: int
) -> None:
    """`write_replacing`'s writes: `count` shards under `temporary`, renamed data first."""
    parts = [f"{temporary}-part{i}" for i in range(count)]
    for i, part in enumerate(parts):  # shard i holds every count-th tensor
        tf.raw_ops.SaveV2(
            prefix=part,
            tensor_names=names[i::count],
            shape_and_slices=[""] * len(names[i::count]),
            tensors=tensors[i::count],
        )
    tf.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=parts, destination_prefix=temporary)
    for shard in range(count):
        suffix = f".data-{shard:05d}-of-{count:05d}"
        tf.io.gfile.rename(temporary + suffix, output_path + suffix, overwrite=True)
    tf.io.gfile.rename(temporary + ".index", output_path + ".index", overwrite=True)


def _read(reader, path: str, key: str) -> np.ndarray:
    """One variable of a checkpoint; a damaged one (truncated data) is a ValueError naming it."""
    try:
        value = reader.get_tensor(key)
    except checkpoints.UNREADABLE as err:
        raise ValueError(f"checkpoint {path} cannot be read ({key}): {err}") from None
    if np.issubdtype(np.asarray(value).dtype, np.floating) and not np.isfinite(value).all():
        raise ValueError(
            f"checkpoint {path} holds non-finite values (NaN or inf) in {key}; "
            "leave it out (--checkpoints) or average older ones"
        )
    return value


def run(model_dir: str, num_last: int, explicit: list[str], output_path: str = "") -> str:
    """What t2t-avg-checkpoints does; returns the written checkpoint prefix.

    Default output: <model_dir>/averaged/model.ckpt-<newest step>. The output
    may not sit beside model_dir's own checkpoints (it would rewrite the
    training run's checkpoint list).
    """
    if not model_dir and not (explicit and output_path):
        raise ValueError("give --model_dir, or --checkpoints with --output_path")
    attempt = 1
    while True:
        paths = select(model_dir, num_last, explicit)
        target = output_path or default_output(model_dir, paths)
        _check_output(model_dir, target, paths)
        try:
            average(paths, target)
            return target
        except (*checkpoints.UNREADABLE, FileNotFoundError):
            # A trainer beside us keeps only its newest checkpoints: one chosen
            # here may have been deleted during the read; choose again.
            pruned = [path for path in paths if not run_dir.still_there(path)]
            if explicit or not pruned or attempt == run_dir.READ_ATTEMPTS:
                raise
        logging.warning(
            "Checkpoint %s was deleted while it was read (a running trainer keeps only its "
            "newest); choosing the last %d again.",
            pruned[0],
            num_last,
        )
        attempt += 1


def newest_average(model_dir: str, last: int) -> str:
    """The average of the run's last `last` checkpoints: the one written before
    when its record names exactly those checkpoints (a rerun of a table
    neither rewrites it nor, its files untouched, decodes it again), else
    a new one (an average of another count, e.g. by t2t-avg-checkpoints, or
    of checkpoints since rewritten, is not reused)."""
    sources = select(model_dir, last, [])
    target = default_output(model_dir, sources)
    if is_average_of(target, sources):
        return target
    return run(model_dir, last, [])


def _check_output(model_dir: str, output_path: str, inputs: list[str]) -> None:
    """The output may not be an input, nor sit beside model_dir's checkpoints or in
    another run's."""
    if files.absolute(output_path) in {files.absolute(path) for path in inputs}:
        raise ValueError(
            f"--output_path {output_path!r} is one of the checkpoints averaged; write it elsewhere"
        )
    directory = os.path.dirname(files.absolute(output_path))
    if model_dir and files.absolute(model_dir).rstrip("/") == directory:
        raise ValueError(
            f"--output_path {output_path!r} is in --model_dir; write it elsewhere "
            "(default: <model_dir>/averaged/)"
        )
    if run_dir.is_run(directory):  # its checkpoint list must stay its own
        raise ValueError(
            f"--output_path {output_path!r} is in a training run's directory ({directory}); "
            "write it elsewhere (default: <model_dir>/averaged/)"
        )
