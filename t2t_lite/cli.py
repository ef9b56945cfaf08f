"""Helpers shared by the absl binaries: user-facing errors and reports."""

import sys
from collections.abc import Callable

from absl import logging

from t2t_lite.data import tfrecord
from t2t_lite.training import trainer

# Errors caused by flags, files or data: reported in one line, no traceback.
USER_ERRORS = (
    ValueError,
    KeyError,
    FileNotFoundError,
    tfrecord.CorruptRecordError,
    trainer.NonFiniteLossError,
)


def run(program: str, fn: Callable[[], None]) -> None:
    """Calls fn; a user error prints "program: error: message" and exits 1."""
    try:
        fn()
    except USER_ERRORS as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        logging.debug("details", exc_info=True)
        print(f"{program}: error: {message}", file=sys.stderr)
        sys.exit(1)


def format_metrics(results: dict[str, dict[str, float]]) -> str:
    """A small table: one row per split."""
    lines = [f"{'split':<8} {'examples':>8} {'loss':>8} {'accuracy':>9} {'seq_acc':>8}"]
    for split, m in results.items():
        lines.append(
            f"{split:<8} {m['examples']:>8d} {m['loss']:>8.4f} {m['accuracy']:>9.4f} "
            f"{m['sequence_accuracy']:>8.4f}"
        )
    return "\n".join(lines)
