"""Input-label accuracy of a trained run by position band (docs/length_depth.md round 14).

    python labels_by_position.py <run dir> <data dir> [split] [edges]

Reads the split's examples (default valid_long),
runs the encoder as evaluation does, and prints, for bands of input position, the
share of positions whose argmax through the softmax is the problem's label, and,
for bands of input length, the same at the last input position (EOS, whose label
is the answer). Positions and lengths count every input position, a marker
and the EOS included. Prints one JSON line per band. edges: the bands'
upper edges, comma-separated (default 10,20,40,100,200,10000; "1,2,3,...,20"
gives one band per position).
"""

import itertools
import json
import sys

import numpy as np
import tensorflow as tf

from t2t_lite import run_dir
from t2t_lite.models import input_labels

# Band i holds values in (EDGES[i], EDGES[i + 1]]: 1-10, 11-20, 21-40, ...
EDGES = (10, 20, 40, 100, 200, 10_000)


def bands(upper: tuple[int, ...]) -> tuple[np.ndarray, list[str]]:
    """Upper edges -> (the edges from 0, the bands' names), the last band open
    ("21+" past an edge of 20)."""
    edges = np.array((0, *upper, np.iinfo(np.int64).max))
    names = [f"{low + 1}-{high}" for low, high in itertools.pairwise(edges[:-1])]
    return edges, [*names, f"{upper[-1] + 1}+"]


def main(argv: list[str]) -> None:
    output_dir = argv[1]
    data_dir = argv[2]
    split = argv[3] if len(argv) > 3 else "valid_long"
    edges, names = bands(tuple(int(x) for x in argv[4].split(",")) if len(argv) > 4 else EDGES)
    problem, model, path = run_dir.open_run(output_dir)
    data = problem.dataset(data_dir, split, batch_size=8192, input_labels=True)
    tallies = {kind: np.zeros((2, len(names)), np.int64) for kind in ("position", "length, at EOS")}
    for features in data:
        encoder_start, _ = model.position_policy.starts(features, False)
        encoded, _ = model.encode(features["inputs"], False, encoder_start)
        logits = model.softmax.logits(encoded)  # [B, S, V]
        labels = features[input_labels.LABELS].numpy()  # [B, S]
        right = tf.argmax(logits, -1, output_type=tf.int32).numpy() == labels  # [B, S]
        present = labels > 0  # [B, S]
        positions = np.broadcast_to(np.arange(1, labels.shape[1] + 1), labels.shape)  # [B, S]
        lengths = present.sum(1)  # [B]
        at_eos = right[np.arange(len(lengths)), lengths - 1]  # [B]
        for kind, values, hits in (
            ("position", positions[present], right[present]),
            ("length, at EOS", lengths, at_eos),
        ):
            band = np.searchsorted(edges, values) - 1  # value in (edges[b], edges[b + 1]]
            tallies[kind][0] += np.bincount(band, minlength=len(names), weights=hits).astype(int)
            tallies[kind][1] += np.bincount(band, minlength=len(names))
    for kind, (hits, counts) in tallies.items():
        for band, right_count, total in zip(names, hits, counts, strict=True):
            if total:
                row = {"checkpoint": path, "split": split, "by": kind, "band": band}
                print(
                    json.dumps(
                        {**row, "accuracy": round(right_count / total, 3), "count": int(total)}
                    )
                )


if __name__ == "__main__":
    main(sys.argv)
