"""Reading the user's parallel text: a TSV file or two aligned files, strictly UTF-8.

Every reader streams (nothing holds a whole corpus), through tf.io.gfile.
"""

from collections.abc import Iterator

from t2t_lite import files


def iter_nonempty(path: str) -> Iterator[str]:
    """files.iter_lines of a file of the user's data, which must hold some text.

    The check runs as the file is read: a file without a line of text raises
    at its end, before anything but empty lines has been yielded.
    """
    seen_text = False
    for line in files.iter_lines(path):
        seen_text = seen_text or bool(line.strip())
        yield line
    if not seen_text:
        raise ValueError(f"{path}: the file is empty (no line with text)")


def read_pairs(paths: list[str]) -> Iterator[tuple[str, str, str]]:
    """(source, target, "file:line") from [a.tsv] (source<TAB>target) or [source, target]."""
    if len(paths) == 1:
        (path,) = paths
        for number, line in enumerate(iter_nonempty(path), start=1):
            if not line.strip():
                yield "", "", f"{path}:{number}"  # an empty line: skipped and counted
                continue
            tabs = line.count("\t")
            if tabs != 1:
                found = "no tab" if not tabs else f"{tabs} tabs (a tab inside the text?)"
                raise ValueError(f"{path}:{number}: expected source<TAB>target, found {found}")
            source, target = line.split("\t")
            yield source, target, f"{path}:{number}"
    elif len(paths) == 2:
        yield from _aligned(paths[0], paths[1])
    else:
        raise ValueError(
            f"expected one TSV file or a source file and a target file, got {len(paths)} files"
        )


def _aligned(source_path: str, target_path: str) -> Iterator[tuple[str, str, str]]:
    sources, targets = iter_nonempty(source_path), iter_nonempty(target_path)
    number = 0
    while True:
        source, target = next(sources, None), next(targets, None)
        if source is None or target is None:
            if source is None and target is None:
                return
            # Count what is left of the longer file for the message.
            rest = sum(1 for _ in (targets if source is None else sources))
            counts = (number, number + 1 + rest) if source is None else (number + 1 + rest, number)
            raise ValueError(
                f"{source_path} has {counts[0]} lines but {target_path} has {counts[1]}: "
                "source and target files must be aligned line by line"
            )
        number += 1
        yield source, target, f"{source_path}:{number}"


def read_documents(paths: list[str]) -> Iterator[tuple[str, str, str]]:
    """("", line, "file:line") for every line of one plain text file (Text2Self)."""
    if len(paths) != 1:
        raise ValueError(f"expected one plain text file, got {len(paths)} files")
    for number, line in enumerate(iter_nonempty(paths[0]), start=1):
        yield "", line, f"{paths[0]}:{number}"
