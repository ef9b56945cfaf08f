"""t2t-decode: decode with a trained model (a file, stdin, or an eval split with metrics)."""

from absl import flags, logging

from t2t_lite import cli, config_flags
from t2t_lite.decoding.options import DecodeOptions

config_flags.define(DecodeOptions)  # --output_dir, --decode_from_file, ...: DecodeOptions' fields
flags.mark_flags_as_required(["output_dir"])


def main(argv):
    del argv
    logging.set_verbosity(logging.INFO)
    from t2t_lite.decoding import runner
    from t2t_lite.export import ctranslate2_engine

    engines = {"ctranslate2": ctranslate2_engine.from_run}
    cli.run("t2t-decode", lambda: runner.run(config_flags.build(DecodeOptions), engines=engines))


def run() -> None:
    """The t2t-decode console script."""
    cli.start(__doc__, main)
