"""Evaluation: teacher-forced loss, perplexity, token and sequence accuracy; BLEU of decodes."""

import math
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.data import problem as problem_lib
from t2t_lite.data import tfrecord
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.scoring import bleu
from t2t_lite.training import losses

SUM = tf.distribute.ReduceOp.SUM
AUX = "aux/"


def make_eval_step(
    model: keras.Model, strategy: tf.distribute.Strategy, label_smoothing: float
) -> Callable:
    """A compiled step returning summed counts for one distributed batch."""

    def replica_step(batch):
        logits, aux = model.logits_and_aux(batch, training=False)
        loss_sum, weight = losses.smoothed_cross_entropy(logits, batch["targets"], label_smoothing)
        counts = losses.accuracy_counts(logits, batch["targets"])
        # Perplexity is of the model's distribution: without label smoothing.
        nll_sum = losses.smoothed_cross_entropy(logits, batch["targets"], 0.0)[0]
        counts.update(loss_sum=loss_sum, nll_sum=nll_sum, weight=weight, batches=tf.constant(1.0))
        # The model's metrics (e.g. ponder time) are per-batch means: summed
        # here, divided by the batch count in `summarize`.
        counts.update({f"{AUX}{key}": value for key, value in aux.items() if key != "loss"})
        return counts

    # Eval batches end with a partial batch and long splits have several
    # buckets: relax shapes instead of retracing for each.
    @tf.function(reduce_retracing=True, autograph=False)
    def step(batch):
        per_replica = strategy.run(replica_step, args=(batch,))
        return {key: strategy.reduce(SUM, value, axis=None) for key, value in per_replica.items()}

    return step


def evaluate(
    step: Callable,
    dataset: tf.distribute.DistributedDataset,
    paths: list[str],
    max_steps: int,
    stopped: Callable[[], bool] | None = None,
) -> dict[str, float] | None:
    """Runs up to `max_steps` batches (all when < 0) and returns the metrics;
    None when `stopped()` turns true between two batches (a stop signal)."""
    totals: dict[str, float] = {}
    iterator = iter(dataset)
    done = 0
    while max_steps < 0 or done < max_steps:
        if stopped is not None and stopped():
            return None
        try:
            batch = tfrecord.next_element(iterator, paths)
        except StopIteration:
            break
        for key, value in step(batch).items():
            totals[key] = totals.get(key, 0.0) + float(value)
        done += 1
    return summarize(totals)


# What every evaluation reports; models and problems add their own (ponder time, BLEU).
CORE_METRICS = ("loss", "accuracy", "sequence_accuracy", "perplexity", "examples")


def summarize(totals: dict[str, float]) -> dict[str, float]:
    """Sums -> loss, accuracy, sequence_accuracy, the example count and model metrics."""
    if not totals or totals["tokens"] == 0:
        return {"loss": float("nan"), "accuracy": 0.0, "sequence_accuracy": 0.0, "examples": 0}
    metrics = {
        "loss": totals["loss_sum"] / totals["weight"],
        "accuracy": totals["correct_tokens"] / totals["tokens"],
        "sequence_accuracy": totals["correct_sequences"] / totals["sequences"],
        # exp of the mean per-token negative log-likelihood (EOS included).
        "perplexity": math.exp(min(totals["nll_sum"] / totals["weight"], 700.0)),
        "examples": int(totals["sequences"]),
    }
    for key, value in totals.items():
        if key.startswith(AUX):
            # Per-replica batch means and replica-batch counts were both summed.
            metrics[key[len(AUX) :]] = value / totals["batches"]
    return metrics


class BleuEvaluation:
    """BLEU of greedy decodes of `num_examples` examples spread over a split (text problems).

    The examples are read once per split; the decoder (one trace per padded
    shape) is built on first use.
    """

    def __init__(self, model: keras.Model, problem: problem_lib.Problem, num_examples: int):
        self.model, self.problem, self.num_examples = model, problem, num_examples
        self._decoder: decoder_lib.Decoder | None = None
        self._examples: dict[tuple[str, ...], list[dict]] = {}

    def __call__(self, paths: list[str]) -> float:
        if self._decoder is None:
            hp = decoder_lib.DecodeHParams(batch_size=min(32, self.num_examples))
            # Not XLA-compiled: the model may hold a distribution strategy's variables.
            self._decoder = decoder_lib.Decoder(self.model, hp, xla_compile=False)
        key = tuple(paths)
        if key not in self._examples:
            self._examples[key] = tfrecord.spread_examples(paths, self.num_examples)
        examples = self._examples[key]
        outputs = self._decoder.decode_ids([sequences.strip_eos(e["inputs"]) for e in examples])
        return bleu.decoded_bleu(self.problem, examples, outputs)


def ponder_bars(n_updates: np.ndarray, remainders: np.ndarray, max_steps: int) -> np.ndarray:
    """Per position a bar of N (blue) topped by R (orange): uint8 image [1, H, W, 3]."""
    cell = 8
    height, width = (max_steps + 1) * cell, len(n_updates) * cell
    image = np.full((height, width, 3), 255, np.uint8)
    for i, (n, r) in enumerate(zip(n_updates, remainders, strict=True)):
        left, right = i * cell, (i + 1) * cell - 1  # one white pixel between bars
        top_n = height - round(n * cell)
        top_r = top_n - round(r * cell)
        image[top_n:, left:right] = (76, 114, 176)
        image[top_r:top_n, left:right] = (221, 132, 82)
    return image[np.newaxis]  # [1, H, W, 3]


class PonderImages:
    """The adaptive UT's ponder time on a split's first example, for TensorBoard.

    Writes, into the current default summary writer, an image of N and R per
    position (encoder and decoder, teacher forced) and the histogram of N.
    """

    def __init__(self, model: keras.Model):
        self.model = model
        self._examples: dict[tuple[str, ...], dict] = {}

    def applies(self) -> bool:
        hparams = getattr(self.model, "hparams", None)
        return bool(getattr(hparams, "adaptive", False))

    def __call__(self, paths: list[str]) -> None:
        key = tuple(paths)
        if key not in self._examples:
            self._examples[key] = tfrecord.read_examples(paths, 1)[0]
        example = self._examples[key]
        inputs = tf.constant([example["inputs"]])  # [1, S]
        targets = tf.constant([example["targets"]])  # [1, T]
        encoded, bias, encoder_stats = self.model.encode_with_stats(inputs)
        _, decoder_stats = self.model.decode_with_stats(targets, encoded, bias)
        max_steps = self.model.hparams.act_max_steps
        for side, stats in (("encoder", encoder_stats), ("decoder", decoder_stats)):
            n, r = stats.n_updates.numpy()[0], stats.remainders.numpy()[0]
            tf.summary.image(f"ponder_time/{side}", ponder_bars(n, r, max_steps))
            tf.summary.histogram(f"ponder_steps/{side}", n)
