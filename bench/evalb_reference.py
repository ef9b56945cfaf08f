"""t2t_lite's EVALB scorer against the EVALB C program, on real treebank trees.

    python bench/evalb_reference.py --evalb_dir=PATH/EVALB \
        --treebank=PATH/treebank/combined [--sentences=400]

--evalb_dir holds the public EVALB source (`evalb.c` and `COLLINS.prm`, as
in the EVALB/ folder of nikitakit/self-attentive-parser); it is compiled
here with the C compiler (`cc`, or $CC) into a temporary folder. The gold
side is --sentences trees of the treebank files (preprocessed as the parsing
problem does, written as `(TOP ...)` lines); the test side is, per sentence,
one of: the gold itself, a right-branching tree, a tree with labels changed,
brackets moved or added, tags changed (punctuation tags among them, which
EVALB's length check then meets), function tags and ADVP/PRT swaps, a word
dropped or added or changed, a bracket left open, and an empty parse. Both
scorers read the same two files; every per-sentence figure (status, length,
recall, precision, matched, gold and test brackets, crossing, words, tags)
and every summary figure, for all sentences and for those of at most 40
words, must be identical as printed (two decimals).

Prints one JSON line: sentences, the sentences of each kind, per-sentence
and summary figures compared and how many differ, both F1s, the machine.
Lines of 5,000 characters or more are left out of the check set: the C
program reads a line in pieces of 4,999 characters. A word outside any
bracket is not in the set: the C program loops on it until its error limit
ends the run (t2t_lite scores the line as an error sentence instead).
"""

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import common

from t2t_lite import files
from t2t_lite.parsing import trees
from t2t_lite.problems import parsing
from t2t_lite.reproduction import parsing_table
from t2t_lite.scoring import evalb

FLAGS = flags.FLAGS
flags.DEFINE_string("evalb_dir", "", "A folder with EVALB's evalb.c and COLLINS.prm.")
flags.DEFINE_string("treebank", "", "Bracketed treebank files (a folder or a file).")
flags.DEFINE_integer("sentences", 400, "How many trees to check.")
flags.DEFINE_integer("seed", 1, "Seed of the test side's changes.")

KINDS = (
    "gold",
    "right_branching",
    "relabel",
    "move_bracket",
    "add_bracket",
    "retag",
    "punctuation_tag",
    "function_tags",
    "advp_prt",
    "drop_word",
    "add_word",
    "change_word",
    "unbalanced",
    "empty",
)
LABELS = ("NP", "VP", "PP", "S", "SBAR", "ADJP", "ADVP", "QP", "PRN", "WHNP")
SUMMARY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9 ]*?)\s*=\s*(\S+)$")


def compile_evalb(source_dir: str, out_dir: str) -> str:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise SystemExit("no C compiler (cc or $CC) to build EVALB with")
    binary = os.path.join(out_dir, "evalb")
    source = os.path.join(source_dir, "evalb.c")
    subprocess.run([compiler, "-O2", "-w", "-o", binary, source], check=True)
    return binary


def _constituents(tree: trees.Tree) -> list[trees.Tree]:
    if tree.is_preterminal:
        return []
    return [tree, *(c for child in tree.children for c in _constituents(child))]


def changed(tree: trees.Tree, kind: str, rng: random.Random) -> str:
    """The test line of `kind` for a gold tree (module docstring)."""
    tree = trees.Tree(tree.label, [_copy(c) for c in tree.children])
    nodes = _constituents(tree)
    leaves = tree.preterminals()
    if kind == "right_branching":
        return trees.output_line(parsing_table.right_branching(tree.words()))
    if kind == "relabel":
        for node in rng.sample(nodes, max(1, len(nodes) // 3)):
            node.label = rng.choice(LABELS)
    elif kind == "move_bracket":
        node = rng.choice([n for n in nodes if len(n.children) > 1] or nodes)
        if len(node.children) > 1:
            cut = rng.randrange(1, len(node.children))
            node.children = [trees.Tree(node.label, node.children[:cut]), *node.children[cut:]]
            node.label = rng.choice(LABELS)
    elif kind == "add_bracket":
        for node in rng.sample(nodes, max(1, len(nodes) // 2)):
            node.children = [trees.Tree(rng.choice(LABELS), node.children)]
    elif kind == "retag":
        for leaf in rng.sample(leaves, max(1, len(leaves) // 4)):
            leaf.label = rng.choice(("NN", "VB", "JJ", "DT", "IN"))
    elif kind == "punctuation_tag":
        leaf = rng.choice(leaves)
        leaf.label = "." if leaf.label not in evalb.DELETE_LABELS else "NN"
    elif kind == "function_tags":
        for node in nodes:
            node.label += rng.choice(("-SBJ", "-TMP-1", "=2", ""))
    elif kind == "advp_prt":
        for node in nodes:
            node.label = {"ADVP": "PRT", "PRT": "ADVP"}.get(node.label, node.label)
        for leaf in leaves:  # tags too: EVALB's tag accuracy uses the same equivalence
            leaf.label = {"RP": "ADVP", "RB": "PRT"}.get(leaf.label, leaf.label)
    elif kind == "drop_word":
        leaf = rng.choice(leaves)
        _remove(tree, leaf)
    elif kind == "add_word":
        leaf = rng.choice(leaves)
        parent = _parent(tree, leaf)
        parent.children.insert(parent.children.index(leaf), trees.Tree("NN", word="extra"))
    elif kind == "change_word":
        rng.choice(leaves).word = "changed"
    elif kind == "unbalanced":
        return trees.output_line(tree)[:-1]  # the TOP bracket left open
    elif kind == "empty":
        return ""
    return trees.output_line(tree)


def _copy(tree: trees.Tree) -> trees.Tree:
    return trees.Tree(tree.label, [_copy(c) for c in tree.children], tree.word)


def _parent(tree: trees.Tree, target: trees.Tree) -> trees.Tree:
    for child in tree.children:
        if child is target:
            return tree
        if not child.is_preterminal and (found := _parent(child, target)) is not None:
            return found
    return None


def _remove(tree: trees.Tree, target: trees.Tree) -> None:
    parent = _parent(tree, target)
    parent.children.remove(target)


def c_figures(binary: str, prm: str, gold: str, test: str) -> tuple[list[list[str]], dict]:
    """The C program's per-sentence rows and summary (both blocks), as printed."""
    done = subprocess.run(
        [binary, "-p", prm, "-e", "1000000", gold, test],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"evalb exited with {done.returncode}: {done.stderr[-2000:]}")
    rows, summary, block = [], {}, "all"
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) == 12 and fields[0].isdigit():
            rows.append(fields)
        elif line.startswith("-- len<="):
            block = "len<=40"
        elif match := SUMMARY.match(line.strip()):
            summary[f"{block}: {match.group(1).strip()}"] = match.group(2)
    return rows, summary


def t2t_figures(gold_lines: list[str], test_lines: list[str]) -> tuple[list[list[str]], dict]:
    """t2t_lite's figures in the C program's print format."""
    rows = []
    for number, (g, t) in enumerate(zip(gold_lines, test_lines, strict=True), start=1):
        s = evalb.score_sentence(g, t)
        gold_b, test_b = s.gold_brackets, s.test_brackets
        recall = 100.0 * s.matched / gold_b if gold_b else 0.0
        precision = 100.0 * s.matched / test_b if test_b else 0.0
        accuracy = 100.0 * s.correct_tags / s.words if s.words else 0.0
        rows.append(
            [
                str(number),
                str(s.length),
                str(s.status),
                f"{recall:.2f}",
                f"{precision:.2f}",
                str(s.matched),
                str(gold_b),
                str(test_b),
                str(s.crossing),
                str(s.words),
                str(s.correct_tags),
                f"{accuracy:.2f}",
            ]
        )
    result = evalb.score_lines(gold_lines, test_lines)
    summary = {}
    names = {
        "Number of sentence": "sentences",
        "Number of Error sentence": "errors",
        "Number of Skip  sentence": "skipped",
        "Number of Valid sentence": "valid",
        "Bracketing Recall": "recall",
        "Bracketing Precision": "precision",
        "Bracketing FMeasure": "f1",
        "Complete match": "exact_match",
        "Average crossing": "average_crossing",
        "No crossing": "no_crossing",
        "2 or less crossing": "two_or_less_crossing",
        "Tagging accuracy": "tagging_accuracy",
    }
    for block, figures in (("all", result), ("len<=40", result["len<=40"])):
        for printed, key in names.items():
            value = figures[key]
            text = f"{value:.2f}" if isinstance(value, float) else str(value)
            summary[f"{block}: {' '.join(printed.split())}"] = text
    return rows, summary


def main(argv):
    del argv
    rng = random.Random(FLAGS.seed)
    paths = parsing.tree_files([FLAGS.treebank], "--treebank")
    gold_trees = []
    for path in paths:
        for tree, _ in trees.read_trees(files.read_text(path), path):
            kept = trees.preprocess(tree)
            if kept is not None and len(trees.output_line(kept)) < 4999:
                gold_trees.append(kept)
    gold_trees = gold_trees[: FLAGS.sentences]
    kinds = [KINDS[i % len(KINDS)] for i in range(len(gold_trees))]
    gold_lines = [trees.output_line(t) for t in gold_trees]
    test_lines = [changed(t, k, rng) for t, k in zip(gold_trees, kinds, strict=True)]
    with tempfile.TemporaryDirectory() as tmp:
        binary = compile_evalb(FLAGS.evalb_dir, tmp)
        gold_path, test_path = os.path.join(tmp, "gold.txt"), os.path.join(tmp, "test.txt")
        for path, lines in ((gold_path, gold_lines), (test_path, test_lines)):
            with open(path, "w", encoding="utf-8") as f:
                f.write("".join(line + "\n" for line in lines))
        prm = os.path.join(FLAGS.evalb_dir, "COLLINS.prm")
        c_rows, c_summary = c_figures(binary, prm, gold_path, test_path)
    rows, summary = t2t_figures(gold_lines, test_lines)
    c_summary = {" ".join(k.split()): v for k, v in c_summary.items()}
    differing_rows = [i + 1 for i, (a, b) in enumerate(zip(rows, c_rows, strict=False)) if a != b]
    differing_summary = sorted(k for k in c_summary if summary.get(k) != c_summary[k])
    print(
        json.dumps(
            {
                "bench": "evalb_reference",
                "sentences": len(gold_lines),
                "kinds": {k: kinds.count(k) for k in KINDS},
                "rows_compared": min(len(rows), len(c_rows)),
                "rows_missing": abs(len(rows) - len(c_rows)),
                "rows_differing": differing_rows[:20],
                "summary_compared": len(c_summary),
                "summary_differing": {k: [summary.get(k), c_summary[k]] for k in differing_summary},
                "f1_t2t_lite": summary["all: Bracketing FMeasure"],
                "f1_evalb": c_summary.get("all: Bracketing FMeasure"),
                "errors": summary["all: Number of Error sentence"],
                "skipped": summary["all: Number of Skip sentence"],
                "identical": not differing_rows
                and not differing_summary
                and len(rows) == len(c_rows),
                "machine": common.machine(),
            }
        )
    )


if __name__ == "__main__":
    app.run(main)
