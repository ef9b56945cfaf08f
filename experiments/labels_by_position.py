"""Input-label accuracy of a trained run by position band (docs/length_depth.md round 14).

    python labels_by_position.py <run dir> <data dir> [split]

Reads the split's examples (default valid_long),
runs the encoder as evaluation does, and prints, for bands of input position, the
share of positions whose argmax through the softmax is the problem's label, and,
for bands of input length, the same at the last input position (EOS, whose label
is the answer). Positions and lengths count every input position, a marker
and the EOS included. Prints one JSON line per band.
"""

import json
import sys

import tensorflow as tf

from t2t_lite import run_dir
from t2t_lite.models import input_labels

BANDS = [(1, 10), (11, 20), (21, 40), (41, 100), (101, 200), (201, 10_000)]


def band_of(value: int) -> str:
    for low, high in BANDS:
        if low <= value <= high:
            return f"{low}-{high}"
    return "0"


def main(argv: list[str]) -> None:
    output_dir = argv[1]
    data_dir = argv[2]
    split = argv[3] if len(argv) > 3 else "valid_long"
    problem, model, path = run_dir.open_run(output_dir)
    data = problem.dataset(data_dir, split, batch_size=8192, input_labels=True)
    by_position: dict[str, list[int]] = {}
    by_length: dict[str, list[int]] = {}
    for features in data:
        encoder_start, _ = model.position_starts(features, False)
        encoded, _ = model.encode(features["inputs"], False, encoder_start)
        logits = model.softmax.logits(encoded)  # [B, S, V]
        labels = features[input_labels.LABELS].numpy()  # [B, S]
        right = tf.argmax(logits, -1, output_type=tf.int32).numpy() == labels  # [B, S]
        for row, row_right in zip(labels, right, strict=True):
            length = int((row > 0).sum())
            for position in range(length):
                tally = by_position.setdefault(band_of(position + 1), [0, 0])
                tally[0] += int(row_right[position])
                tally[1] += 1
            tally = by_length.setdefault(band_of(length), [0, 0])
            tally[0] += int(row_right[length - 1])
            tally[1] += 1
    for kind, table in (("position", by_position), ("length, at EOS", by_length)):
        for band, (right_count, total) in sorted(
            table.items(), key=lambda kv: int(kv[0].split("-")[0])
        ):
            print(
                json.dumps(
                    {
                        "checkpoint": path,
                        "split": split,
                        "by": kind,
                        "band": band,
                        "accuracy": round(right_count / total, 3),
                        "count": total,
                    }
                )
            )


if __name__ == "__main__":
    main(sys.argv)
