"""What a kept result depends on: one form on disk, one comparison.

t2t_lite keeps results to skip work later: a finished run's figures
(metrics.json), a decode's figures (greedy_<split>.json, a parse's EVALB
figures), a table's records (--records), an average of checkpoints, a
CTranslate2 conversion. Each is valid only while everything it was made from
is unchanged. Each keeps that as one JSON object beside its result,

  {"depends_on": {name: value, ...}, ...the result...}

and each reuse asks `differs(kept, wanted)`: the names whose values are not
the ones wanted now (a name the kept object lacks differs). The caller
decides what a difference means (make the result again, or refuse a run
directory made with other flags); `describe` names the differences in one
line. The parts shared by several kinds of result are made here:
`checkpoint` (its name and content), `data` (a data dir and its files' state),
`decode` (a search's resolved settings).

Data is stamped two ways, on purpose. Results that live beside their data
dir (metrics.json, decodes, parses) depend on the dir and its files' names,
sizes and write times (`data`, `Problem.data_stamp`): cheap to check on
every read, and data regenerated in place is other data. Records
(`reproduction/records.py`) outlive the dir they were made from and are
read on other machines, where paths and write times differ: they depend on
the files' bytes (`Problem.data_fingerprint`, kept under the name `data`),
so the same data anywhere matches, at the cost of reading it.

Results kept before this form (metrics.json's "source", a decode's key
fields at the top level, an average's "sources") read through a `legacy`
function that turns the old object into the new form (`read`).
"""

import hashlib
import json
import os
from collections.abc import Callable, Mapping

import tensorflow as tf
from absl import logging

from t2t_lite import checkpoints, files
from t2t_lite import hparams as hparams_lib

DEPENDS_ON = "depends_on"
_NONE = object()  # a name one side lacks

# legacy(an old object) -> (depends_on, body), or None when the object is not
# of that old form either.
Legacy = Callable[[dict], tuple[dict, dict] | None]


def normalized(values: Mapping) -> dict:
    """`values` as it reads back from JSON (tuples become lists, keys strings), so
    a wanted object compares equal to the same object kept on disk."""
    return json.loads(json.dumps(dict(values), sort_keys=True))


def checkpoint(path: str) -> dict:
    """What a result made from the checkpoint at prefix `path` depends on: its name
    and its content (`checkpoints.fingerprint`: a retrained run reuses names, not
    values)."""
    return {
        "checkpoint": os.path.basename(path),
        "checkpoint_fingerprint": checkpoints.fingerprint(path),
    }


def decode(hp) -> dict:
    """What a result decoded with the resolved settings `hp` (a DecodeHParams)
    depends on: every setting's value, so one search spelled two ways is one
    search, and a changed default is another."""
    return normalized(hparams_lib.to_dict(hp))


def data(problem, data_dir: str) -> dict:
    """What a result made from data_dir's files of `problem` depends on: the
    directory and its files' names, sizes and write times (`Problem.data_stamp`:
    regenerated data is other data)."""
    return {"data_dir": files.absolute(data_dir), "data_stamp": problem.data_stamp(data_dir)}


def differs(kept: Mapping | None, wanted: Mapping) -> list[str]:
    """The names whose kept value is not the wanted one (sorted): a name on one side
    only differs too (a result of the best checkpoint is not the last one's);
    every name when nothing is kept."""
    wanted = normalized(wanted)
    if kept is None:
        return sorted(wanted)
    names = set(kept) | set(wanted)
    return sorted(name for name in names if kept.get(name, _NONE) != wanted.get(name, _NONE))


def describe(kept: Mapping | None, wanted: Mapping, names: list[str]) -> str:
    """'name: kept K, now W; ...' for `names` (a log line or an error's middle)."""
    kept = kept or {}
    wanted = normalized(wanted)

    def shown(values: Mapping, name: str) -> str:
        text = repr(values[name]) if name in values else "(none)"
        return text if len(text) <= 80 else text[:77] + "..."

    return "; ".join(
        f"{name}: kept {shown(kept, name)}, now {shown(wanted, name)}" for name in names
    )


def digest(depends_on: Mapping) -> str:
    """A short name for a depends_on object (16 hex digits of its JSON's SHA-256):
    results kept side by side in one directory, each under its own."""
    text = json.dumps(normalized(depends_on), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read(
    path: str, legacy: Legacy | None = None, kind: str = "a kept result"
) -> tuple[dict, dict] | None:
    """(depends_on, body) of the kept result at `path`; None where there is none.

    A file of an older form is read through `legacy`; a file that is neither
    (damaged, or not a kept result) is a ValueError naming it: "<path>: not
    <kind> (why)".
    """
    if not tf.io.gfile.exists(path):
        return None
    if tf.io.gfile.isdir(path):
        raise ValueError(f"{path}: not {kind} (a directory)")
    try:
        data = json.loads(files.read_text(path))
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        if DEPENDS_ON in data:
            depends_on = data.pop(DEPENDS_ON)
            if not isinstance(depends_on, dict):
                raise TypeError(f"its {DEPENDS_ON} is not an object")
            return depends_on, data
        old = legacy(data) if legacy is not None else None
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path}: not {kind} ({err})") from None
    if old is None:
        raise ValueError(f"{path}: not {kind} (it has no {DEPENDS_ON})")
    return old


def kept_body(
    path: str, wanted: Mapping, legacy: Legacy | None = None, what: str = ""
) -> dict | None:
    """The body of the kept result at `path` when it depends on exactly `wanted`,
    else None (none kept, or made from something else: logged, naming what
    differs). `what` names the result in the log line (default: the path)."""
    found = read(path, legacy)
    if found is None:
        return None
    depends_on, body = found
    names = differs(depends_on, wanted)
    if names:
        logging.info("%s: made again; %s.", what or path, describe(depends_on, wanted, names))
        return None
    return body


def encode(depends_on: Mapping, body: Mapping) -> str:
    """The kept file's text: {"depends_on": ..., **body}, strict JSON (no NaN), and
    a final newline."""
    return files.strict_json({DEPENDS_ON: normalized(depends_on), **body}) + "\n"


def keep(path: str, depends_on: Mapping, body: Mapping) -> None:
    """Writes the kept result atomically, unless the file already holds exactly it
    (a table printed again leaves its files, and their write times, alone)."""
    data = encode(depends_on, body).encode("utf-8")
    if tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path, "rb") as f:
            if f.read() == data:
                return
    files.write_bytes_atomically(path, data)
