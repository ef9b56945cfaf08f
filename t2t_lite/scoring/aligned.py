"""Two line-aligned files scored together, as the scoring programs take them."""

from t2t_lite import files


def score_files(first: tuple[str, str], second: tuple[str, str], score):
    """score(lines of first, lines of second) for two line-aligned files, each
    given as (flag name, path); a ValueError (misaligned, unscorable) names both
    flags and files."""
    (first_flag, first_path), (second_flag, second_path) = first, second
    try:
        return score(files.read_lines(first_path), files.read_lines(second_path))
    except ValueError as err:
        raise ValueError(
            f"--{first_flag} {first_path}, --{second_flag} {second_path}: {err}"
        ) from None
