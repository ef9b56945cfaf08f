"""BLEU against OpenNMT-py 3.5.1 on the same text, shape, vocabulary, batches and budget.

Both toolkits train an encoder-decoder Transformer of one shape (layers,
d_model, heads, ff, dropout 0.1, label smoothing 0.1, shared embeddings and
softmax, Noam schedule with the same warmup and constant) on any given
train/dev/test text files, side by side, each pinned to its own core with one
thread, for the same number of steps or the same wall time; then both decode
the test file with beam 4 and the GNMT length penalty alpha 0.6, and
sacrebleu scores both against the test references (detokenized text). One
JSON line: BLEU, chrF, steps, wall seconds, target tokens per second, machine.

The vocabulary is the same for both: t2t_lite learns its subword vocabulary
and the files are tokenized with it for OpenNMT-py (pieces separated by
spaces, the same ids), whose outputs are detokenized by t2t_lite again.

OpenNMT-py is a benchmark reference, never a dependency: it lives in its own
virtual environment (torch below 2.3, numpy below 2), named by --onmt_python:

  python3 -m venv onmt && onmt/bin/pip install "torch<2.3" "numpy<2" "OpenNMT-py==3.5.1"
  python bench/bleu_vs_opennmt.py --train=train.en,train.de --dev=dev.en,dev.de \
      --test=test.en,test.de --onmt_python=onmt/bin/python --minutes=45 --work_dir=W

A run that is stopped (SIGTERM, Ctrl-C, a lost machine) is continued by the
same command: each side goes on from its newest checkpoint, with its wall
time at that checkpoint kept in W (`resumable`); a longer --steps or
--minutes extends a finished comparison. Other settings or input files in
the same W are refused. Each point's wall seconds are those its checkpoint
was written at.

--curve_every=N adds both sides' dev BLEU at every N-th step's checkpoint
(the first --curve_examples dev pairs, the test decode's search): where
each one flattens, measured the same way for both.
"""

import json
import os
import sys

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import resumable
import translation_sides

from t2t_lite import files

FLAGS = flags.FLAGS
flags.DEFINE_list("train", None, "SOURCE,TARGET text files, aligned line by line.")
flags.DEFINE_list("dev", None, "SOURCE,TARGET dev files (t2t_lite's evaluation, OpenNMT's valid).")
flags.DEFINE_list("test", None, "SOURCE,TARGET test files: decoded and scored.")
flags.DEFINE_string("work_dir", None, "Data, runs, vocabularies and outputs of both.")
flags.DEFINE_string("onmt_python", None, "Python of a venv with OpenNMT-py 3.5.1 (none: skip it).")
flags.DEFINE_integer("layers", 2, "Encoder and decoder layers.")
flags.DEFINE_integer("hidden_size", 128, "d_model.")
flags.DEFINE_integer("heads", 4, "Attention heads.")
flags.DEFINE_integer("filter_size", 512, "Feed-forward width.")
flags.DEFINE_integer("vocab_size", 8000, "Shared subword vocabulary size.")
flags.DEFINE_integer("batch_tokens", 4096, "Tokens per batch.")
flags.DEFINE_integer("warmup", 800, "Noam warmup steps.")
flags.DEFINE_float("learning_rate", 2.0, "Noam constant (both toolkits' formula).")
flags.DEFINE_integer("steps", 100000, "Training steps (the budget unless --minutes ends first).")
flags.DEFINE_float("minutes", 0.0, "Wall-time budget per toolkit (0: steps only).")
flags.DEFINE_integer("beam_size", 4, "Beam size of the test decode.")
flags.DEFINE_float("alpha", 0.6, "GNMT length penalty of the test decode.")
flags.DEFINE_integer("seed", 1, "Both toolkits' random seed.")
flags.DEFINE_integer(
    "save_every", 250, "Checkpoint cadence (steps) of both: the equal-steps point."
)
flags.DEFINE_integer(
    "eval_every",
    0,
    "t2t_lite's dev loss and greedy dev BLEU every N steps (0: none; the "
    "evaluations count against its --minutes budget, OpenNMT-py validates never).",
)
flags.DEFINE_integer(
    "curve_every",
    0,
    "After training, dev BLEU of both sides at every N-th step's checkpoint (a multiple "
    "of --save_every) and at the newest: each one's curve, to show where it flattens.",
)
flags.DEFINE_integer("curve_examples", 500, "Dev pairs (the first ones) each curve point decodes.")
flags.mark_flags_as_required(["train", "dev", "test", "work_dir"])

PROBLEM = "translate_from_files"


def prepare(work: str) -> tuple[str, list[str]]:
    """t2t_lite's data dir (and vocabulary) -> (data_dir, the vocabulary's tokens)."""
    from t2t_lite.data import subword
    from t2t_lite.problems import datagen

    data_dir = os.path.join(work, "data")
    if not os.path.exists(os.path.join(data_dir, f"{PROBLEM}.vocab")):
        datagen.generate(PROBLEM, data_dir, 1, FLAGS.train, FLAGS.dev, FLAGS.vocab_size)
    return data_dir, subword.load(os.path.join(data_dir, f"{PROBLEM}.vocab"))


def tokenize_for_onmt(work: str, tokens: list[str]) -> dict[str, str]:
    """Every file as space-separated subword pieces of t2t_lite's vocabulary; ONMT's vocab."""
    import tensorflow as tf

    from t2t_lite.data import subword

    tokenizer = subword.SubwordTokenizer(tokens)
    out = {}
    for split, paths in (("train", FLAGS.train), ("valid", FLAGS.dev), ("test", FLAGS.test)):
        for side, path in zip(("src", "tgt"), paths, strict=True):
            lines = files.read_lines(path)
            if split == "train":  # in a seeded random order, as t2t_lite's datagen writes it
                lines = [lines[i] for i in _order(len(lines))]
            pieces = []
            for start in range(0, len(lines), 2048):
                ids, _ = tokenizer.tokenize(tf.constant(lines[start : start + 2048]))
                for row in ids.to_list():
                    pieces.append(" ".join(f"{i}" for i in row) or "2")  # ids as tokens
            target = os.path.join(work, f"onmt_{split}.{side}")
            with open(target, "w", encoding="utf-8") as f:
                f.write("\n".join(pieces) + "\n")
            out[f"{split}.{side}"] = target
    vocab = os.path.join(work, "onmt.vocab")
    with open(vocab, "w", encoding="utf-8") as f:  # ONMT's specials come first on its own
        f.write("".join(f"{i}\t1\n" for i in range(3, len(tokens))))
    out["vocab"] = vocab
    return out


def _order(count: int) -> list[int]:
    """A seeded permutation of the training lines. OpenNMT-py reads its corpus in
    file order and shuffles only within buckets of bucket_size examples: a file
    sorted or grouped by origin (a catalog's messages together) would give it
    one slice of the data at a time, where t2t_lite's datagen shuffles whole."""
    import numpy as np

    return np.random.default_rng(FLAGS.seed).permutation(count).tolist()


def write_onmt_config(work: str, onmt_files: dict[str, str]) -> str:
    config = {
        "save_data": os.path.join(work, "onmt"),
        "src_vocab": onmt_files["vocab"], "share_vocab": True, "src_vocab_size": 100000,
        "tgt_vocab_size": 100000, "overwrite": True,
        "data": {
            "corpus_1": {"path_src": onmt_files["train.src"], "path_tgt": onmt_files["train.tgt"]},
            "valid": {"path_src": onmt_files["valid.src"], "path_tgt": onmt_files["valid.tgt"]},
        },
        "save_model": os.path.join(work, "onmt_model", "model"),
        # OpenNMT-py saves nothing on SIGTERM: under --minutes its newest checkpoint is
        # at most save_every steps behind the budget's end. Every checkpoint is kept:
        # the equal-steps decode reads the one both toolkits reached.
        "save_checkpoint_steps": FLAGS.save_every, "keep_checkpoint": -1, "seed": FLAGS.seed,
        "train_steps": FLAGS.steps, "valid_steps": 1000000, "report_every": 100,
        "encoder_type": "transformer", "decoder_type": "transformer",
        "enc_layers": FLAGS.layers, "dec_layers": FLAGS.layers,
        "hidden_size": FLAGS.hidden_size, "word_vec_size": FLAGS.hidden_size,
        "heads": FLAGS.heads, "transformer_ff": FLAGS.filter_size,
        "position_encoding": True, "share_embeddings": True, "share_decoder_embeddings": True,
        "dropout": [0.1], "attention_dropout": [0.1], "label_smoothing": 0.1,
        "optim": "adam", "adam_beta1": 0.9, "adam_beta2": 0.997, "decay_method": "noam",
        "warmup_steps": FLAGS.warmup, "learning_rate": FLAGS.learning_rate,
        "max_grad_norm": 0.0, "param_init": 0.0, "param_init_glorot": True,
        "normalization": "tokens", "batch_type": "tokens", "batch_size": FLAGS.batch_tokens,
        "accum_count": [1], "src_seq_length": 256, "tgt_seq_length": 256,
        "world_size": 1, "gpu_ranks": [], "num_workers": 0, "bucket_size": 32768,
    }  # fmt: skip
    path = os.path.join(work, "onmt.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(config, indent=1))  # JSON is YAML
    return path


SETTINGS = (
    "layers", "hidden_size", "heads", "filter_size", "vocab_size", "batch_tokens", "warmup",
    "learning_rate", "seed", "save_every", "eval_every", "beam_size", "alpha",
)  # fmt: skip


def settings() -> dict:
    """What the comparison is (a rerun must match): every flag but the budget, the
    input files by content, and whether OpenNMT-py takes part."""
    used = {name: getattr(FLAGS, name) for name in SETTINGS}
    for name in ("train", "dev", "test"):
        paths = getattr(FLAGS, name)
        if len(paths) != 2:
            raise ValueError(f"--{name}: expected SOURCE,TARGET (two files), got {paths}")
        for path in paths:
            if not os.path.isfile(path):
                raise ValueError(f"--{name}: no file {path}")
        used[name] = [resumable.file_identity(path) for path in paths]
    used["onmt_python"] = bool(FLAGS.onmt_python)
    return used


def main(argv):
    del argv
    import common

    work = os.path.abspath(FLAGS.work_dir)
    os.makedirs(work, exist_ok=True)
    try:
        resumable.check_settings(work, settings())
    except ValueError as err:
        raise SystemExit(f"bleu_vs_opennmt: {err}") from None
    clock = resumable.WallClock(work)
    budget = FLAGS.minutes * 60
    data_dir, tokens = prepare(work)
    run_dir = os.path.join(work, "t2t_run")
    hparams = (
        f"num_hidden_layers={FLAGS.layers},hidden_size={FLAGS.hidden_size},"
        f"num_heads={FLAGS.heads},filter_size={FLAGS.filter_size},"
        f"batch_size={FLAGS.batch_tokens},learning_rate_warmup_steps={FLAGS.warmup},"
        f"learning_rate_constant={FLAGS.learning_rate}"
    )
    t2t_command = [
        translation_sides.t2t_binary("t2t-train"), f"--problem={PROBLEM}", "--model=transformer",
        "--hparams_set=transformer_tiny", f"--hparams={hparams}", f"--data_dir={data_dir}",
        f"--output_dir={run_dir}", f"--train_steps={FLAGS.steps}",
        f"--train_minutes={FLAGS.minutes}", f"--random_seed={FLAGS.seed}",
        f"--local_eval_frequency={FLAGS.eval_every or 1000000}",
        f"--eval_bleu_examples={300 if FLAGS.eval_every else 0}",
        f"--save_checkpoints_steps={FLAGS.save_every}", "--keep_checkpoint_max=1000",
    ]  # fmt: skip
    jobs, onmt_files = {}, {}
    if _t2t_due(run_dir, budget):  # t2t-train resumes from its run dir by itself
        newest = translation_sides.t2t_steps(run_dir)
        if newest:
            clock.rewind("t2t_lite", newest[-1])
        jobs["t2t_lite"] = resumable.start(t2t_command, os.path.join(work, "t2t_train.log"), 0)
        clock.start("t2t_lite")
    if FLAGS.onmt_python:
        onmt_files = tokenize_for_onmt(work, tokens)
        config = write_onmt_config(work, onmt_files)
        onmt = os.path.join(os.path.dirname(FLAGS.onmt_python), "onmt_train")
        saved = translation_sides.onmt_steps(work)
        if saved:  # it goes on from there: what came after was lost with the stop
            clock.rewind("opennmt_py", saved[-1])
        left = budget - clock.total("opennmt_py")
        if (not saved or saved[-1] < FLAGS.steps) and (not budget or left > 0):
            # From its newest checkpoint, optimizer and step count included.
            newest = saved and translation_sides.onmt_checkpoint(work, saved[-1])
            resume = ["-train_from", newest] if saved else []
            limit = ["timeout", "-s", "TERM", f"{int(left)}"] if budget else []
            command = [*limit, onmt, "-config", config, *resume]
            jobs["opennmt_py"] = resumable.start(command, os.path.join(work, "onmt_train.log"), 1)
            clock.start("opennmt_py")
    listed = {
        "t2t_lite": lambda: translation_sides.t2t_steps(run_dir),
        "opennmt_py": lambda: translation_sides.onmt_steps(work),
    }
    resumable.wait(jobs, clock, listed)
    if "t2t_lite" in jobs and jobs["t2t_lite"][0].returncode != 0:
        raise SystemExit(f"t2t-train failed; see {work}/t2t_train.log")
    references = files.read_lines(FLAGS.test[1])
    result = {"benchmark": "bleu_vs_opennmt", "machine": common.machine(), "seed": FLAGS.seed}
    steps = {"t2t_lite": translation_sides.t2t_steps(run_dir)}
    if FLAGS.onmt_python:
        steps["opennmt_py"] = translation_sides.onmt_steps(work)
        if not steps["opennmt_py"]:
            raise SystemExit(f"OpenNMT-py wrote no checkpoint; see {work}/onmt_train.log")
    # Each one's newest checkpoint (the budget's end: equal time under --minutes), and
    # the newest step both saved (equal steps), where the two differ.
    points = {"budget": {name: max(saved) for name, saved in steps.items()}}
    common_steps = set.intersection(*(set(saved) for saved in steps.values()))
    if len(steps) > 1 and common_steps and len(set(points["budget"].values())) > 1:
        points["equal_steps"] = {name: max(common_steps) for name in steps}
    decoded = {}  # (side, step) -> translations: a step both points name is decoded once
    for point, at in points.items():
        result[point] = {}
        for side, step in at.items():
            if (side, step) not in decoded:
                source, name = (
                    (FLAGS.test[0], f"t2t_test.{step}.out")
                    if side == "t2t_lite"
                    else (onmt_files["test.src"], f"onmt_test.{step}.ids")
                )
                output = os.path.join(work, name)
                decoded[side, step] = _decode(work, tokens, side, step, source, output)
            result[point][side] = _point(side, step, decoded[side, step], references, clock)
        if "opennmt_py" in at:
            result[point]["bleu_t2t_over_opennmt"] = round(
                result[point]["t2t_lite"]["bleu"] - result[point]["opennmt_py"]["bleu"], 2
            )
    if FLAGS.curve_every:
        result["dev_curve"] = dev_curve(work, onmt_files, tokens, steps, clock)
    print(json.dumps(result))


def _t2t_due(run_dir: str, budget: float) -> bool:
    """Whether t2t_lite has training left: its newest checkpoint is short of --steps
    and, under --minutes, its recorded training time short of the budget."""
    from t2t_lite import run_dir as run_dir_lib

    saved = translation_sides.t2t_steps(run_dir)
    if not saved:
        return True
    trained = run_dir_lib.trained_seconds(run_dir, saved[-1])
    return saved[-1] < FLAGS.steps and (not budget or trained < budget)


def _point(side: str, step: int, hypotheses: list[str], references, clock) -> dict:
    """A side's test scores at `step`, with the wall seconds it had trained when that
    checkpoint appeared (its total where the ledger did not see it)."""
    seconds = clock.at(side, step)
    seconds = clock.total(side) if seconds is None else seconds
    tokens = step * FLAGS.batch_tokens  # batch tokens, padding included, as OpenNMT counts
    return {
        **translation_sides.scores(hypotheses, references), "steps": step,
        "wall_seconds": seconds, "batch_tokens_per_sec": round(tokens / max(seconds, 1e-9), 1),
    }  # fmt: skip


def _decode(
    work: str, tokens: list[str], side: str, step: int, source: str, output: str, core=None
) -> list[str]:
    """`side`'s checkpoint of `step` translates `source` (text for t2t_lite, ids for
    OpenNMT-py) into `output`, with the comparison's beam and alpha -> its text."""
    if side == "t2t_lite":
        search = f"beam_size={FLAGS.beam_size},alpha={FLAGS.alpha}"
        run_dir = os.path.join(work, "t2t_run")
        return translation_sides.t2t_decode(run_dir, step, source, output, search, core)
    checkpoint = translation_sides.onmt_checkpoint(work, step)
    return translation_sides.onmt_decode(
        FLAGS.onmt_python, checkpoint, source, output, tokens, FLAGS.beam_size, FLAGS.alpha, core
    )


def dev_curve(work: str, onmt_files: dict, tokens: list[str], steps: dict, clock) -> dict:
    """Dev BLEU of the first --curve_examples dev pairs at every --curve_every-th
    saved step of each side and at its newest, with the test decode's search;
    the two sides decode at once, one core and thread each. Each point is
    kept in W/curve, so a rerun decodes only checkpoints it has not scored.
    -> {side: [[step, wall seconds at that checkpoint or None, BLEU], ...]}."""
    from concurrent.futures import ThreadPoolExecutor

    count = FLAGS.curve_examples
    folder = os.path.join(work, "curve")
    os.makedirs(folder, exist_ok=True)
    references = files.read_lines(FLAGS.dev[1])[:count]
    sources = {}
    for side, path in (("t2t_lite", FLAGS.dev[0]), ("opennmt_py", onmt_files.get("valid.src"))):
        if side in steps:
            sources[side] = os.path.join(folder, f"dev.{side}.{count}")
            files.write_atomically(sources[side], "\n".join(files.read_lines(path)[:count]) + "\n")

    def side_curve(side: str, core: int) -> list:
        chosen = {s for s in steps[side] if s % FLAGS.curve_every == 0} | {steps[side][-1]}
        curve = []
        for step in sorted(chosen):
            kept = os.path.join(folder, f"{side}.{step}.{count}.json")
            if not os.path.exists(kept):
                output = os.path.join(folder, f"{side}.{step}.{count}.out")
                hypotheses = _decode(work, tokens, side, step, sources[side], output, core)
                bleu = translation_sides.scores(hypotheses, references)["bleu"]
                files.write_atomically(kept, json.dumps({"bleu": bleu}))
            with open(kept, encoding="utf-8") as f:
                curve.append([step, clock.at(side, step), json.load(f)["bleu"]])
        return curve

    with ThreadPoolExecutor(len(sources)) as pool:
        running = {side: pool.submit(side_curve, side, core) for core, side in enumerate(sources)}
        return {side: future.result() for side, future in running.items()}


if __name__ == "__main__":
    app.run(main)
