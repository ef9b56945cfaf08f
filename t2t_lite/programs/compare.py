"""t2t-compare: train models on algorithmic, Learning to Execute, bAbI or translation
problems; print a table beside the papers' (t2t_lite.reproduction.tables.compare).
Parsing problems (--models=parsing_table) print the Transformer paper's Table 4
beside F1 on your treebank (reproduction/parsing_table.py).

Translation rows (--models=table3, table7 or their rows) print the Transformer
paper's Table 3 or the UT paper's Table 7 (reproduction/translation.py,
translation_compare.py). --records keeps a table's figures past its run
directories (reproduction/records.py).

bAbI problems get Table 1's form (error per task, failed tasks) and, for the
adaptive UT, ponder maps of one story per task in <run_dir>/ponder/.
"""

from absl import flags, logging

from t2t_lite import cli
from t2t_lite.training.config import TrainConfig

FLAGS = flags.FLAGS
flags.DEFINE_list("problems", ["algorithmic_reverse_decimal20"], "Registered problems.")
flags.DEFINE_list(
    "models",
    ["transformer", "universal_transformer"],
    "Entries of t2t_lite.reproduction.entries.ENTRIES (an unknown name's error lists "
    "them; README, t2t-compare); the *_coupled ones: reverse and addition problems only.",
)
flags.DEFINE_string("data_dir", None, "TFRecord directory; generated there if empty.")
flags.DEFINE_string("output_dir", None, "One run directory per problem and model; table.md.")
flags.DEFINE_integer("train_steps", TrainConfig.train_steps, "Training steps of every run.")
flags.DEFINE_integer(
    "local_eval_frequency",
    TrainConfig.local_eval_frequency,
    "Checkpoint and evaluate every N steps.",
)
flags.DEFINE_integer("random_seed", TrainConfig.random_seed, "Seed of every run.")
flags.DEFINE_float(
    "train_minutes",
    0.0,
    "Compare at equal training time: every run stops after this many minutes of "
    "training (or at --train_steps, if sooner); 0: at --train_steps.",
)
flags.DEFINE_string(
    "hparams",
    "",
    "Overrides for every run, after each model's own, e.g. 'max_length=128' for the "
    "Learning to Execute problems.",
)
flags.DEFINE_list(
    "seeds",
    [],
    "Several training seeds (e.g. 1,2,3): runs under <output_dir>/seed<k>/, and the "
    "table prints each figure's median [min, max] over them. Overrides --random_seed.",
)
flags.DEFINE_integer(
    "greedy_examples",
    0,
    "Also decode this many test examples greedily (< 0: all) and print their accuracy "
    "beside the teacher-forced one (0: not).",
)
flags.DEFINE_integer(
    "save_checkpoints_steps",
    0,
    "Also checkpoint every N steps, apart from evaluation (0: with each evaluation); "
    "an averaged translation row averages the last 5.",
)
flags.DEFINE_string(
    "split",
    "dev",
    "Translation and parsing rows: the split scored (perplexity and BLEU, or F1); choose on "
    "dev, report test once.",
)
flags.DEFINE_alias("bleu_split", "split")  # the flag's earlier name
flags.DEFINE_string(
    "decode_hparams",
    "parsing",
    "Parsing rows: the search of every decode (t2t-decode's --decode_hparams; 'parsing' is "
    "the paper's: beam 21, alpha 0.3, input + 300 symbols).",
)
flags.DEFINE_enum(
    "missing",
    "train",
    ["train", "skip"],
    "Runs not finished: train them (resuming any), or skip them and print the table "
    "of the finished ones, naming those left out (read a long table while it trains).",
)
flags.DEFINE_string(
    "records",
    "",
    "Keep every run's figures in this directory (one file per row or model and seed, "
    "with what they depend on, the data's bytes included) and print a run's record "
    "where its run directory is not there (deleted, lost, or not finished), training "
    "it no more; the table names them. Not for bAbI tables. A parsing table keeps each "
    "run's EVALB figures there (<problem>/<split>/<row>/seed<k>.json) and scores the runs "
    "it has (a missing run is trained, not read from its record).",
)
flags.DEFINE_string(
    "keep_best",
    "",
    "SPLIT/METRIC, e.g. valid_long/sequence_accuracy: every run keeps the checkpoint of "
    "its best periodic evaluation of SPLIT (t2t-train --keep_best), and the table prints "
    "that checkpoint's figures, greedy ones included ('': the last checkpoint's). Not for "
    "translation rows.",
)
flags.mark_flags_as_required(["data_dir", "output_dir"])


def main(argv):
    del argv
    logging.set_verbosity(logging.INFO)
    from t2t_lite.reproduction import runs, tables

    def compare():
        config = TrainConfig(
            train_steps=FLAGS.train_steps,
            local_eval_frequency=FLAGS.local_eval_frequency,
            random_seed=FLAGS.random_seed,
            train_minutes=FLAGS.train_minutes,
            save_checkpoints_steps=FLAGS.save_checkpoints_steps,
            keep_best=FLAGS.keep_best,
        )
        request = runs.Request(
            output_dir=FLAGS.output_dir,
            models=FLAGS.models,
            problems=FLAGS.problems,
            data_dir=FLAGS.data_dir,
            config=config,
            seeds=FLAGS.seeds,
            hparams=FLAGS.hparams,
            greedy_examples=FLAGS.greedy_examples,
            missing=FLAGS.missing,
            records_dir=FLAGS.records,
            split=FLAGS.split,
            search=FLAGS.decode_hparams,
        )
        table = tables.compare(request)
        print(table)

    cli.run("t2t-compare", compare)


def run() -> None:
    """The t2t-compare console script."""
    cli.start(__doc__, main)
