"""File helpers: atomic text writes, writable-directory checks, leftovers of killed runs."""

import contextlib
import itertools
import json
import math
import os
import socket
import time
from collections.abc import Iterator

import tensorflow as tf
from absl import logging


def _process_space() -> str:
    """Where a pid names one process: the host, and on Linux its PID namespace
    (containers that share a host name and a filesystem each number their
    processes from 1, so a pid from another one says nothing here)."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return socket.gethostname()
    return f"{socket.gethostname()}.pid{namespace}"


HOST = _process_space()
READ_CHUNK_BYTES = 1 << 24


def write_bytes_atomically(path: str, data: bytes) -> None:
    """Writes data to path (any TF filesystem) through a temporary file renamed into place.

    The temporary name is this writer's own (`temporary_name`), so writers of
    one path never write into or rename each other's file: the last rename
    wins and every reader sees one whole version. A local file is flushed to
    the disk before the rename, so a crash cannot leave a renamed empty file.
    """
    directory = os.path.dirname(path)
    if directory:
        tf.io.gfile.makedirs(directory)
    if directory and directory not in _swept:
        # Killed writers' temporary files (their processes are gone), of any path
        # there: one listing per directory and process, not one per write (on
        # gs:// a listing is a network call).
        remove_incomplete(directory)
        _swept.add(directory)
    temporary = temporary_name(path)
    with removed_on_failure([temporary]):
        with tf.io.gfile.GFile(temporary, "wb") as f:
            f.write(data)
        if not scheme(temporary):
            _fsync(temporary)
        tf.io.gfile.rename(temporary, path, overwrite=True)


# What is being written lives under a name with INCOMPLETE and its writer's
# owner_tag, and is renamed when complete: a file (`temporary_name`), a data
# shard, an average's files, an export's or a conversion's directory
# (`incomplete_name`). A killed writer's are removed by `remove_incomplete`.
INCOMPLETE = ".incomplete-"
# The single-file writes' name before INCOMPLETE; still swept.
_LEGACY_TEMPORARY = ".tmp-"
_temporaries = itertools.count()
_swept: set[str] = set()  # directories whose leftovers this process removed


def temporary_name(path: str) -> str:
    """<path>.incomplete-<owner_tag><n>: a name no other writer (process, host or
    thread) uses, for one write of `path`."""
    return f"{incomplete_name(path)}{next(_temporaries)}"


def incomplete_name(path: str, hidden: bool = False) -> str:
    """This writer's name for `path` while it is written: <path>.incomplete-<owner_tag>,
    or with `hidden`, <directory>/.incomplete-<owner_tag><name> (a directory of
    versions that a server lists, where a partial name must not look like one)."""
    if not hidden:
        return f"{path}{INCOMPLETE}{owner_tag()}"
    directory, name = os.path.split(path)
    return os.path.join(directory, f"{INCOMPLETE}{owner_tag()}{name}")


def remove_incomplete(directory: str) -> list[str]:
    """Removes what killed writers left incomplete in `directory` (`INCOMPLETE`
    names of processes that are gone) -> removed."""
    return remove_leftovers(directory, (INCOMPLETE, _LEGACY_TEMPORARY), anywhere=True)


def _fsync(path: str) -> None:
    """Flushes a local file's data to the disk (local by nature: gfile has no fsync)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def removed_on_failure(paths: list[str]) -> Iterator[None]:
    """Removes the temporary `paths` that exist when the block fails (a full disk,
    a generator's error), then re-raises: no unfinished file is left behind."""
    try:
        yield
    except Exception:
        for path in paths:
            if tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)
        raise


@contextlib.contextmanager
def made_dir_removed_on_failure(path: str) -> Iterator[None]:
    """A directory the block creates is removed again if the block fails while
    it is still empty (a refused export leaves no empty export dir behind)."""
    existed = tf.io.gfile.exists(path)
    try:
        yield
    except BaseException:
        if not existed and tf.io.gfile.isdir(path) and not tf.io.gfile.listdir(path):
            tf.io.gfile.rmtree(path)
        raise


def write_atomically(path: str, text: str) -> None:
    """Writes UTF-8 text to path through a temporary file renamed into place."""
    write_bytes_atomically(path, text.encode("utf-8"))


def write_output(path: str, text: str) -> None:
    """A program's output file: written atomically, except a local pipe or device
    (a FIFO, /dev/stdout), which is written into as it is: a rename would put a
    regular file in its place and leave its reader waiting."""
    if not scheme(path) and os.path.exists(path) and not os.path.isfile(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return
    write_atomically(path, text)


def _reason(err: Exception) -> str:
    return getattr(err, "message", None) or getattr(err, "strerror", None) or str(err)


def check_writable_dir(path: str, flag: str) -> None:
    """Creates directory `path` if needed; a ValueError naming `flag` if it cannot hold files.

    Catches a path that is a regular file, lies under one, or cannot be
    written (a probe file is created and removed), on any TF filesystem.
    """
    try:
        if tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path):
            raise ValueError(f"{flag} {path!r} is a file, not a directory")
        tf.io.gfile.makedirs(path)
        probe = os.path.join(path, f".write-probe-{HOST}-{os.getpid()}")
        with tf.io.gfile.GFile(probe, "w") as f:
            f.write("")
        tf.io.gfile.remove(probe)
    except (tf.errors.OpError, OSError) as err:
        raise ValueError(f"{flag} {path!r} is not a writable directory: {_reason(err)}") from None


def owner_tag() -> str:
    """ "<pid>@<host>@", for names of temporary files that `remove_leftovers` may clean up."""
    return f"{os.getpid()}@{HOST}@"


def process_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_start_time(pid: int) -> float | None:
    """When the process with this pid started (seconds since the epoch), if /proc says."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after "pid (comm)"
        with open("/proc/stat", encoding="utf-8") as f:
            boot = next(float(line.split()[1]) for line in f if line.startswith("btime "))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _left_by_the_dead(name: str, prefix: str, path: str, max_age_s: float, anywhere: bool) -> bool:
    """Whether `name` is `prefix`<owner_tag>... (anywhere in it, with `anywhere`) of
    an abandoned writer."""
    start = name.find(prefix) if anywhere else (0 if name.startswith(prefix) else -1)
    return start >= 0 and _abandoned(name[start + len(prefix) :], path, max_age_s)


def _abandoned(tag: str, path: str, max_age_s: float) -> bool:
    """Whether an `owner_tag` names a process that is gone (its pid free, or now a
    process started after the file was written), or, from another host or
    PID namespace, a file older than max_age_s."""
    pid, host = (tag.split("@") + ["", ""])[:2]
    if not pid.isdigit() or tag.count("@") < 2:
        return False  # not a name this project made
    try:
        written = tf.io.gfile.stat(path).mtime_nsec / 1e9
    except tf.errors.OpError:
        return False
    if host == HOST:
        if int(pid) == os.getpid():
            return False
        if not process_alive(int(pid)):
            return True
        started = process_start_time(int(pid))  # the pid reused since: gone too
        return started is not None and started > written + 1
    return time.time() - written > max_age_s


def remove_leftovers(
    directory: str,
    prefix: str | tuple[str, ...],
    max_age_s: float = 24 * 3600,
    anywhere: bool = False,
) -> list[str]:
    """Removes `prefix`<owner_tag>... files and directories left by killed runs -> removed.

    Only names made with `owner_tag` are considered: one from this host whose
    process is gone, or from another host and older than max_age_s. With
    `anywhere`, `prefix` may follow any start (`<any name>prefix<owner_tag>...`).
    Several prefixes: one listing of the directory for all.
    """
    removed = []
    if not tf.io.gfile.isdir(directory):
        return removed
    prefixes = (prefix,) if isinstance(prefix, str) else prefix
    for name in tf.io.gfile.listdir(directory):
        name = name.rstrip("/")
        path = os.path.join(directory, name)
        if any(_left_by_the_dead(name, one, path, max_age_s, anywhere) for one in prefixes):
            if tf.io.gfile.isdir(path):
                tf.io.gfile.rmtree(path)
            else:
                tf.io.gfile.remove(path)
            logging.info("Removed %s, left by an interrupted run.", path)
            removed.append(path)
    return removed


def strict_json(data: dict) -> str:
    """JSON with a non-finite number written as null (NaN and Infinity are not JSON)."""

    def clean(value):
        if isinstance(value, dict):
            return {key: clean(v) for key, v in value.items()}
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return value

    return json.dumps(clean(data), indent=2, sort_keys=True, allow_nan=False)


def iter_lines(path: str, errors: list[str] | None = None) -> Iterator[str]:
    """A UTF-8 text file's lines without line ends, streamed through tf.io.gfile.

    A leading byte-order mark is dropped (an encoding marker, not text). A
    line that is not UTF-8, holds a NUL byte, or holds a carriage return
    inside it (a file with CR-only line ends reads as one such line) raises
    ValueError naming file and line; given an `errors` list, it becomes ""
    and that message is appended instead.
    """
    if tf.io.gfile.isdir(path):
        raise ValueError(f"{path}: a directory, not a text file")
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"{path}: no such file")

    def decode(raw: bytes, number: int) -> str:
        try:
            line = raw.decode("utf-8").rstrip("\r")
            problem = _unreadable_text(line)
        except UnicodeDecodeError as err:
            problem = f"not valid UTF-8 ({err.reason})"
        if problem:
            message = f"{path}:{number}: {problem}"
            if errors is None:
                raise ValueError(message) from None
            errors.append(message)
            return ""
        return line.removeprefix("\ufeff") if number == 1 else line

    number = 0
    rest = b""
    with tf.io.gfile.GFile(path, "rb") as f:
        while chunk := f.read(READ_CHUNK_BYTES):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()  # an unfinished line
            for raw in lines:
                number += 1
                yield decode(raw, number)
    if rest:
        yield decode(rest, number + 1)


def _unreadable_text(line: str) -> str:
    """Why a decoded line is not a line of text ("" when it is)."""
    if "\x00" in line:
        return "holds a NUL byte; expected a text line"
    if "\r" in line:
        return "holds a carriage return inside the line; expected \\n line ends (CR-only files?)"
    return ""


def read_lines(path: str, errors: list[str] | None = None) -> list[str]:
    """iter_lines as a list."""
    return list(iter_lines(path, errors))


def read_text(path: str) -> str:
    """A whole UTF-8 file through tf.io.gfile, a leading byte-order mark dropped.

    FileNotFoundError names a missing file; ValueError names a directory, and
    the file and line of bytes that are not UTF-8 or of a NUL byte.
    """
    if tf.io.gfile.isdir(path):
        raise ValueError(f"{path}: a directory, not a file")
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    with tf.io.gfile.GFile(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise ValueError(f"{path}:{line}: not valid UTF-8 ({err.reason})") from None
    if (nul := text.find("\x00")) >= 0:
        line = text.count("\n", 0, nul) + 1
        raise ValueError(f"{path}:{line}: holds a NUL byte; expected text")
    return text.removeprefix("\ufeff")


def files_under(directory: str, wanted) -> list[str]:
    """Every file under `directory` whose name `wanted(name)` accepts, sorted.

    On the local disk a folder reached again through a link (a link loop, or
    two links to one folder) is read once, with a warning.
    """
    found = []
    seen = {os.path.realpath(directory)} if "://" not in directory else set()
    for folder, subfolders, names in tf.io.gfile.walk(directory):
        if "://" not in folder:  # a link loop would be walked until the path is too long
            kept = []
            for name in subfolders:
                real = os.path.realpath(os.path.join(folder, name))
                if real in seen:
                    link = os.path.join(folder, name)
                    logging.warning("%s: a link to a folder already read; skipped.", link)
                    continue
                seen.add(real)
                kept.append(name)
            subfolders[:] = kept  # walk is top-down: only these are entered
        found += [os.path.join(folder, name) for name in names if wanted(name)]
    return sorted(found)


def scheme(path: str) -> str:
    """A path's filesystem: "gs", "hdfs", "ram", ...; "" for a local path ("file" too)."""
    name = path.split("://", 1)[0] if "://" in path else ""
    return "" if name == "file" else name


def absolute(path: str) -> str:
    """A local path made absolute; a URL (gs://, hdfs://, ram://) as it is."""
    return path if "://" in path else os.path.abspath(path)


# Filesystems whose rename moves a whole directory (atomically on local disks
# and HDFS; object by object, but complete when it returns, on GCS).
DIRECTORY_RENAME = ("", "gs", "hdfs", "viewfs")


def remove_tree(path: str) -> None:
    """Removes a directory tree; where rmtree fails (ram:// lists directory
    entries, such as SavedModel's assets.extra, that it cannot delete), file
    by file, leaving only such directory entries, which hold nothing.
    """
    try:
        tf.io.gfile.rmtree(path)
    except tf.errors.OpError:
        for directory, _, names in tf.io.gfile.walk(path, topdown=False):
            for name in names:
                if tf.io.gfile.exists(os.path.join(directory, name)):
                    tf.io.gfile.remove(os.path.join(directory, name))
            with contextlib.suppress(tf.errors.OpError):  # a directory entry without an object
                tf.io.gfile.remove(directory)


def rename_dir(source: str, destination: str, last: tuple[str, ...] = ()) -> None:
    """Moves a directory into place: one rename where the filesystem renames
    directories (DIRECTORY_RENAME); elsewhere (ram://, s3://, ...) a
    file-by-file copy, then removal of `source`, with the files named in
    `last` copied last, so that a reader waiting for one of them (TF Serving
    for saved_model.pb) finds a complete tree.
    """
    if scheme(source) in DIRECTORY_RENAME:
        tf.io.gfile.rename(source, destination)
        return
    copies, final = [], []
    for directory, _, names in tf.io.gfile.walk(source):
        relative = directory[len(source) :].lstrip("/")
        tf.io.gfile.makedirs(os.path.join(destination, relative))
        for name in names:
            pair = (os.path.join(directory, name), os.path.join(destination, relative, name))
            (final if name in last else copies).append(pair)
    for origin, target in copies + final:
        if tf.io.gfile.exists(origin) and not tf.io.gfile.isdir(origin):  # ram:// lists ghosts
            tf.io.gfile.copy(origin, target, overwrite=False)
    remove_tree(source)
