"""Helpers shared by the absl binaries: user-facing errors and reports."""

import atexit
import errno
import gc
import os
import re
import signal
import sys
import threading
from collections.abc import Callable

from absl import app, flags, logging


class UserError(RuntimeError):
    """A failure the user can act on that is not a bad value (e.g. training diverged)."""


def signal_status(signal_name: str) -> int:
    """The exit status of a run a signal stopped: 128 + the signal's number, as the
    shell reports a process that signal ended. A name that is not a signal's (a
    signal on another worker) reads as SIGTERM."""
    known = signal_name in signal.Signals.__members__
    return 128 + signal.Signals[signal_name if known else "SIGTERM"].value


class Interrupted(Exception):
    """A run stopped as asked (SIGTERM, SIGINT) after saving its state; the message says where.

    The program exits with 128 + the signal's number (143 for SIGTERM, 130 for
    SIGINT), the shell's status for a process a signal ended: the state is saved,
    but the run is unfinished, so `&&`, a job queue or a scheduler's restart
    policy must not read it as done. signal_name: "SIGTERM", "SIGINT", or another
    description (a signal on another worker), read as SIGTERM."""

    def __init__(self, message: str, signal_name: str):
        super().__init__(message)
        self.status = signal_status(signal_name)


# Errors caused by flags, files, data or settings: reported in one line, no
# traceback. Corrupt records are ValueErrors; a diverged run is a UserError.
USER_ERRORS = (ValueError, KeyError, FileNotFoundError, UserError)


def start(doc: str | None, main: Callable[[list[str]], None]) -> None:
    """Runs an absl `main` as the program, with `doc` as its --help text and the
    flags of main's module as the program's own (absl's --help lists the flags
    of the module it runs as, here a console script or a launcher).

    At exit, Python's last garbage collection would walk every object that
    TensorFlow's traced functions left (a minute after an hour of training,
    the gap between a SIGTERM's saved checkpoint and the process's end). The
    programs write and close their files themselves, so an exit handler
    freezes what is left, which that collection then skips."""
    atexit.register(gc.freeze)
    sys.modules["__main__"].__doc__ = doc
    for flag in flags.FLAGS.get_key_flags_for_module(main.__module__):
        flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
    app.run(main, flags_parser=_parse_flags)


HELP_FLAGS = ("--help", "-help", "--helpshort", "--helpfull", "--helpxml", "-?", "-h")


def _parse_flags(argv: list[str]) -> list[str]:
    """absl's parsing, with a bad or missing flag as one "prog: error:" line (absl
    prints a multi-line FATAL report) and help as a success (absl exits 1)."""
    program = os.path.basename(argv[0])
    try:
        return flags.FLAGS(argv)
    except flags.Error as err:
        missing = re.findall(r"Flag (--\w+) must have a value other than None", str(err))
        message = "; ".join(line.strip() for line in str(err).splitlines() if line.strip())
        if missing:
            message = f"missing required flag{'s' * (len(missing) > 1)} {', '.join(missing)}"
        print(f"{program}: error: {message} (--helpshort lists the flags)", file=sys.stderr)
        sys.exit(1)
    except SystemExit as done:
        asked = any(arg.split("=")[0] in HELP_FLAGS for arg in argv[1:])
        sys.exit(0 if asked and done.code == 1 else done.code)


class Terminated(BaseException):
    """SIGTERM outside a training loop (data generation, a final evaluation, a
    decode): raised where the program is, like KeyboardInterrupt for Ctrl-C, so
    its clean-ups run (unfinished files removed, locks released)."""


def _terminate(number, frame) -> None:
    raise Terminated()


def run(program: str, fn: Callable[[], None]) -> None:
    """Calls fn; a user error or a full disk prints "program: error: message" and exits 1;
    a run stopped by a signal after saving prints where and exits 128 + the signal's
    number (saved, but unfinished); Ctrl-C elsewhere exits 130, SIGTERM elsewhere 143
    (a training loop handles both itself: stopping.StopConditions)."""
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main else None
    try:
        fn()
    except Interrupted as stopped:  # saved as asked: no error line, but not finished
        print(f"{program}: {stopped}", file=sys.stderr)
        sys.exit(stopped.status)
    except (KeyboardInterrupt, Terminated) as stopped:  # outside a loop; writes are atomic
        name = "SIGINT" if isinstance(stopped, KeyboardInterrupt) else "SIGTERM"
        how = "interrupted" if name == "SIGINT" else "stopped by SIGTERM"
        print(f"{program}: {how}; no file was left half-written", file=sys.stderr)
        sys.exit(signal_status(name))
    except USER_ERRORS as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        _fail(program, message)
    except Exception as err:
        message = full_disk(err)
        if message is None:
            raise
        _fail(program, message)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _fail(program: str, message: str) -> None:
    logging.debug("details", exc_info=True)
    print(f"{program}: error: {message}", file=sys.stderr)
    sys.exit(1)


NO_SPACE = "No space left on device"
TOO_LARGE = "File too large"  # EFBIG: a per-file limit (ulimit -f, FAT media, quotas)
_WRITE_LIMITS = (
    (errno.ENOSPC, NO_SPACE, "no space left on the device", "free space"),
    (errno.EFBIG, TOO_LARGE, "file size limit exceeded", "raise the limit or write elsewhere"),
)


def full_disk(err: Exception) -> str | None:
    """The one-line report of a write that found the disk full or a file-size
    limit (TensorFlow's errors or an OSError, chained ones included), naming the
    file; None for other errors."""
    for number, text, what, remedy in _WRITE_LIMITS:
        cause: BaseException | None = err
        while cause is not None:  # a chained error may carry the reason
            if isinstance(cause, OSError) and cause.errno == number:
                where = cause.filename or "a file"
                break
            if text in str(cause):
                found = re.search(r"(\S+); " + text, str(cause))
                where = found.group(1) if found else "a file"
                break
            cause = cause.__cause__ or cause.__context__
        else:
            continue
        return (
            f"{what} writing {where}; {remedy} and run it again "
            "(the writes it finished are whole, the unfinished one was removed)"
        )
    return None


# Model metrics shown when present: ACT's mean ponder time (N + R) per stack.
PONDER_COLUMNS = (
    ("encoder_ponder_time", "enc_ponder"),
    ("decoder_ponder_time", "dec_ponder"),
    ("bleu", "bleu"),  # text problems
)


def format_metrics(results: dict[str, dict[str, float]]) -> str:
    """A small table: one row per split."""
    extra = [
        (key, title) for key, title in PONDER_COLUMNS if any(key in m for m in results.values())
    ]
    header = f"{'split':<8} {'examples':>8} {'loss':>8} {'accuracy':>9} {'seq_acc':>8}"
    lines = [header + "".join(f" {title:>10}" for _, title in extra)]
    for split, m in results.items():
        lines.append(
            f"{split:<8} {m['examples']:>8d} {m['loss']:>8.4f} {m['accuracy']:>9.4f} "
            f"{m['sequence_accuracy']:>8.4f}"
            + "".join(f" {m.get(key, float('nan')):>10.3f}" for key, _ in extra)
        )
    return "\n".join(lines)
