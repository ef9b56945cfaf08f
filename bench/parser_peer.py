"""The parsing peer: Kitaev and Klein's self-attentive chart parser on t2t_lite's trees.

Trains the parser of the public `nikitakit/self-attentive-parser` repository
from scratch (its character LSTM and its own Transformer encoder, no
pre-trained model) on the train and dev trees of a t2t_lite parsing data
dir, exactly the trees t2t_lite trains and scores on (preprocessed: no empty
elements or function tags, one `(TOP ...)` tree per line), for a wall-time
budget on the same machine; then parses the test sentences with its best dev
checkpoint (whole process timed: sentences per second) and scores them with
t2t_lite's EVALB against the same gold file as `t2t-compare --models=parsing`,
with gold tags as the table scores. One JSON line: dev F1 (its own EVALB),
test F1 and exact match, steps, wall time, parse speed, machine.

The peer is a benchmark reference, never a dependency: its own venv, and a
checkout of its repository (its `src/`, and `EVALB/` built with `make`):

  python3 -m venv benepar && benepar/bin/pip install torch==2.13.0 torch-struct transformers nltk
  make -C SRC/EVALB
  python bench/parser_peer.py --data_dir=D --problem=parsing_from_files_xx --source=SRC \\
      --python=benepar/bin/python --minutes=120 --work_dir=W

Three things of today's packages that the repository's code predates are
mended at start-up, in the launched process only (`LAUNCH`), not in its
files: the `pytokenizations` module (no wheel for Python 3.11; only its
pre-trained-encoder path calls it) is a stub; torch's `ReduceLROnPlateau`,
which no longer takes `verbose`, drops it; and NLTK's tree reader is rooted
at the file's folder, the work directory, which is NLTK's data path
(`NLTK_DATA`: NLTK 3.9+ reads no file outside its data roots, and no file
named by an absolute path under an empty root).
"""

import os
import re
import subprocess
import sys
import time

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", None, "A t2t_lite parsing data dir (t2t-datagen's).")
flags.DEFINE_string("problem", "parsing_from_files_xx", "Its parsing problem.")
flags.DEFINE_string("source", None, "A checkout of nikitakit/self-attentive-parser.")
flags.DEFINE_string("python", None, "Python of the peer's venv.")
flags.DEFINE_string("work_dir", None, "Trees, checkpoints, logs and outputs of the peer.")
flags.DEFINE_float("minutes", 120.0, "Training budget in minutes of --clock (then SIGTERM).")
flags.DEFINE_enum(
    "clock",
    "wall",
    ["wall", "cpu"],
    "What the budget counts: wall-clock time, or CPU time of the peer's processes (the same "
    "for two trainers sharing a machine with other work: bench/budget.py).",
)
flags.DEFINE_integer("layers", 4, "Encoder layers (--num-layers).")
flags.DEFINE_integer("d_model", 256, "Encoder width (--d-model).")
flags.DEFINE_integer("d_ff", 1024, "Feed-forward width (--d-ff).")
flags.DEFINE_integer("batch_size", 64, "Sentences per batch (--batch-size).")
flags.DEFINE_float("learning_rate", 0.0008, "Its from-scratch recipe's learning rate.")
flags.DEFINE_integer("checks_per_epoch", 4, "Dev evaluations per epoch (--checks-per-epoch).")
flags.DEFINE_integer("seed", 1, "--numpy-seed (its torch seed follows from it).")
flags.DEFINE_integer("threads", 2, "Threads (OMP_NUM_THREADS, torch's).")
flags.mark_flags_as_required(["data_dir", "source", "python", "work_dir"])

# Run in the peer's venv before its main.py: see the module's docstring.
LAUNCH = """
import os, runpy, sys, types
import torch
sys.modules.setdefault("tokenizations", types.ModuleType("tokenizations"))
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau.__init__
def without_verbose(self, *args, verbose=None, **kwargs):
    plateau(self, *args, **kwargs)
torch.optim.lr_scheduler.ReduceLROnPlateau.__init__ = without_verbose
torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
from nltk.corpus.reader import bracket_parse
reader = bracket_parse.BracketParseCorpusReader.__init__
def rooted(self, root, fileids, *args, **kwargs):
    if root == "" and len(fileids) == 1:
        root, name = os.path.split(os.path.abspath(fileids[0]))
        fileids = [name]
    reader(self, root, fileids, *args, **kwargs)
bracket_parse.BracketParseCorpusReader.__init__ = rooted
main = sys.argv[1]
sys.path.insert(0, os.path.dirname(main))
sys.argv = sys.argv[1:]
runpy.run_path(main, run_name="__main__")
"""

DEV_LINE = re.compile(r"dev-fscore \(.*FScore=([\d.]+).*\) dev-elapsed .* total-elapsed (\S+)")
TEST_LINE = re.compile(r"test-fscore \(.*FScore=([\d.]+)")
BATCH_LINE = re.compile(r"epoch ([\d,]+) batch ([\d,]+)/([\d,]+) processed ([\d,]+)")


def write_trees(work: str) -> dict[str, str]:
    """The peer's train/dev/test files: the trees t2t_lite trains on and scores
    against, one `(TOP ...)` line each -> split -> path."""
    import t2t_lite.problems  # noqa: F401  (registers the problems)
    from t2t_lite import files
    from t2t_lite.data import problem as problem_lib
    from t2t_lite.parsing import trees

    problem = problem_lib.get(FLAGS.problem)
    paths = {}
    for split in ("train", "dev", "test"):
        path = os.path.join(work, f"{split}.trees")
        if split == "train":
            lines = [trees.output_line(t) for t, _ in problem.split_trees(FLAGS.data_dir, split)]
        else:
            lines = files.read_lines(problem.gold_paths(FLAGS.data_dir, split)[1])
        files.write_atomically(path, "".join(line + "\n" for line in lines))
        paths[split] = path
    return paths


def environment() -> dict:
    threads = str(FLAGS.threads)
    # NLTK reads tree files only under its data roots: the work dir is one.
    return {
        **os.environ,
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "NLTK_DATA": os.path.abspath(FLAGS.work_dir),
    }


def peer(arguments: list[str]) -> list[str]:
    return [FLAGS.python, "-c", LAUNCH, os.path.join(FLAGS.source, "src", "main.py"), *arguments]


def train(paths: dict[str, str], work: str) -> dict:
    """Trains for --minutes (then stops the process) -> the log's figures."""
    log_path = os.path.join(work, "train.log")
    command = peer([
        "train", "--train-path", paths["train"], "--dev-path", paths["dev"],
        "--use-chars-lstm", "--use-encoder", "--num-layers", str(FLAGS.layers),
        "--d-model", str(FLAGS.d_model), "--d-ff", str(FLAGS.d_ff),
        "--batch-size", str(FLAGS.batch_size), "--learning-rate", str(FLAGS.learning_rate),
        "--checks-per-epoch", str(FLAGS.checks_per_epoch), "--numpy-seed", str(FLAGS.seed),
        "--evalb-dir", os.path.join(FLAGS.source, "EVALB"),
        "--model-path-base", os.path.join(work, "model"),
    ])  # fmt: skip
    import budget

    # The peer cannot resume: a stopped run starts over with a fresh budget.
    with open(log_path, "w", encoding="utf-8") as log:
        used = budget.run(
            command, FLAGS.minutes, FLAGS.clock, os.path.join(work, "budget.json"),
            stdout=log, stderr=subprocess.STDOUT, env=environment(),
        )  # fmt: skip
    with open(log_path, encoding="utf-8") as log:
        text = log.read()
    devs = [float(f) for f, _ in DEV_LINE.findall(text)]
    batches = BATCH_LINE.findall(text)
    if not devs:
        raise RuntimeError(f"the peer evaluated no dev checkpoint; see {log_path}")
    return {
        "train_seconds": used["seconds"],
        "train_clock": FLAGS.clock,
        "train_wall_seconds": used["wall_seconds"],
        "dev_evaluations": len(devs),
        "best_dev_f1": max(devs),
        "steps": len(batches),
        "sentences_seen": int(batches[-1][3].replace(",", "")) if batches else 0,
    }


def best_checkpoint(work: str) -> str:
    kept = [name for name in os.listdir(work) if name.startswith("model_dev=")]
    if not kept:
        raise RuntimeError(f"no best dev checkpoint in {work}")
    return os.path.join(work, max(kept, key=lambda n: float(n[len("model_dev=") : -len(".pt")])))


def test_command(work: str, gold: str, output: str) -> list[str]:
    """The peer parsing `gold`'s sentences into `output` with work's best dev checkpoint."""
    return peer([
        "test", "--model-path", best_checkpoint(work), "--test-path", gold,
        "--evalb-dir", os.path.join(FLAGS.source, "EVALB"), "--output-path", output,
        "--no-predict-tags",
    ])  # fmt: skip


def parse_test(paths: dict[str, str], work: str) -> dict:
    """Parses the test sentences with the best dev checkpoint, whole process timed."""
    output = os.path.join(work, "test.parsed")
    command = test_command(work, paths["test"], output)
    start = time.perf_counter()
    done = subprocess.run(command, check=True, capture_output=True, env=environment(), text=True)
    seconds = time.perf_counter() - start
    own = TEST_LINE.search(done.stdout)
    from t2t_lite import files
    from t2t_lite.scoring import evalb

    gold, parsed = files.read_lines(paths["test"]), files.read_lines(output)
    scored = evalb.score_lines(gold, evalb.with_gold_tags(gold, parsed))
    return {
        "test_f1": round(scored["f1"], 2),
        "test_exact_match": round(scored["exact_match"], 2),
        "test_errors": scored["errors"],
        # The same parses by the peer's own EVALB (COLLINS-like nk.prm, its tags): a cross-check.
        "test_f1_own_evalb": float(own.group(1)) if own else None,
        "test_sentences": len(gold),
        "parse_seconds": round(seconds, 2),
        "sentences_per_second": round(len(gold) / seconds, 1),
    }


def main(argv):
    del argv
    import common

    os.makedirs(FLAGS.work_dir, exist_ok=True)
    if (line := common.kept_result(FLAGS.work_dir)) is not None:
        print(line)
        return
    budget_file = os.path.join(FLAGS.work_dir, "budget.json")
    if os.path.exists(budget_file):
        os.remove(budget_file)
    paths = write_trees(FLAGS.work_dir)
    result = {"benchmark": "parser_peer", "machine": common.machine(), "problem": FLAGS.problem}
    result["settings"] = {
        "layers": FLAGS.layers, "d_model": FLAGS.d_model, "d_ff": FLAGS.d_ff,
        "batch_size": FLAGS.batch_size, "learning_rate": FLAGS.learning_rate,
        "minutes": FLAGS.minutes, "clock": FLAGS.clock, "seed": FLAGS.seed, "threads": FLAGS.threads,
    }  # fmt: skip
    result.update(train(paths, FLAGS.work_dir))
    result.update(parse_test(paths, FLAGS.work_dir))
    print(common.keep_result(FLAGS.work_dir, result))


if __name__ == "__main__":
    app.run(main)
