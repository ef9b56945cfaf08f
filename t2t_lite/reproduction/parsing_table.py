"""t2t-compare's parsing table: F1 on the user's treebank beside the
Transformer paper's Table 4 (English constituency parsing, WSJ section 23).

    t2t-compare --problems=parsing_from_files --models=parsing_table \
        --data_dir=D --output_dir=O --seeds=1,2,3 --split=dev

Rows: a right-branching baseline (no training: every word opens a
constituent that spans the rest of the sentence), the Transformer with the
paper's 4 layers at a CPU's width, the Universal Transformer (4 recurrent
steps of one such layer; beyond the paper), then the paper's rows. Each run
decodes the split's sentences (t2t-datagen's `<problem>-<split>.words`) with
the search of --decode_hparams (the paper's, `parsing`, by default), every
output made a tree over its sentence's words (the tagger rows, as their
recipe, decode the average of a run's last AVERAGE_LAST checkpoints; the
others its newest), and is scored against the gold
trees by EVALB's rules (scoring/evalb.py). A run's decode and score are kept
in its directory (`parse_<split>.json`, with the checkpoint, data and search
they came from) and read back while those are unchanged.
"""

import dataclasses
import os

import tensorflow as tf

from t2t_lite import files, registry, run_dir, stamp
from t2t_lite.data import problem as problem_lib
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.decoding import runner
from t2t_lite.parsing import trees
from t2t_lite.reproduction import runs, seed_stats
from t2t_lite.reproduction.entries import Entry
from t2t_lite.scoring import evalb
from t2t_lite.training import averaging

# The Transformer paper's Table 4: (parser, training, F1 on WSJ section 23).
PAPER_TABLE4 = (
    ("Vinyals & Kaiser et al. (2014)", "WSJ only, discriminative", 88.3),
    ("Petrov et al. (2006)", "WSJ only, discriminative", 90.4),
    ("Zhu et al. (2013)", "WSJ only, discriminative", 90.4),
    ("Dyer et al. (2016)", "WSJ only, discriminative", 91.7),
    ("Transformer (4 layers)", "WSJ only, discriminative", 91.3),
    ("Zhu et al. (2013)", "semi-supervised", 91.3),
    ("Huang & Harper (2009)", "semi-supervised", 91.3),
    ("McClosky et al. (2006)", "semi-supervised", 92.1),
    ("Vinyals & Kaiser et al. (2014)", "semi-supervised", 92.1),
    ("Transformer (4 layers)", "semi-supervised", 92.7),
    ("Luong et al. (2015)", "multi-task", 93.0),
    ("Dyer et al. (2016)", "generative", 93.3),
)
ENTRIES = {
    "transformer_parsing": Entry(
        "Transformer (4 layers, d=128)", "transformer", "transformer_parsing_cpu", ""
    ),
    "universal_transformer_parsing": Entry(
        "Universal Transformer (4 steps, d=128)",
        "universal_transformer",
        "universal_transformer_parsing_cpu",
        "",
    ),
    # The recipe (docs/parsing.md, round 4): one label per word
    # (parsing_from_files_labels), an encoder tagging each word.
    "transformer_tagger": Entry(
        "Transformer encoder tagger (4 layers, d=256)",
        "transformer_encoder",
        "transformer_parsing_tagger",
        "",
    ),
    "universal_transformer_tagger": Entry(
        "Universal Transformer encoder tagger (4 steps, d=256)",
        "universal_transformer_encoder",
        "universal_transformer_parsing_tagger",
        "",
    ),
}
# The recipe's last step (docs/parsing.md, round 5: 5 against 3 on dev): the
# taggers' rows decode the average of a run's last 5 checkpoints
# (t2t-avg-checkpoints' default count and output).
AVERAGE_LAST = 5
BASELINE = "right_branching"
TABLE = "parsing_table"  # every row
DEFAULT_SEARCH = runs.DEFAULT_SEARCH
KEPT_FILE = "parse_{split}.json"
DECODED_FILE = "parse_{split}.trees"


def is_parsing(problems: list[str]) -> bool:
    """Whether --problems names parsing problems; mixing kinds is an error."""
    kinds = {hasattr(problem_lib.get(name), "gold_paths") for name in problems}
    if len(kinds) > 1:
        raise ValueError("--problems: compare parsing problems and others separately")
    return kinds == {True}


def parse_rows(models: list[str], aligned: bool = True) -> list[str]:
    """--models -> row keys: "parsing_table" is every row (the taggers only where
    the problem's targets are `aligned`, one label per word); else names of
    ENTRIES or right_branching."""
    every = [BASELINE, *(k for k in ENTRIES if aligned or not _tags_inputs(ENTRIES[k]))]
    keys = []
    for name in models:
        for key in every if name == TABLE else [name]:
            if key not in ENTRIES and key != BASELINE:
                raise ValueError(
                    f"--models: {key!r} is not a parsing row; rows: {BASELINE}, "
                    f"{', '.join(ENTRIES)}, or {TABLE} for all"
                )
            if key not in keys:
                keys.append(key)
    return keys


def _tags_inputs(entry: Entry) -> bool:
    """Whether the entry's model is a tagger (models/encoder_only.py)."""
    return getattr(registry.MODELS.get(entry.model), "tags_inputs", False)


def _averaged(key: str) -> bool:
    """Whether a row decodes an average of checkpoints (AVERAGE_LAST): the taggers'."""
    return key in ENTRIES and _tags_inputs(ENTRIES[key])


def right_branching(words: list[str], tags: list[str]) -> trees.Tree:
    """(S w1 (S w2 (... (S wn)))): each word opens a constituent over the rest."""
    node = trees.Tree("S", [trees.Tree(tags[-1], word=words[-1])])
    for word, tag in zip(reversed(words[:-1]), reversed(tags[:-1]), strict=True):
        node = trees.Tree("S", [trees.Tree(tag, word=word), node])
    return node


def _gold_trees(gold_path: str) -> list[trees.Tree]:
    """The gold file's trees, one per line, as written ((TOP ...) included)."""
    gold = []
    for number, line in enumerate(files.read_lines(gold_path), start=1):
        [(tree, _)] = trees.read_trees(line, f"{gold_path}:{number}")
        gold.append(tree)
    return gold


def baseline_score(prob, data_dir: str, split: str) -> dict:
    """EVALB figures of right-branching trees over the split's sentences, with the
    gold tags (EVALB deletes punctuation by its tag; tags are not scored)."""
    _, gold_path = prob.gold_paths(data_dir, split)
    gold = _gold_trees(gold_path)
    test = [trees.output_line(right_branching(t.words(), t.tags())) for t in gold]
    return evalb.score_lines(files.read_lines(gold_path), test)


def with_gold_tags(decoded: list[str], gold_path: str) -> list[str]:
    """Decoded trees with the gold trees' tags (evalb.with_gold_tags), which is how
    the table scores brackets, as Vinyals et al. (2015) scored trees decoded with
    every tag XX; `t2t-evalb --gold_tags` scores a decoded file the same way."""
    return evalb.with_gold_tags(files.read_lines(gold_path), decoded)


def run_score(run: str, data_dir: str, split: str, search: str, average: int = 0) -> dict:
    """EVALB figures of a run's decode of the split's sentences (kept; module
    docstring): its newest checkpoint, or the average of its last `average`."""
    checkpoint = averaging.newest_average(run, average) if average else ""
    prob, model, checkpoint = run_dir.open_run(run, checkpoint)
    # The split's sentences are the treebank's own words: read as they are.
    hp = dataclasses.replace(decoder_lib.decode_hparams(search), parse_input="tokens")
    wanted = depends_on(checkpoint, prob, data_dir, split, hp)
    kept_path = os.path.join(run, KEPT_FILE.format(split=split))
    kept = stamp.kept_body(kept_path, wanted)
    if kept is not None:
        return kept["figures"]
    words_path, gold_path = prob.gold_paths(data_dir, split)
    decoded = os.path.join(run, DECODED_FILE.format(split=split))
    decoder = decoder_lib.Decoder(model, hp, constraint=prob.decode_constraint(hp))
    errors = runner.decode_file(decoder, prob, words_path, decoded)
    if errors:
        raise ValueError(f"{run}: decoding {words_path} failed: {errors[0]}")
    test = with_gold_tags(files.read_lines(decoded), gold_path)
    figures = evalb.score_lines(files.read_lines(gold_path), test)
    stamp.keep(kept_path, wanted, {"figures": figures})
    return figures


def keep_record(records_dir: str, problem: str, split: str, key: str, seed, run: str) -> None:
    """The run's kept figures (what they depend on, and the EVALB figures) as
    records_dir/<problem>/<split>/<row>/seed<k>.json (seed.json for one run):
    a parsing table's rows kept beside the other tables' records."""
    name = f"seed{seed}.json" if seed is not None else "seed.json"
    target = os.path.join(records_dir, problem, split, key, name)
    source = os.path.join(run, KEPT_FILE.format(split=split))
    with tf.io.gfile.GFile(source, "rb") as f:
        data = f.read()
    if tf.io.gfile.exists(target):
        with tf.io.gfile.GFile(target, "rb") as f:
            if f.read() == data:
                return
    files.write_bytes_atomically(target, data)


def depends_on(checkpoint: str, problem, data_dir: str, split: str, hp) -> dict:
    """What a run's EVALB figures depend on: the checkpoint (name and content),
    the data dir and its files, the split and the search."""
    return {
        **stamp.checkpoint(checkpoint),
        **stamp.data(problem, data_dir),
        "split": split,
        "decode_hparams": stamp.decode(hp),
    }


def compare(request: runs.Request) -> str:
    """The parsing table on one parsing problem's request.split -> its markdown
    (also output_dir/table.md); request.search: --decode_hparams of every decode."""
    seed_list = request.seed_list()
    output_dir, models, problems = request.output_dir, request.models, request.problems
    data_dir, config, hparams = request.data_dir, request.config, request.hparams
    split, search = request.split, request.search
    if len(problems) != 1:
        raise ValueError(f"--problems: the parsing table takes one problem, not {problems}")
    (problem,) = problems
    prob = problem_lib.get(problem)
    if split not in prob.evaluation_splits:
        raise ValueError(
            f"--split: a parsing table scores {' or '.join(prob.evaluation_splits)}, not {split!r}"
        )
    decoder_lib.decode_hparams(search)  # a bad search fails before any training
    if request.config.keep_best or request.greedy_examples:
        flag = "--keep_best" if request.config.keep_best else "--greedy_examples"
        raise ValueError(
            f"{flag}: for the algorithmic and Learning to Execute tables, not a parsing table "
            "(its tagger rows average their last checkpoints; every row is scored by EVALB)"
        )
    if request.records_dir:  # before any training: a bad --records is one line, not a lost table
        files.check_writable_dir(request.records_dir, "--records")
    keys = parse_rows(models, prob.aligned_targets)
    trained = {ENTRIES[key]: key for key in keys if key in ENTRIES}
    # Every run keeps the checkpoints an averaged row reads.
    keep = max(config.keep_checkpoint_max, AVERAGE_LAST)
    config = dataclasses.replace(config, eval_steps=runs.EVAL_STEPS, keep_checkpoint_max=keep)
    train = request.missing == "train"
    rows = runs.run(
        problems, list(trained), data_dir, output_dir, config, seed_list, hparams, trained, train
    )
    rows, left_out = runs.finished_only(rows, trained)
    scores = {}
    for row in rows:
        key = trained[row["entry"]]
        average = AVERAGE_LAST if _averaged(key) else 0
        scores[key] = []
        for seed, run, _ in seed_stats.runs(row):
            scores[key].append(run_score(run, data_dir, split, search, average))
            if request.records_dir:
                keep_record(request.records_dir, problem, split, key, seed, run)
    if BASELINE in keys:
        scores[BASELINE] = [baseline_score(prob, data_dir, split)]
    text = markdown(keys, scores, problem, split, search) + runs.missing_note(left_out)
    files.write_atomically(os.path.join(output_dir, "table.md"), text + "\n")
    return text


def markdown(keys: list[str], scores: dict, problem: str, split: str, search: str) -> str:
    """The table: our rows (F1 here), then the paper's (F1 on WSJ section 23)."""
    here = f"F1, {problem} {split} (here)"
    lines = [
        f"| parser | training | F1, WSJ section 23 (paper) | {here} | exact match (here) |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for key in keys:
        if key not in scores:
            continue
        label = "Right-branching baseline" if key == BASELINE else ENTRIES[key].label
        training = "none" if key == BASELINE else f"{problem} train"
        f1 = seed_stats.spread([s["f1"] for s in scores[key]])
        exact = seed_stats.spread([s["exact_match"] for s in scores[key]])
        lines.append(f"| {label} | {training} | | {f1} | {exact} |")
    for parser, training, f1 in PAPER_TABLE4:
        lines.append(f"| {parser} | {training} | {f1:.1f} | | |")
    sentences = next(iter(scores.values()))[0]["sentences"] if scores else 0
    lines.append("")
    lines.append(
        f"F1: labelled brackets by EVALB's rules (COLLINS.prm) on the {sentences} sentences of "
        f"{split}, each parse given the gold trees' part-of-speech tags (t2t-evalb "
        f"--gold_tags), median [min, max] over seeds; search --decode_hparams={search!r}."
    )
    if any(_averaged(key) for key in scores):
        lines.append(
            f"The tagger rows decode the average of each run's last {AVERAGE_LAST} checkpoints."
        )
    return "\n".join(lines)
