"""t2t-avg-checkpoints: average a run's last N checkpoints (or a given list) into one."""

from absl import flags, logging

from t2t_lite import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", "", "A t2t-train --output_dir whose checkpoints to average.")
flags.DEFINE_integer(
    "num_last_checkpoints", 5, "Average the newest N (the paper: 5 for base, 20 for big)."
)
flags.DEFINE_list("checkpoints", [], "Checkpoint prefixes to average instead of the newest N.")
flags.DEFINE_string(
    "output_path",
    "",
    "The averaged checkpoint's prefix (default: <model_dir>/averaged/model.ckpt-<step>).",
)


def main(argv):
    del argv
    logging.set_verbosity(logging.INFO)
    from t2t_lite.training import averaging

    def average():
        path = averaging.run(
            FLAGS.model_dir, FLAGS.num_last_checkpoints, FLAGS.checkpoints, FLAGS.output_path
        )
        print(path)

    cli.run("t2t-avg-checkpoints", average)


def run() -> None:
    """The t2t-avg-checkpoints console script."""
    cli.start(__doc__, main)
