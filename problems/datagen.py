"""What t2t-datagen does: a registered problem's files, with the user's own options."""

import contextlib
import os
from collections.abc import Iterator

import tensorflow as tf
from absl import logging

from t2t_lite import files, run_lock
from t2t_lite.data import problem as problem_lib

# The generation seed of t2t-datagen's default and of a trainer that generates
# missing data: a trainer's own --random_seed never changes the data.
DEFAULT_SEED = 1


@contextlib.contextmanager
def data_dir_lock(data_dir: str, wait_s: float = 0.0) -> Iterator[list[str]]:
    """One writer per data dir -> (in the block) what a dead writer left under
    temporary names, removed first.

    A live owner: with wait_s, waited for (a trainer beside another one that is
    generating the same data waits, then finds it written); past wait_s, or
    without it (a second t2t-datagen), refused with one line naming the owner.
    """
    lock = run_lock.RunLock(data_dir, run_lock.DATAGEN_LOCK_FILE, "written", "--data_dir")
    try:
        lock.acquire()
    except run_lock.RunLockedError as err:
        if not wait_s:
            raise
        logging.info("%s; waiting up to %.0f s for it.", err, wait_s)
        lock.acquire_waiting(wait_s)
    try:
        yield files.remove_incomplete(data_dir)
    finally:
        lock.release()


def generate(
    name: str,
    data_dir: str,
    seed: int = DEFAULT_SEED,
    train_files: list[str] | None = None,
    dev_files: list[str] | None = None,
    vocab_size: int = 0,
    vocab_sample_lines: int = 0,
    language_pair: str = "",
    test_files: list[str] | None = None,
) -> dict[str, int]:
    """Writes problem `name`'s shards into data_dir -> examples per split.

    train_files/dev_files/vocab_size: problems on the user's files (they have
    `configure`); test_files: those that also take a test split (parsing); vocab_sample_lines (0: the problem's default): text problems'
    vocabulary sample. An option the problem does not take is an error.
    """
    prob = problem_lib.get(name)
    files.check_writable_dir(data_dir, "--data_dir")
    with data_dir_lock(data_dir):
        before = set(tf.io.gfile.listdir(data_dir))
        try:
            files_given = {"train": train_files, "dev": dev_files, "test": test_files}
            return _generate(
                prob, data_dir, seed, files_given, vocab_size, vocab_sample_lines, language_pair
            )
        except BaseException:  # a bad line, Ctrl-C: what this run made goes (the lock stays)
            made = set(tf.io.gfile.listdir(data_dir)) - before - {run_lock.DATAGEN_LOCK_FILE}
            for leftover in made:
                path = os.path.join(data_dir, leftover)
                if not tf.io.gfile.isdir(path):
                    tf.io.gfile.remove(path)
            raise


def _generate(
    prob: problem_lib.Problem,
    data_dir: str,
    seed: int,
    files_given: dict[str, list[str] | None],
    vocab_size: int,
    vocab_sample_lines: int,
    language_pair: str = "",
) -> dict[str, int]:
    name = prob.name
    train_files, dev_files, test_files = (files_given[s] for s in ("train", "dev", "test"))
    if language_pair or hasattr(prob, "configure_catalogs"):
        if not hasattr(prob, "configure_catalogs"):
            raise ValueError(f"--language_pair: problem {name!r} reads no gettext catalogs")
        if dev_files or test_files:
            raise ValueError(
                f"--dev_files, --test_files: problem {name!r} makes dev and test from the catalogs"
            )
        if train_files or language_pair:
            prob.configure_catalogs(
                data_dir, train_files or [], language_pair or "en-de", vocab_size
            )
    elif train_files or dev_files or test_files:
        if not hasattr(prob, "configure"):
            raise ValueError(f"--train_files: problem {name!r} takes no files")
        given = (data_dir, train_files or [], dev_files or [], vocab_size)
        if test_files:
            if not getattr(prob, "takes_test_files", False):
                raise ValueError(
                    f"--test_files: problem {name!r} takes no test files (its splits are "
                    "--train_files and --dev_files)"
                )
            prob.configure(*given, test_files)
        else:
            prob.configure(*given)
    if vocab_sample_lines:
        if not hasattr(prob, "vocab_sample_lines"):
            raise ValueError(f"--vocab_sample_lines: problem {name!r} has no vocabulary")
        if vocab_sample_lines < 1:
            raise ValueError(f"--vocab_sample_lines must be >= 1, got {vocab_sample_lines}")
        prob.vocab_sample_lines = vocab_sample_lines
    return prob.generate_data(data_dir, seed=seed)
