"""t2t-train: train (or resume) a model on a problem; print the final metrics."""

from absl import flags, logging

from t2t_lite import cli, config_flags
from t2t_lite.training.config import TrainConfig

FLAGS = flags.FLAGS
flags.DEFINE_string("problem", None, "Registered problem name.")
flags.DEFINE_string("model", None, "Registered model name, e.g. transformer.")
flags.DEFINE_string("hparams_set", None, "Registered hparams set, e.g. transformer_tiny.")
flags.DEFINE_string("hparams", "", 'Overrides, e.g. "hidden_size=64,label_smoothing=0.0".')
flags.DEFINE_string("data_dir", None, "TFRecord directory; generated there if empty.")
flags.DEFINE_string("output_dir", None, "Checkpoints, summaries, experiment.json, metrics.json.")
config_flags.define(TrainConfig)  # --train_steps, --strategy, ...: TrainConfig's fields
flags.mark_flags_as_required(["problem", "model", "hparams_set", "data_dir", "output_dir"])


def main(argv):
    del argv
    logging.set_verbosity(logging.INFO)
    from t2t_lite import experiment
    from t2t_lite.training import trainer

    def train():
        exp = experiment.Experiment.resolve(
            FLAGS.model, FLAGS.problem, FLAGS.hparams_set, FLAGS.hparams
        )
        config = config_flags.build(TrainConfig)
        results = trainer.train(exp, FLAGS.data_dir, FLAGS.output_dir, config)
        print(cli.format_metrics(results))

    cli.run("t2t-train", train)


def run() -> None:
    """The t2t-train console script."""
    cli.start(__doc__, main)
