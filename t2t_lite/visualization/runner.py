"""What t2t-visualize does: decode inputs with a trained run and draw what the model did."""

import io
import json
import os

import numpy as np
import tensorflow as tf
from absl import logging

from t2t_lite import files, run_dir
from t2t_lite.decoding import runner as decoding
from t2t_lite.parsing import trees
from t2t_lite.visualization import inspection, plots

HEADS = ("mean", "all")


def read_inputs(inputs: list[str], from_file: str, max_examples: int) -> tuple[list[str], str]:
    """The lines to visualize and where they came from (for error messages)."""
    if bool(inputs) == bool(from_file):
        raise ValueError("give exactly one of --inputs and --decode_from_file")
    if inputs:
        return list(inputs)[:max_examples], "--inputs"
    if not tf.io.gfile.exists(from_file):
        raise FileNotFoundError(f"--decode_from_file {from_file!r} not found")
    lines = files.read_lines(from_file)
    return lines[:max_examples], from_file


def write_example(
    found: inspection.Inspection, directory: str, prefix: str, heads: str
) -> list[str]:
    """PNGs of one example's maps, each with its data (.npz, ponder .json) -> paths written."""
    written = []
    text = found.text
    for kind in found.attention:
        arrays = inspection.to_arrays(found, kind)
        if heads == "mean":
            arrays["weights"] = arrays["weights"].mean(axis=1, keepdims=True)  # [N, 1, Q, K]
        queries, keys = found.axes(kind)
        title = f"{kind} attention of {text!r}"
        figure = plots.attention_figure(arrays["weights"], queries, keys, title, found.unit)
        base = os.path.join(directory, f"{prefix}_{kind}_attention")
        plots.save(figure, base + ".png")
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        files.write_bytes_atomically(base + ".npz", buffer.getvalue())
        written += [base + ".png", base + ".npz"]
    if found.ponder:
        record = inspection.ponder_record(found)
        base = os.path.join(directory, f"{prefix}_ponder")
        plots.save(plots.ponder_figure(record, f"ponder time of {text!r}"), base + ".png")
        files.write_bytes_atomically(base + ".json", json.dumps(record, indent=1).encode("utf-8"))
        written += [base + ".png", base + ".json"]
    return written


def read_gold_trees(path: str, count: int) -> list[trees.Tree]:
    """The first `count` trees of a tree file, one per input, in order."""
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"--gold_trees {path!r} not found")
    found = [tree for tree, _ in trees.read_trees(files.read_text(path), path)]
    if len(found) < count:
        raise ValueError(f"--gold_trees {path}: {len(found)} tree(s) for {count} input(s)")
    return found[:count]


def write_tree(
    decoded: str, gold: trees.Tree | None, directory: str, prefix: str, source: str
) -> list[str]:
    """The decoded tree (beside the gold one, if given) as a PNG, and both as text."""
    tree = next(iter(trees.read_trees(decoded, source)))[0]
    panels = [("decoded", tree)] + ([("gold", gold)] if gold is not None else [])
    base = os.path.join(directory, f"{prefix}_tree")
    plots.save(plots.tree_figure(panels), base + ".png")
    text = "".join(f"{title}\t{panel.bracketed()}\n" for title, panel in panels)
    files.write_bytes_atomically(base + ".txt", text.encode("utf-8"))
    return [base + ".png", base + ".txt"]


def visualize(
    output_dir: str,
    visualize_dir: str,
    lines: list[str],
    source: str,
    checkpoint_path: str = "",
    decode_hparams: str = "",
    heads: str = "mean",
    gold_trees: str = "",
) -> list[str]:
    """Decodes each line, then writes its attention (and ponder) pictures -> paths written.

    The maps are those of the teacher-forced pass over the input and the
    best decoded output (EOS included), from the model's own layers. A
    parsing run's decode is also drawn as a tree (`<n>_tree.png`), above the
    gold tree of its sentence where `gold_trees` (a tree file, one tree per
    input in order) gives one. Inputs are read as t2t-decode reads them (a
    parsing run's raw text split into the treebank's words).
    """
    if heads not in HEADS:
        raise ValueError(f"--heads={heads!r} is not one of {', '.join(HEADS)}")
    plots.pyplot()  # the install hint before any work
    problem, model, path = run_dir.open_run(output_dir, checkpoint_path)
    files.check_writable_dir(visualize_dir, "--visualize_dir")
    if gold_trees and not problem.writes_trees:
        raise ValueError(f"--gold_trees: {problem.name} does not write trees")
    gold = read_gold_trees(gold_trees, len(lines)) if gold_trees else [None] * len(lines)
    decoder = decoding.make_decoder(model, decode_hparams, problem=problem)
    lines = problem.input_lines(lines, decoder.hp)
    inputs, errors = decoding.encode_lines(problem, lines, source)
    inputs = [decoder.fit(ids, f"{source}:{n}") for n, ids in enumerate(inputs, 1)]
    empty = [f"{source}:{n}: empty input" for n, ids in enumerate(inputs, 1) if not ids]
    if errors or empty:
        raise ValueError((errors + empty)[0])
    logging.info("Visualizing %d input(s) with %s.", len(inputs), path)
    best = [hypotheses[0][0] for hypotheses in decoder.decode_ids(inputs)]
    # A parse's line as t2t-decode writes it, all at once (one repair count logged).
    parses = problem.decoded_lines(lines, best) if problem.writes_trees else []
    written = []
    for number, ids in enumerate(inputs, 1):
        found = inspection.inspect(model, problem, ids, best[number - 1])
        prefix = f"{number:03d}"
        written += write_example(found, visualize_dir, prefix, heads)
        if parses:
            where = f"{source}:{number} (decoded)"
            written += write_tree(
                parses[number - 1], gold[number - 1], visualize_dir, prefix, where
            )
    return written
