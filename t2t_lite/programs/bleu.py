"""t2t-bleu: corpus BLEU of a translation file against a reference file, one
line each in the same order, as tensor2tensor's t2t-bleu scored it (cased
and uncased), with sacrebleu's standard 13a tokenization on the text as
written.

    t2t-bleu --translation=test.decoded.de --reference=test.de

Prints one JSON line: bleu (cased), bleu_uncased, lines, and sacrebleu's
signature. Files may live on any TensorFlow filesystem.
"""

import json

from absl import flags

from t2t_lite import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("translation", None, "Hypotheses, one per line (e.g. t2t-decode's output).")
flags.DEFINE_string("reference", None, "References, one per line, aligned with --translation.")
flags.mark_flags_as_required(["translation", "reference"])


def main(argv):
    del argv
    from t2t_lite.scoring import aligned, bleu

    def score():
        pair = ("translation", FLAGS.translation), ("reference", FLAGS.reference)
        print(json.dumps(aligned.score_files(*pair, bleu.file_bleu)))

    cli.run("t2t-bleu", score)


def run() -> None:
    """The t2t-bleu console script."""
    cli.start(__doc__, main)
