"""t2t_lite's side of the parsing head-to-head: the README's parsing recipe
under a training budget, scored as bench/parser_peer.py scores the peer.

Runs the recipe's own programs (t2t-train with the recipe's model, hparams
set and steps; t2t-avg-checkpoints over the last checkpoints; t2t-decode
with the greedy label-constrained search), with training stopped by
bench/budget.py after --minutes of --clock (the trainer saves on SIGTERM and
the average takes the checkpoints it has). Then the test sentences are
parsed, whole process timed (sentences per second), and scored by
t2t_lite's EVALB with gold tags against the same gold file as the peer; dev
is decoded and scored the same way (its figure, not a choice). One JSON line,
also kept as OUTPUT_DIR/result.json.

Resumable: a stopped run resumes from its checkpoint with the budget it has
left (OUTPUT_DIR/budget.json); a finished one prints its result again.

  python bench/parser_recipe.py --data_dir=D --output_dir=O --seed=1 --minutes=40 --clock=cpu
"""

import os
import subprocess
import sys
import time

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", None, "The recipe's data dir (t2t-datagen's).")
flags.DEFINE_string("output_dir", None, "The run directory.")
flags.DEFINE_string("problem", "parsing_from_files_labels", "The recipe's problem.")
flags.DEFINE_string("model", "universal_transformer_encoder", "The recipe's model.")
flags.DEFINE_string("hparams_set", "universal_transformer_parsing_tagger", "The recipe's set.")
flags.DEFINE_string("hparams", "", "Overrides, as t2t-train's --hparams.")
flags.DEFINE_integer("train_steps", 3000, "The recipe's steps (the budget may stop it sooner).")
flags.DEFINE_integer("average", 5, "Last checkpoints averaged (the recipe's 5).")
flags.DEFINE_integer("seed", 1, "--random_seed.")
flags.DEFINE_float("minutes", 40.0, "Training budget in minutes of --clock.")
flags.DEFINE_enum("clock", "cpu", ["cpu", "wall"], "What the budget counts (bench/budget.py).")
flags.DEFINE_integer("threads", 1, "TF_NUM_INTRAOP_THREADS.")
flags.mark_flags_as_required(["data_dir", "output_dir"])


def program(name: str) -> str:
    """The program of this interpreter's environment (a snapshot's venv)."""
    return os.path.join(os.path.dirname(sys.executable), name)


def environment() -> dict:
    return {**os.environ, "TF_NUM_INTRAOP_THREADS": str(FLAGS.threads), "TF_CPP_MIN_LOG_LEVEL": "2"}


def train() -> dict:
    import budget

    spent_path = os.path.join(FLAGS.output_dir, "budget.json")
    command = [
        program("t2t-train"), f"--problem={FLAGS.problem}", f"--model={FLAGS.model}",
        f"--hparams_set={FLAGS.hparams_set}", f"--hparams={FLAGS.hparams}",
        f"--data_dir={FLAGS.data_dir}", f"--output_dir={FLAGS.output_dir}",
        f"--train_steps={FLAGS.train_steps}", f"--random_seed={FLAGS.seed}",
    ]  # fmt: skip
    with open(os.path.join(FLAGS.output_dir, "train.log"), "a", encoding="utf-8") as log:
        used = budget.run(
            command, FLAGS.minutes, FLAGS.clock, spent_path,
            stdout=log, stderr=subprocess.STDOUT, env=environment(),
        )  # fmt: skip
    if used["returncode"] != 0 and not used["stopped"]:
        raise RuntimeError(f"t2t-train failed; see {FLAGS.output_dir}/train.log")
    from t2t_lite import checkpoints

    return {
        "train_seconds": used["seconds"],
        "train_clock": FLAGS.clock,
        "train_wall_seconds": used["wall_seconds"],
        "stopped_by_budget": used["stopped"],
        "steps": checkpoints.step_of(checkpoints.latest(FLAGS.output_dir)),
    }


def decode(split: str) -> tuple[dict, float]:
    """Decodes SPLIT's words with the averaged checkpoint -> (scores, seconds)."""
    from t2t_lite import files
    from t2t_lite.scoring import evalb

    words = os.path.join(FLAGS.data_dir, f"{FLAGS.problem}-{split}.words")
    gold_path = os.path.join(FLAGS.data_dir, f"{FLAGS.problem}-{split}.trees")
    output = os.path.join(FLAGS.output_dir, f"{split}.parsed")
    command = [
        program("t2t-decode"), f"--output_dir={FLAGS.output_dir}",
        f"--checkpoint_path={os.path.join(FLAGS.output_dir, 'averaged')}",
        f"--decode_from_file={words}", f"--decode_to_file={output}",
        "--decode_hparams=beam_size=1,parse_input=tokens",
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=environment())
    seconds = time.perf_counter() - start
    gold, parsed = files.read_lines(gold_path), files.read_lines(output)
    return evalb.score_lines(gold, evalb.with_gold_tags(gold, parsed)), seconds


def main(argv):
    del argv
    import common

    os.makedirs(FLAGS.output_dir, exist_ok=True)
    if (line := common.kept_result(FLAGS.output_dir)) is not None:
        print(line)
        return
    result = {"benchmark": "parser_recipe", "machine": common.machine(), "problem": FLAGS.problem}
    result["settings"] = {
        "model": FLAGS.model, "hparams_set": FLAGS.hparams_set, "hparams": FLAGS.hparams,
        "train_steps": FLAGS.train_steps, "average": FLAGS.average, "minutes": FLAGS.minutes,
        "clock": FLAGS.clock, "seed": FLAGS.seed, "threads": FLAGS.threads,
    }  # fmt: skip
    result.update(train())
    from t2t_lite import checkpoints

    # A budget that stops the run early leaves fewer checkpoints: average those.
    result["averaged"] = min(FLAGS.average, len(checkpoints.by_step(FLAGS.output_dir)))
    subprocess.run(
        [program("t2t-avg-checkpoints"), f"--model_dir={FLAGS.output_dir}",
         f"--num_last_checkpoints={result['averaged']}"],
        check=True, capture_output=True, env=environment(),
    )  # fmt: skip
    dev, _ = decode("dev")
    test, seconds = decode("test")
    sentences = test["sentences"]
    result.update({
        "dev_f1": round(dev["f1"], 2),
        "test_f1": round(test["f1"], 2),
        "test_exact_match": round(test["exact_match"], 2),
        "test_errors": test["errors"],
        "test_sentences": sentences,
        "parse_seconds": round(seconds, 2),
        "sentences_per_second": round(sentences / seconds, 1),
    })  # fmt: skip
    print(common.keep_result(FLAGS.output_dir, result))


if __name__ == "__main__":
    app.run(main)
