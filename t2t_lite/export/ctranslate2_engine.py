"""t2t-decode --engine=ctranslate2: a Transformer run decoded by CTranslate2.

On first use the run's checkpoint is converted (ctranslate2_model.write)
into <run>/ctranslate2/<checkpoint>-<its index's write time>-<positions>/, written under
a temporary name and renamed when complete; later decodes of the same
checkpoint reuse it, and a new checkpoint gets a directory of its own. The
engine answers `decode_ids` like the TensorFlow Decoder (per input, its
hypotheses as ids up to EOS with scores, best first), so t2t-decode's file,
stdin and split modes tokenize, write and score exactly as with TensorFlow.

The decode hparams map as `ctranslate2_model.translate_options` says; each
output is held to its own input's length + extra_length symbols, as the
TensorFlow Decoder holds it (`_translate`). Greedy decodes are the
TensorFlow engine's, scores included, for outputs that end and for those
that never emit EOS. Beam search runs with CTranslate2's length
penalty (`length ** alpha`; t2t_lite's is GNMT's `((5 + length) / 6) **
alpha`, equal at alpha 0), and its beam is rescored and re-ranked with
t2t_lite's penalty (`_rescored`), so scores read alike and the choice among
the beam is t2t_lite's.
"""

import os
import tempfile

import tensorflow as tf
from absl import logging

from t2t_lite import experiment, files, progress, sequences
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.export import ctranslate2_model

ENGINE_DIR = "ctranslate2"  # inside the run directory
TEMPORARY = ".incomplete-"


def from_run(output_dir: str, checkpoint: str, problem, model, hp) -> "Ctranslate2Decoder":
    """runner.run's engine factory for --engine=ctranslate2: the run's checkpoint
    converted (or its earlier conversion) in a Translator."""
    exp = experiment.Experiment.load(output_dir)
    ctranslate2_model.check_mappable(exp.model, exp.input_encoding, "--engine")
    ctranslate2_model.check_expressible(exp.hparams, "--engine")
    ctranslate2 = ctranslate2_model.library("--engine")  # a clear error without the extra
    if hp.temperature or hp.top_k:
        raise ValueError(
            "--engine=ctranslate2 decodes greedily or with beam search; sampling "
            "(temperature, top_k) is the tensorflow engine's"
        )
    tokens = problem.graph_tokenizer("").vocabulary()
    directory = local_copy(converted(output_dir, checkpoint, model, tokens, hp))
    return Ctranslate2Decoder(ctranslate2.Translator(directory, device="cpu"), tokens, hp)


def local_copy(directory: str) -> str:
    """`directory` itself on the local disk; elsewhere (gs://, ram://, ...) a local
    temporary copy, since CTranslate2 reads only local files."""
    if "://" not in directory:
        return directory
    local = tempfile.mkdtemp(prefix="t2t-ct2-")
    for name in tf.io.gfile.listdir(directory):
        tf.io.gfile.copy(os.path.join(directory, name), os.path.join(local, name))
    return local


class Ctranslate2Decoder:
    """decode_ids through a CTranslate2 Translator of a t2t_lite Transformer.

    tokens: the vocabulary, in id order, as the Translator's model registered it.
    """

    def __init__(self, translator, tokens: list[str], hp: decoder_lib.DecodeHParams):
        self.hp = hp
        self.tokens = tokens
        self._ids = {token: i for i, token in enumerate(tokens)}
        self.translator = translator

    def decode_ids(
        self, inputs: list[list[int]], source: str = "input", first_line: int = 1
    ) -> list[list[tuple[list[int], float]]]:
        """As Decoder.decode_ids: inputs without EOS -> per input, (ids, score), best first."""
        fitted = [
            sequences.truncate(ids, self.hp.max_input_length, f"{source}:{number}")
            for number, ids in enumerate(inputs, first_line)
        ]
        results: list = [[([], 0.0)] for _ in fitted]  # an empty input: an empty output
        order = [i for i in sorted(range(len(fitted)), key=lambda i: len(fitted[i])) if fitted[i]]
        options = ctranslate2_model.translate_options(self.hp)
        del options["max_decoding_length"]  # each batch's own (_translate)
        if self.hp.beam_size == 1:  # greedy: the same tokens; scores as plain sums
            options["length_penalty"] = 0.0
        shown = progress.Progress(f"decoding {source}", len(order))
        for start in range(0, len(order), self.hp.batch_size):
            chunk = order[start : start + self.hp.batch_size]
            answers = self._translate([fitted[index] for index in chunk], options)
            for index, answer in zip(chunk, answers, strict=True):
                results[index] = self._rescored(answer, options["length_penalty"])
            shown.update(start + len(chunk))  # as the Decoder: the rate from the first batch on
        return results

    def _translate(self, batch: list[list[int]], options: dict) -> list:
        """CTranslate2's answers for a batch of inputs, each output held to its own
        input's length + extra_length symbols, as the TensorFlow Decoder holds it.

        CTranslate2 takes one output limit per batch: the batch runs with its
        longest input's limit, and the few inputs whose hypotheses reached their
        own (an output that never ends: an early checkpoint, an odd line) are
        decoded again at that limit, where CTranslate2 stops each hypothesis as
        t2t_lite forces its EOS.
        """
        limits = [len(ids) + self.hp.extra_length for ids in batch]
        answers = self._translate_at(batch, max(limits), options)
        again: dict[int, list[int]] = {}  # limit -> positions in the batch
        for position, (answer, limit) in enumerate(zip(answers, limits, strict=True)):
            if limit < max(limits) and any(
                len(sequences.until_eos([self._ids[t] for t in tokens])) >= limit
                for tokens in answer.hypotheses
            ):  # past its limit, or an EOS the limit would have forced at no cost
                again.setdefault(limit, []).append(position)
        for limit, positions in again.items():
            redone = self._translate_at([batch[p] for p in positions], limit, options)
            for position, answer in zip(positions, redone, strict=True):
                answers[position] = answer
        return answers

    def _translate_at(self, batch: list[list[int]], limit: int, options: dict) -> list:
        return self.translator.translate_batch(
            [[self.tokens[i] for i in ids] for ids in batch],
            **options,
            max_decoding_length=limit,
            num_hypotheses=max(self.hp.num_outputs, self.hp.beam_size),
            return_scores=True,
            return_end_token=True,
        )

    def _rescored(self, answer, ct2_alpha: float) -> list[tuple[list[int], float]]:
        """CTranslate2's hypotheses scored as t2t_lite scores them, best first.

        CTranslate2 divides a hypothesis' log-probability by length ** alpha
        (length: the tokens it generated, EOS included); t2t_lite's beam search
        by GNMT's ((5 + length) / 6) ** alpha, its greedy search not at all.
        The sum is recovered and divided again, and the beam's hypotheses are
        ranked by that score: the ranking t2t_lite would give the same beam
        (the beam itself may still differ where the two penalties keep other
        hypotheses alive).
        """
        scored = []
        for tokens, score in zip(answer.hypotheses, answer.scores, strict=True):
            length = len(tokens)  # return_end_token: EOS is among them when emitted
            total = score * length**ct2_alpha if length else score
            ids = sequences.until_eos([self._ids[t] for t in tokens])
            if self.hp.beam_size > 1:  # t2t_lite counts the EOS it forces at the limit
                total /= ((5.0 + len(ids) + 1) / 6.0) ** self.hp.alpha
            scored.append((ids, float(total)))
        scored.sort(key=lambda pair: -pair[1])
        return scored[: self.hp.num_outputs]


def converted(run_directory: str, checkpoint: str, model, tokens: list[str], hp) -> str:
    """The run's CTranslate2 model of `checkpoint` (made now if it is not there yet)."""
    written = tf.io.gfile.stat(checkpoint + ".index").mtime_nsec
    positions = hp.max_output_positions + 1  # the longest output and EOS, after the start token
    name = f"{os.path.basename(checkpoint)}-{written}-{positions}"
    parent = os.path.join(run_directory, ENGINE_DIR)
    final = os.path.join(parent, name)
    if tf.io.gfile.exists(os.path.join(final, "model.bin")):
        return final
    tf.io.gfile.makedirs(parent)
    files.remove_leftovers(parent, TEMPORARY)
    temporary = os.path.join(parent, f"{TEMPORARY}{files.owner_tag()}{name}")
    try:
        ctranslate2_model.write(model, tokens, positions, temporary)
        files.rename_dir(temporary, final, last=("model.bin",))
    finally:
        if tf.io.gfile.exists(temporary):
            files.remove_tree(temporary)
    logging.info("Converted %s for CTranslate2 into %s.", checkpoint, final)
    return final
