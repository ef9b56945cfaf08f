"""t2t-visualize: attention maps (and ACT ponder times, a parse's tree) of a trained run's decodes, as PNGs."""

from absl import flags, logging

from t2t_lite import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "The t2t-train run directory.")
flags.DEFINE_string("checkpoint_path", "", "A checkpoint (default: the run's newest).")
flags.DEFINE_multi_string("inputs", [], "An input to decode and draw (repeat the flag for more).")
flags.DEFINE_string("decode_from_file", "", "Or: a file whose first lines are the inputs.")
flags.DEFINE_integer("max_examples", 4, "At most this many inputs.")
flags.DEFINE_string("visualize_dir", None, "Where the PNGs and their .npz/.json data go.")
flags.DEFINE_string("decode_hparams", "", "As t2t-decode's, e.g. 'beam_size=4,alpha=0.6'.")
flags.DEFINE_enum("heads", "mean", ["mean", "all"], "Average the heads, or one map per head.")
flags.DEFINE_string(
    "gold_trees",
    "",
    "A parsing run's gold trees, one per input in order: drawn beside each decode.",
)
flags.mark_flags_as_required(["output_dir", "visualize_dir"])


def main(argv):
    del argv
    logging.set_verbosity(logging.INFO)
    from t2t_lite.visualization import runner

    def visualize():
        lines, source = runner.read_inputs(FLAGS.inputs, FLAGS.decode_from_file, FLAGS.max_examples)
        written = runner.visualize(
            FLAGS.output_dir,
            FLAGS.visualize_dir,
            lines,
            source,
            FLAGS.checkpoint_path,
            FLAGS.decode_hparams,
            FLAGS.heads,
            FLAGS.gold_trees,
        )
        print("\n".join(path for path in written if path.endswith(".png")))

    cli.run("t2t-visualize", visualize)


def run() -> None:
    """The t2t-visualize console script."""
    cli.start(__doc__, main)
