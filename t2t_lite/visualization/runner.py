"""What t2t-visualize does: decode inputs with a trained run and draw what the model did."""

import io
import json
import os

import numpy as np
import tensorflow as tf
from absl import logging

from t2t_lite import files, run_dir
from t2t_lite.decoding import runner as decoding
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


def visualize(
    output_dir: str,
    visualize_dir: str,
    lines: list[str],
    source: str,
    checkpoint_path: str = "",
    decode_hparams: str = "",
    heads: str = "mean",
) -> list[str]:
    """Decodes each line, then writes its attention (and ponder) pictures -> paths written.

    The maps are those of the teacher-forced pass over the input and the
    best decoded output (EOS included), from the model's own layers.
    """
    if heads not in HEADS:
        raise ValueError(f"--heads={heads!r} is not one of {', '.join(HEADS)}")
    plots.pyplot()  # the install hint before any work
    problem, model, path = run_dir.open_run(output_dir, checkpoint_path)
    files.check_writable_dir(visualize_dir, "--visualize_dir")
    decoder = decoding.make_decoder(model, decode_hparams)
    inputs, errors = decoding.encode_lines(problem, lines, source)
    inputs = [decoder.fit(ids, f"{source}:{n}") for n, ids in enumerate(inputs, 1)]
    empty = [f"{source}:{n}: empty input" for n, ids in enumerate(inputs, 1) if not ids]
    if errors or empty:
        raise ValueError((errors + empty)[0])
    logging.info("Visualizing %d input(s) with %s.", len(inputs), path)
    written = []
    for number, (ids, hypotheses) in enumerate(
        zip(inputs, decoder.decode_ids(inputs), strict=True), 1
    ):
        found = inspection.inspect(model, problem, ids, hypotheses[0][0])
        written += write_example(found, visualize_dir, f"{number:03d}", heads)
    return written
