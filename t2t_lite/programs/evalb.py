"""t2t-evalb: labelled bracket scores of parses against gold trees, as EVALB
with COLLINS.prm computes them (one tree per line in both files).

    t2t-evalb --gold_file=D/parsing_english_ptb-test.trees --test_file=test.decoded [--gold_tags]

Prints one JSON line: recall, precision, f1, exact_match (complete match),
tagging accuracy and crossing brackets for all sentences and for those of at
most 40 words, in percent, with the counts of sentences, errors and skips.
"""

from absl import flags, logging

from t2t_lite import cli

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "gold_file", None, "Gold trees, one per line (t2t-datagen's <problem>-<split>.trees)."
)
flags.DEFINE_string("test_file", None, "Parses to score, one per line, in the gold file's order.")
flags.DEFINE_bool(
    "gold_tags",
    False,
    "Score brackets with the gold trees' part-of-speech tags in the parses (a parser that "
    "writes XX or mistags punctuation would otherwise lose sentences to EVALB's "
    "punctuation rule), as t2t-compare's parsing table scores.",
)
flags.mark_flags_as_required(["gold_file", "test_file"])


def main(argv):
    del argv
    from t2t_lite.scoring import aligned, evalb

    def score():
        pair = ("gold_file", FLAGS.gold_file), ("test_file", FLAGS.test_file)

        def score_lines(gold, test):
            if not FLAGS.gold_tags:
                return evalb.score_lines(gold, test)
            tagged, untagged = evalb.gold_tagged(gold, test)
            for note in untagged[:10]:
                logging.warning("line %s: scored with the test line's own tags", note)
            if len(untagged) > 10:
                logging.warning(
                    "... %d line(s) in all scored without the gold tags.", len(untagged)
                )
            return evalb.score_lines(gold, tagged)

        result = aligned.score_files(*pair, score_lines)
        for problem in result["problems"][:10]:
            logging.warning("line %s", problem)
        if len(result["problems"]) > 10:
            logging.warning(
                "... %d sentence(s) in all not scored or not balanced.", len(result["problems"])
            )
        print(evalb.json_line(result))

    cli.run("t2t-evalb", score)


def run() -> None:
    """The t2t-evalb console script."""
    cli.start(__doc__, main)
