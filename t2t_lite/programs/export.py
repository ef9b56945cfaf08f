"""t2t-export: a trained run -> a SavedModel that TF Serving serves, text in, text out,
(--format=ctranslate2, Transformer runs) a CTranslate2 model directory, or
(--format=keras) the model as a .keras file that keras.models.load_model reads."""

from absl import flags, logging

from t2t_lite import cli

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "output_dir", None, "The t2t-train --output_dir (experiment.json, checkpoints)."
)
flags.DEFINE_string("export_dir", None, "Versions are written to <export_dir>/<version>/.")
flags.DEFINE_string(
    "checkpoint_path", "", "A checkpoint prefix (e.g. from t2t-avg-checkpoints); default: newest."
)
flags.DEFINE_string(
    "decode_hparams", "", 'The search in the graph, e.g. "beam_size=4,alpha=0.6" (the default).'
)
flags.DEFINE_integer("version", 0, "The export's version; default: one past the newest.")
flags.DEFINE_string("data_dir", "", "The problem's data dir (where a vocabulary lives).")
flags.DEFINE_string(
    "format",
    "saved_model",
    "saved_model (TF Serving), ctranslate2 (a CTranslate2 model directory; transformer runs) "
    "or keras (model.keras, vocab.txt: the Keras model, for keras.models.load_model).",
)
flags.DEFINE_integer(
    "xla_max_rows",
    0,
    "SavedModel searches of at most this many rows (inputs x beam_size) run XLA-compiled "
    "(much faster for small batches; TF Serving needs --xla_cpu_compilation_enabled). "
    "0: never.",
)
flags.mark_flags_as_required(["output_dir", "export_dir"])


def main(argv):
    del argv
    logging.set_verbosity(logging.INFO)
    from t2t_lite.export import exporter

    def export():
        path = exporter.export(
            FLAGS.output_dir,
            FLAGS.export_dir,
            FLAGS.checkpoint_path,
            FLAGS.decode_hparams,
            FLAGS.version,
            FLAGS.data_dir,
            FLAGS.format,
            FLAGS.xla_max_rows,
        )
        print(path)

    cli.run("t2t-export", export)


def run() -> None:
    """The t2t-export console script."""
    cli.start(__doc__, main)
