"""t2t-datagen: write a problem's sharded TFRecord files into --data_dir."""

from absl import flags

from t2t_lite import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("problem", None, "Registered problem name.")
flags.DEFINE_string("data_dir", None, "Directory for the TFRecord files.")
flags.DEFINE_integer("random_seed", 1, "Generation seed: the same seed gives identical files.")
flags.DEFINE_list(
    "train_files",
    [],
    "Problems on your files: train.tsv (source<TAB>target), or SOURCE,TARGET files in that "
    "order: the model reads the first and writes the second (English -> German: "
    "train.en,train.de).",
)
flags.DEFINE_list(
    "dev_files", [], "Problems on your files: dev.tsv, or SOURCE,TARGET as --train_files."
)
flags.DEFINE_list(
    "test_files", [], "Parsing problems: treebank files of the test split (with --dev_files)."
)
flags.DEFINE_integer("vocab_size", 0, "Problems on your files: vocabulary size.")
flags.DEFINE_string(
    "language_pair",
    "",
    "translate_gettext: SOURCE-TARGET language codes, e.g. en-de (--train_files then names "
    "directories of .mo/.po catalogs).",
)
flags.DEFINE_integer(
    "vocab_sample_lines",
    0,
    "Text problems: learn the vocabulary from a seeded uniform sample of this many training "
    "lines (0: the problem's default, 200000; 1000000 for the WMT problems).",
)
flags.mark_flags_as_required(["problem", "data_dir"])


def main(argv):
    del argv
    from t2t_lite.problems import datagen

    def generate():
        counts = datagen.generate(
            FLAGS.problem,
            FLAGS.data_dir,
            FLAGS.random_seed,
            train_files=FLAGS.train_files,
            dev_files=FLAGS.dev_files,
            vocab_size=FLAGS.vocab_size,
            vocab_sample_lines=FLAGS.vocab_sample_lines,
            language_pair=FLAGS.language_pair,
            test_files=FLAGS.test_files,
        )
        print(", ".join(f"{split}: {n} examples" for split, n in sorted(counts.items())))

    cli.run("t2t-datagen", generate)


def run() -> None:
    """The t2t-datagen console script."""
    cli.start(__doc__, main)
