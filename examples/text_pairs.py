"""Writes a text problem's pairs as aligned text files, one per split and side.

    python examples/text_pairs.py --problem=translate_gettext --data_dir=D --out=T

writes T/train.SRC, T/train.TGT, T/dev.*, T/test.* (SRC and TGT: the
problem's language pair, e.g. en and de; "inputs" and "targets" when it has
none), the same pairs, splits and order as the problem's datagen reads, so a
peer toolkit (bench/bleu_vs_opennmt.py) trains and is scored on exactly them.
A line break inside a text is written as a space.
"""

import json
import os
import sys

import tensorflow as tf
from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FLAGS = flags.FLAGS
flags.DEFINE_string("problem", None, "A registered text problem (its datagen has run).")
flags.DEFINE_string("data_dir", None, "The problem's data directory.")
flags.DEFINE_string("out", None, "Directory for the text files.")
flags.mark_flags_as_required(["problem", "data_dir", "out"])


def _sides(problem, data_dir: str) -> tuple[str, str]:
    config = getattr(problem, "config_path", None)  # translate_gettext's language pair
    if config and tf.io.gfile.exists(config(data_dir)):
        with tf.io.gfile.GFile(config(data_dir)) as f:
            pair = json.load(f)
        return pair["source"], pair["target"]
    return "inputs", "targets"


def main(argv):
    del argv
    import t2t_lite.problems  # noqa: F401 (registers them)
    from t2t_lite.data import problem as problem_lib

    problem = problem_lib.get(FLAGS.problem)
    source, target = _sides(problem, FLAGS.data_dir)
    tf.io.gfile.makedirs(FLAGS.out)
    for split in ("train", "dev", "test"):
        lefts, rights = [], []
        for left, right, _ in problem.text_pairs(FLAGS.data_dir, split):
            lefts.append(" ".join(left.split()))
            rights.append(" ".join(right.split()))
        for side, lines in ((source, lefts), (target, rights)):
            with tf.io.gfile.GFile(os.path.join(FLAGS.out, f"{split}.{side}"), "w") as f:
                f.write("".join(line + "\n" for line in lines))
        print(f"{split}: {len(lefts)} pairs")


if __name__ == "__main__":
    app.run(main)
