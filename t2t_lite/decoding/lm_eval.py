"""The UT paper's language-model evaluations, on the user's files.

LAMBADA (Paperno et al., 2016; UT paper Table 3): each line is a passage
whose last word is the target; a model is right when its greedy choice at
each of the word's tokens is the word's (so greedy decoding would write
it), and the perplexity is exp of the mean negative log-likelihood of the
target word given its context.

Subject-verb agreement (Linzen et al., 2016; UT paper Table 2, ranked by
the language model): each line is "prefix<TAB>correct verb<TAB>wrong
verb"; a model is right when it gives the correct verb the higher
log-likelihood after the prefix.

Both score targets teacher forced, one pass per batch: the target's tokens
read the prefix's, as in decoding.
"""

import dataclasses
import math

import keras
import numpy as np
import tensorflow as tf

from t2t_lite import files, sequences
from t2t_lite.data import problem as problem_lib

KINDS = ("lambada", "agreement")
BATCH_SIZE = 32


@dataclasses.dataclass(frozen=True)
class Scored:
    """One target after its prefix: sum of log-probs, and whether every token was the argmax."""

    log_prob: float
    greedy: bool
    tokens: int


def score(
    model: keras.Model, pairs: list[tuple[list[int], list[int]]], batch_size: int = BATCH_SIZE
) -> list[Scored]:
    """(prefix ids, target ids) pairs -> the target's log-likelihood given the prefix.

    The sequence prefix + target is teacher forced (a decoder-only model,
    or an encoder-decoder one with an empty source: both model p(line)).
    """
    results = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        length = sequences.round_up(max(len(p) + len(t) for p, t in chunk))
        ids = sequences.pad_batch([prefix + target for prefix, target in chunk], length)
        weights = np.zeros([len(chunk), length], np.float32)
        for row, (prefix, target) in enumerate(chunk):
            weights[row, len(prefix) : len(prefix) + len(target)] = 1.0
        source = tf.fill([len(chunk), 1], sequences.EOS_ID)  # [B, 1]: no source
        encoded, bias = model.encode(source)
        logits = model.decode(tf.constant(ids), encoded, bias)  # [B, T, V]
        log_probs = tf.nn.log_softmax(logits)  # [B, T, V]
        chosen = tf.gather(log_probs, ids, batch_dims=2).numpy()  # [B, T]
        best = tf.argmax(logits, axis=-1, output_type=tf.int32).numpy() == ids  # [B, T]
        for row in range(len(chunk)):
            mask = weights[row] > 0
            results.append(
                Scored(float(chosen[row][mask].sum()), bool(best[row][mask].all()), int(mask.sum()))
            )
    return results


def _split_last_word(
    problem: problem_lib.Problem, line: str, where: str
) -> tuple[list[int], list[int]]:
    """A passage -> (context ids, last word ids); ValueError names the line."""
    words = line.split()
    if len(words) < 2:
        raise ValueError(f"{where}: expected a passage of at least two words")
    context = line[: line.rstrip().rfind(words[-1])].rstrip()
    return _after(problem, context, words[-1], f"{where}: the last word")


def _after(
    problem: problem_lib.Problem, context: str, target: str, what: str
) -> tuple[list[int], list[int]]:
    """(ids of context, ids of target after it); ValueError when the target's
    tokens are not the tail of the whole text's."""
    prefix = problem.encode_text(context)
    whole = problem.encode_text(f"{context} {target}")
    if whole[: len(prefix)] != prefix or len(whole) == len(prefix):
        raise ValueError(f"{what} does not tokenize apart from its context")
    return prefix, whole[len(prefix) :]


def lambada(
    model: keras.Model, problem: problem_lib.Problem, lines: list[str], source: str
) -> tuple[dict, list[str]]:
    """Last-word accuracy and perplexity of passages -> (metrics, one result line per passage)."""
    pairs = [_split_last_word(problem, line, f"{source}:{n}") for n, line in enumerate(lines, 1)]
    scored = score(model, pairs)
    nll = [-s.log_prob for s in scored]
    metrics = {
        "accuracy": float(np.mean([s.greedy for s in scored])),
        "perplexity": math.exp(float(np.mean(nll))),
        "examples": len(scored),
    }
    details = [f"{int(s.greedy)}\t{s.log_prob:.4f}" for s in scored]
    return metrics, details


def agreement(
    model: keras.Model, problem: problem_lib.Problem, lines: list[str], source: str
) -> tuple[dict, list[str]]:
    """Ranking accuracy of (prefix, correct, wrong) triples -> (metrics, a result line each)."""
    pairs = []
    for number, line in enumerate(lines, 1):
        fields = line.split("\t")
        if len(fields) != 3 or not all(f.strip() for f in fields):
            raise ValueError(f"{source}:{number}: expected prefix<TAB>correct verb<TAB>wrong verb")
        for verb in fields[1:]:
            what = f"{source}:{number}: {verb.strip()!r}"
            pairs.append(_after(problem, fields[0].strip(), verb.strip(), what))
    scored = score(model, pairs)
    right = [scored[i].log_prob > scored[i + 1].log_prob for i in range(0, len(scored), 2)]
    details = [
        f"{int(ok)}\t{scored[2 * i].log_prob:.4f}\t{scored[2 * i + 1].log_prob:.4f}"
        for i, ok in enumerate(right)
    ]
    return {"accuracy": float(np.mean(right)) if right else 0.0, "examples": len(right)}, details


def evaluate_file(
    kind: str, model: keras.Model, problem: problem_lib.Problem, path: str, output_path: str = ""
) -> dict:
    """Runs evaluation `kind` over the file's non-empty lines; per-line results go to
    output_path (written atomically) when given."""
    if kind not in KINDS:
        raise ValueError(f"--lm_eval={kind!r} is not one of {', '.join(KINDS)}")
    if problem.input_encoding != "none":
        raise ValueError(
            f"--lm_eval needs a language model run; problem {problem.name!r} has inputs"
        )
    lines = [line for line in files.read_lines(path) if line.strip()]
    if not lines:
        raise ValueError(f"{path}: no lines to evaluate")
    metrics, details = (lambada if kind == "lambada" else agreement)(model, problem, lines, path)
    if output_path:
        files.write_output(output_path, "".join(line + "\n" for line in details))
    return metrics
