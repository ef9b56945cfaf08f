"""Datagen throughput: a parallel corpus from the user's files to a vocabulary and TFRecords.

Prints one JSON line. The corpus is self-generated and deterministic:

- `--corpus=heaps` (default): news-like sentence pairs whose vocabulary
  grows without bound like real text's (bench/heaps_corpus.py: names,
  numbers, paths, URLs, mixed case, punctuation, German compounds);
- `--corpus=zipf`: the older corpus, 15..35 words a side drawn Zipf-like
  from a fixed list of --words synthetic words (its vocabulary stops
  growing);
- `--text_file`: a real text, a sentence paired with the next.

`t2t-datagen --problem=translate_from_files` then runs end to end in this
process (vocabulary sample, vocabulary, encoding, shards). Reported: the
wall time of each phase (the vocabulary learner's separately), pairs/s,
the distinct whitespace-separated words of the corpus and of the
vocabulary sample, peak resident memory, and the ratio against
line-at-a-time eager encoding (tokenizer.encode per line) of the same
pairs measured in the same run.

`--learner_growth=100000,500000,1000000` instead times the vocabulary
learner alone on the smallest leading parts of the corpus holding at least
that many distinct words.

  python bench/datagen_throughput.py --pairs=1000000 --vocab_sample_lines=2000000
  python bench/datagen_throughput.py --pairs=40000
  python bench/datagen_throughput.py --corpus=zipf --pairs=1000000
  python bench/datagen_throughput.py --pairs=1000000 --learner_growth=100000,500000,1000000
  python bench/datagen_throughput.py --text_file=book.txt   # real text
"""

import itertools
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time

from absl import app, flags, logging

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FLAGS = flags.FLAGS
flags.DEFINE_enum("corpus", "heaps", ["heaps", "zipf"], "Generated corpus kind (see above).")
flags.DEFINE_integer("pairs", 200_000, "Generated sentence pairs.")
flags.DEFINE_integer("words", 20_000, "--corpus=zipf: size of the fixed word list.")
flags.DEFINE_integer("vocab_sample_lines", 0, "Lines the vocabulary is learned from (0: default).")
flags.DEFINE_list("learner_growth", [], "Time the learner alone at these distinct-word counts.")
flags.DEFINE_string("text_file", "", "Instead: a real text (HTML tags stripped); pairs of lines.")
flags.DEFINE_integer("vocab_size", 8000, "Subword vocabulary size.")
flags.DEFINE_integer("reference_pairs", 200, "Pairs encoded line at a time for the ratio.")
flags.DEFINE_string("workdir", "", "Where the corpus and data go (default: a temporary dir).")


def synthetic_words(count: int, rng) -> list[str]:
    syllables = [c + v for c in "bdfghklmnprstvwz" for v in "aeiou"]
    words = set()
    while len(words) < count:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))))
    return sorted(words)


def write_synthetic(directory: str, pairs: int, words: int) -> tuple[str, str]:
    import numpy as np

    rng = np.random.default_rng(1)
    import random

    vocab = synthetic_words(words, random.Random(1))
    ranks = np.arange(1, len(vocab) + 1)
    probs = (1.0 / ranks) / (1.0 / ranks).sum()  # Zipf-like word frequencies
    paths = (os.path.join(directory, "train.src"), os.path.join(directory, "train.tgt"))
    with open(paths[0], "w") as src, open(paths[1], "w") as tgt:
        for start in range(0, pairs, 10_000):
            n = min(10_000, pairs - start)
            lengths = rng.integers(15, 36, size=(n, 2))
            ids = rng.choice(len(vocab), size=int(lengths.sum()), p=probs)
            offset = 0
            for a, b in lengths:
                src.write(" ".join(vocab[i] for i in ids[offset : offset + a]) + ".\n")
                offset += a
                tgt.write(" ".join(vocab[i] for i in ids[offset : offset + b]).capitalize() + "\n")
                offset += b
    return paths


def write_real_text(directory: str, text_file: str) -> tuple[tuple[str, str], int]:
    """Sentences of a real text, paired with the next one."""
    with open(text_file, encoding="utf-8", errors="replace") as f:
        text = re.sub(r"<[^>]+>", " ", f.read())
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", text))]
    sentences = [s for s in sentences if 3 <= len(s.split()) <= 60]
    paths = (os.path.join(directory, "train.src"), os.path.join(directory, "train.tgt"))
    with open(paths[0], "w") as src, open(paths[1], "w") as tgt:
        for a, b in itertools.pairwise(sentences):
            src.write(a + "\n")
            tgt.write(b + "\n")
    return paths, len(sentences) - 1


def write_corpus(directory: str) -> tuple[tuple[str, str], int, str]:
    """(the two aligned files, pairs, a description); reused when already written."""
    if FLAGS.text_file:
        paths, pairs = write_real_text(directory, FLAGS.text_file)
        return paths, pairs, FLAGS.text_file
    if FLAGS.corpus == "zipf":
        paths = write_synthetic(directory, FLAGS.pairs, FLAGS.words)
        return paths, FLAGS.pairs, f"synthetic Zipf over {FLAGS.words} words, 15-35 words a side"
    import heaps_corpus

    paths = (os.path.join(directory, "train.src"), os.path.join(directory, "train.tgt"))
    stamp = os.path.join(directory, f"heaps-{FLAGS.pairs}.done")
    if not os.path.exists(stamp):
        heaps_corpus.write(*paths, FLAGS.pairs)
        open(stamp, "w").close()
    description = (
        f"Heaps-like news text (Zipf-Mandelbrot ranks, exponent {heaps_corpus.ZIPF_A}), "
        "names, numbers, paths, URLs, German compounds"
    )
    return paths, FLAGS.pairs, description


def learner_growth(paths: tuple[str, str], targets: list[int]) -> list[dict]:
    """The learner's time on the shortest leading part of the corpus with >= t distinct words."""
    from t2t_lite.data import subword

    rows = []
    with open(paths[0], encoding="utf-8") as src, open(paths[1], encoding="utf-8") as tgt:
        lines: list[str] = []
        seen: set[str] = set()
        for target in sorted(targets):
            for a, b in zip(src, tgt, strict=False):
                lines += [a.rstrip("\n"), b.rstrip("\n")]
                seen.update(a.split())
                seen.update(b.split())
                if len(seen) >= target:
                    break
            start = time.perf_counter()
            subword.learn(lines, FLAGS.vocab_size)
            rows.append(
                {
                    "distinct_words": len(seen),
                    "lines": len(lines),
                    "learn_seconds": round(time.perf_counter() - start, 1),
                }
            )
    return rows


def distinct_words(lines) -> int:
    seen: set[str] = set()
    for line in lines:
        seen.update(line.split())
    return len(seen)


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)
    import common

    import t2t_lite.problems  # noqa: F401  (registers translate_from_files)
    from t2t_lite.data import problem

    workdir = FLAGS.workdir or tempfile.mkdtemp(prefix="datagen-bench-")
    corpus = os.path.join(workdir, "corpus")
    os.makedirs(corpus, exist_ok=True)
    paths, pairs, description = write_corpus(corpus)
    if FLAGS.learner_growth:
        rows = learner_growth(paths, [int(t) for t in FLAGS.learner_growth])
        result = {
            "benchmark": "vocabulary_learner_growth",
            "corpus": description,
            "vocab_size": FLAGS.vocab_size,
            "rows": rows,
            "machine": common.machine(),
        }
        print(json.dumps(result))
        return
    dev = os.path.join(corpus, "dev.tsv")
    with open(paths[0]) as src, open(paths[1]) as tgt, open(dev, "w") as out:
        out.writelines(
            a.rstrip("\n") + "\t" + b for _, a, b in zip(range(1000), src, tgt, strict=False)
        )

    data_dir = os.path.join(workdir, "data")
    shutil.rmtree(data_dir, ignore_errors=True)
    prob = problem.get("translate_from_files")
    prob.configure(data_dir, list(paths), [dev], FLAGS.vocab_size)
    if FLAGS.vocab_sample_lines:
        prob.vocab_sample_lines = FLAGS.vocab_sample_lines
    start = time.perf_counter()
    counts = prob.generate_data(data_dir)
    total = time.perf_counter() - start
    # Older versions did not time their phases: all of it counts as encoding there.
    phases = dict(getattr(prob, "last_generation_seconds", {"encode_and_write": total}))

    # The reference: the same tokenizer, one eager call per line.
    with open(paths[0]) as src, open(paths[1]) as tgt:
        sample = [
            (a.rstrip("\n"), b.rstrip("\n"))
            for _, a, b in zip(range(FLAGS.reference_pairs), src, tgt, strict=False)
        ]
    start = time.perf_counter()
    for a, b in sample:
        prob.encode_text(a), prob.encode_text(b)
    reference = len(sample) / (time.perf_counter() - start)

    encode_seconds = phases["encode_and_write"]
    with open(paths[0], encoding="utf-8") as src, open(paths[1], encoding="utf-8") as tgt:
        corpus_words = distinct_words(itertools.chain(src, tgt))
    sample, _ = prob.vocabulary_sample(data_dir, seed=1)
    result = {
        "benchmark": "datagen_throughput",
        "corpus": description,
        "pairs": pairs,
        "distinct_words": corpus_words,
        "vocab_sample_lines": len(sample),
        "vocab_sample_distinct_words": distinct_words(sample),
        "examples": counts,
        "vocab_size": prob.vocab_size,
        "seconds_total": round(total, 1),
        "seconds": {k: round(v, 1) for k, v in phases.items()},
        "pairs_per_sec": round(pairs / encode_seconds),
        "pairs_per_sec_end_to_end": round(pairs / total),
        "reference_pairs_per_sec_line_at_a_time": round(reference),
        "ratio_vs_line_at_a_time": round(pairs / encode_seconds / reference, 1),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "machine": common.machine(),
    }
    print(json.dumps(result))
    if not FLAGS.workdir:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    app.run(main)
