"""Atomic text writes: a reader sees the old file or the whole new one, never half."""

import os


def write_atomically(path: str, text: str) -> None:
    """Writes text to path through a temporary file renamed into place."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
