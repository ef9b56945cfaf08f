"""What t2t-datagen does: a registered problem's files, with the user's own options."""

from t2t_lite import files
from t2t_lite.data import problem as problem_lib


def generate(
    name: str,
    data_dir: str,
    seed: int = 1,
    train_files: list[str] | None = None,
    dev_files: list[str] | None = None,
    vocab_size: int = 0,
    vocab_sample_lines: int = 0,
) -> dict[str, int]:
    """Writes problem `name`'s shards into data_dir -> examples per split.

    train_files/dev_files/vocab_size: problems on the user's files (they have
    `configure`); vocab_sample_lines (0: the problem's default): text problems'
    vocabulary sample. An option the problem does not take is an error.
    """
    prob = problem_lib.get(name)
    files.check_writable_dir(data_dir, "--data_dir")
    if train_files or dev_files:
        if not hasattr(prob, "configure"):
            raise ValueError(f"--train_files: problem {name!r} takes no files")
        prob.configure(data_dir, train_files or [], dev_files or [], vocab_size)
    if vocab_sample_lines:
        if not hasattr(prob, "vocab_sample_lines"):
            raise ValueError(f"--vocab_sample_lines: problem {name!r} has no vocabulary")
        if vocab_sample_lines < 1:
            raise ValueError(f"--vocab_sample_lines must be >= 1, got {vocab_sample_lines}")
        prob.vocab_sample_lines = vocab_sample_lines
    return prob.generate_data(data_dir, seed=seed)
