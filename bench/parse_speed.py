"""Parse speed, whole process, against the chart-parser peer (docs/benchmarks.md).

Both parsers parse the same files in the same run, one after the other,
each as a user runs it: t2t_lite's `t2t-decode` (greedy label search, the
recipe's decode) on a trained run, the peer's `main.py test` on its best dev
checkpoint (bench/parser_peer.py's command and venv); wall time of the whole
process (start-up, loading, parsing, writing), one thread each. Files: the
test split, and a file of 2,000+ sentences built from the sample's trees
(the train split's: real sentences and lengths, none repeated), both as
the peer's work dir holds them (bench/parser_peer.py writes them). Each file is parsed --rounds times by
each side, alternating; the median counts. One JSON line: per file and side
the seconds and sentences/s, and our ratio to the peer (above 1: faster).

  python bench/parse_speed.py --data_dir=D --problem=parsing_from_files_labels \\
      --source=SRC --python=benepar/bin/python --work_dir=PEER_RUN --ours=RUN
"""

import json
import os
import statistics
import subprocess
import sys
import time

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parser_peer

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "ours", None, "A trained t2t_lite parsing run (its averaged/ checkpoint if any)."
)
flags.DEFINE_integer("rounds", 3, "Parses of each file by each side (the median counts).")
flags.DEFINE_string("scratch", "/tmp/parse_speed", "Where the files and parses are written.")
flags.mark_flags_as_required(["ours"])


def inputs() -> dict[str, tuple[str, str, int]]:
    """name -> (gold trees path, words path, sentences)."""
    from t2t_lite import files
    from t2t_lite.parsing import trees

    os.makedirs(FLAGS.scratch, exist_ok=True)
    made = {}
    # The peer's files, one (TOP ...) tree a line: the test split's gold trees
    # and the train split's. Copied here, where the peer's NLTK reads them.
    for split in ("test", "train"):
        source = os.path.join(FLAGS.work_dir, f"{split}.trees")
        lines = files.read_lines(source)
        gold, words = (
            os.path.join(FLAGS.scratch, f"{split}.{kind}") for kind in ("trees", "words")
        )
        files.write_atomically(gold, "".join(line + "\n" for line in lines))
        sentences = [" ".join(next(trees.read_trees(line, source))[0].words()) for line in lines]
        files.write_atomically(words, "".join(w + "\n" for w in sentences))
        made[split] = (gold, words, len(lines))
    return made


def ours(words: str, output: str) -> list[str]:
    checkpoint = os.path.join(FLAGS.ours, "averaged")
    program = os.path.join(os.path.dirname(sys.executable), "t2t-decode")
    command = [
        program, f"--output_dir={FLAGS.ours}", f"--decode_from_file={words}",
        f"--decode_to_file={output}", "--decode_hparams=beam_size=1,parse_input=tokens",
    ]  # fmt: skip
    if os.path.isdir(checkpoint):
        command.append(f"--checkpoint_path={checkpoint}")
    return command


def timed(command: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def main(argv):
    del argv
    import common

    ours_env = {
        **os.environ, "TF_NUM_INTRAOP_THREADS": str(FLAGS.threads),
        "TF_NUM_INTEROP_THREADS": str(FLAGS.threads), "TF_CPP_MIN_LOG_LEVEL": "2",
    }  # fmt: skip
    peer_env = {**parser_peer.environment(), "NLTK_DATA": os.path.abspath(FLAGS.scratch)}
    result = {"benchmark": "parse_speed", "machine": common.machine(), "threads": FLAGS.threads}
    for name, (gold, words, sentences) in inputs().items():
        seconds = {"ours": [], "peer": []}
        for _ in range(FLAGS.rounds):
            out = os.path.join(FLAGS.scratch, f"{name}.ours")
            seconds["ours"].append(timed(ours(words, out), ours_env))
            out = os.path.join(FLAGS.scratch, f"{name}.peer")
            seconds["peer"].append(
                timed(parser_peer.test_command(FLAGS.work_dir, gold, out), peer_env)
            )
        entry = {"sentences": sentences}
        for side, times in seconds.items():
            median = statistics.median(times)
            entry[side] = {
                "seconds": round(median, 2),
                "runs": [round(t, 2) for t in times],
                "sentences_per_second": round(sentences / median, 1),
            }
        entry["ratio_to_peer"] = round(entry["peer"]["seconds"] / entry["ours"]["seconds"], 2)
        result[name] = entry
    print(json.dumps(result))


if __name__ == "__main__":
    app.run(main)
