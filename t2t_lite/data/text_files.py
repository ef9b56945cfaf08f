"""Reading the user's parallel text: a TSV file or two aligned files, strictly UTF-8."""

from collections.abc import Iterator

from t2t_lite import files


def read_nonempty(path: str) -> list[str]:
    """files.read_lines of a file of the user's data, which must hold some text."""
    lines = files.read_lines(path)
    if not any(line.strip() for line in lines):
        raise ValueError(f"{path}: the file is empty (no line with text)")
    return lines


def read_pairs(paths: list[str]) -> Iterator[tuple[str, str, str]]:
    """(source, target, "file:line") from [a.tsv] (source<TAB>target) or [source, target]."""
    if len(paths) == 1:
        (path,) = paths
        for number, line in enumerate(read_nonempty(path), start=1):
            if not line.strip():
                yield "", "", f"{path}:{number}"  # an empty line: skipped and counted
                continue
            if "\t" not in line:
                raise ValueError(f"{path}:{number}: expected source<TAB>target, found no tab")
            source, target = line.split("\t", 1)
            yield source, target, f"{path}:{number}"
    elif len(paths) == 2:
        sources, targets = read_nonempty(paths[0]), read_nonempty(paths[1])
        if len(sources) != len(targets):
            raise ValueError(
                f"{paths[0]} has {len(sources)} lines but {paths[1]} has {len(targets)}: "
                "source and target files must be aligned line by line"
            )
        for number, (source, target) in enumerate(zip(sources, targets, strict=True), start=1):
            yield source, target, f"{paths[0]}:{number}"
    else:
        raise ValueError(
            f"expected one TSV file or a source file and a target file, got {len(paths)} files"
        )


def read_documents(paths: list[str]) -> Iterator[tuple[str, str, str]]:
    """("", line, "file:line") for every line of one plain text file (Text2Self)."""
    if len(paths) != 1:
        raise ValueError(f"expected one plain text file, got {len(paths)} files")
    for number, line in enumerate(read_nonempty(paths[0]), start=1):
        yield "", line, f"{paths[0]}:{number}"
