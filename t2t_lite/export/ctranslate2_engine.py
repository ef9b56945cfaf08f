"""t2t-decode --engine=ctranslate2: a Transformer run decoded by CTranslate2.

On first use the run's checkpoint is converted (ctranslate2_model.write)
into <run>/ctranslate2/<checkpoint>-<digest of what it depends on>/ (the
weights' digest and the output positions: `depends_on`), written under a
temporary name with a stamp (what it depends on, and its files' sizes)
written last, and renamed when complete; later decodes of the same weights
reuse it once the stamp checks, a damaged or half-made one is made again,
and new weights get a directory of their own. A run that cannot be written is converted
into a temporary directory. The
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
the beam is t2t_lite's. It collects BEAM_PATIENCE times the beam's ended
hypotheses first. One difference stays: CTranslate2 ends a hypothesis only
from the beam's best K candidates of a step, t2t_lite (as tensor2tensor)
from its best 2K, so its beam may hold an ended hypothesis CTranslate2 never
sees (docs/decoding.md gives the size on real text).
"""

import hashlib
import os
import tempfile

import tensorflow as tf
from absl import logging

from t2t_lite import experiment, files, progress, sequences, stamp
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.export import ctranslate2_model

ENGINE_DIR = "ctranslate2"  # inside the run directory
STAMP_FILE = "t2t_conversion.json"  # written last: what it depends on, each file's size
# CTranslate2's beam search ends a line once beam_size * patience hypotheses have
# ended; t2t_lite's goes on while an alive beam could still beat an ended one.
# Collecting twice the beam and re-ranking them all with t2t_lite's penalty
# (`_rescored`) closed that gap on every line of a real test file
# (docs/decoding.md), at no measurable cost.
BEAM_PATIENCE = 2
# Conversions of runs that cannot be written, for this process's life.
_TEMPORARY_PARENT = tempfile.TemporaryDirectory(prefix="t2t-ct2-conversions-")


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
    directory = converted(output_dir, checkpoint, model, tokens, hp)
    local = LocalCopy(directory)
    try:
        translator = ctranslate2.Translator(local.path, device="cpu")
    except Exception as err:  # noqa: BLE001 -- checked, yet unreadable: made again, once
        logging.warning(
            "The conversion %s cannot be loaded (%s); converting again.", directory, err
        )
        files.remove_tree(directory)
        local = LocalCopy(converted(output_dir, checkpoint, model, tokens, hp))
        translator = ctranslate2.Translator(local.path, device="cpu")
    decoder = Ctranslate2Decoder(translator, tokens, hp)
    decoder.local_copy = local  # a temporary copy lives as long as the decoder
    return decoder


class LocalCopy:
    """A conversion on the local disk: `path` is the directory itself there;
    elsewhere (gs://, ram://, ...) a temporary local copy, since CTranslate2
    reads only local files, removed when this object goes (or at exit)."""

    def __init__(self, directory: str):
        self._temporary = None
        if "://" not in directory:
            self.path = directory
            return
        self._temporary = tempfile.TemporaryDirectory(prefix="t2t-ct2-")
        self.path = self._temporary.name
        for name in tf.io.gfile.listdir(directory):
            tf.io.gfile.copy(os.path.join(directory, name), os.path.join(self.path, name))

    def close(self) -> None:
        if self._temporary is not None:
            self._temporary.cleanup()


class Ctranslate2Decoder:
    """decode_ids through a CTranslate2 Translator of a t2t_lite Transformer.

    tokens: the vocabulary, in id order, as the Translator's model registered it.
    """

    def __init__(self, translator, tokens: list[str], hp: decoder_lib.DecodeHParams):
        self.hp = hp
        self.calls = 0
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
        self.calls = 0  # translate_batch calls of this decode (one per output limit a batch holds)
        for start in range(0, len(order), self.hp.batch_size):
            chunk = order[start : start + self.hp.batch_size]
            answers = self._translate([fitted[index] for index in chunk], options)
            for index, answer in zip(chunk, answers, strict=True):
                results[index] = self._rescored(answer, options["length_penalty"])
            shown.update(start + len(chunk))  # as the Decoder: the rate from the first batch on
        batches = -(-len(order) // self.hp.batch_size)
        logging.info(
            "CTranslate2: %d translate_batch calls for %d inputs in %d batches (one call per "
            "output limit, input length + extra_length, that a batch holds).",
            self.calls,
            len(order),
            batches,
        )
        return results

    def _translate(self, batch: list[list[int]], options: dict) -> list:
        """CTranslate2's answers for a batch of inputs, each output held to its own
        input's length + extra_length symbols, as the TensorFlow Decoder holds it.

        CTranslate2 takes one output limit per call, and a longer limit changes a
        row's search wherever a hypothesis would have reached its own limit, even
        one dropped later: the rows are decoded in groups of one limit each (the
        batch is sorted by length, so a group is most of a batch).
        """
        groups: dict[int, list[int]] = {}  # limit -> positions in the batch
        for position, ids in enumerate(batch):
            groups.setdefault(len(ids) + self.hp.extra_length, []).append(position)
        answers: list = [None] * len(batch)
        for limit, positions in groups.items():
            found = self._translate_at([batch[p] for p in positions], limit, options)
            for position, answer in zip(positions, found, strict=True):
                answers[position] = answer
        return answers

    def _translate_at(self, batch: list[list[int]], limit: int, options: dict) -> list:
        self.calls += 1
        return self.translator.translate_batch(
            [[self.tokens[i] for i in ids] for ids in batch],
            **options,
            max_decoding_length=limit,
            num_hypotheses=max(self.hp.num_outputs, self.hp.beam_size) * BEAM_PATIENCE,
            patience=BEAM_PATIENCE,
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


def weights_digest(model) -> str:
    """A digest of the model's weights: what a conversion is made from. Read from
    the weights in memory, so a checkpoint the trainer prunes after it was read
    does not matter, and a checkpoint rewritten under the same name is told apart."""
    digest = hashlib.sha256()
    for variable in model.weights:  # in build order (names carry per-process counters)
        value = variable.numpy()
        digest.update(f"{value.dtype}{value.shape}".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()[:16]


def depends_on(model, hp) -> dict:
    """What a conversion depends on: the weights it was made from (read from the
    model in memory, `weights_digest`) and the output positions it holds."""
    positions = hp.max_output_positions + 1  # the longest output and EOS, after the start token
    return {"weights": weights_digest(model), "output_positions": positions}


def converted(run_directory: str, checkpoint: str, model, tokens: list[str], hp) -> str:
    """The run's CTranslate2 model of `checkpoint`'s weights (made now if no valid
    conversion is there: a damaged or half-made one is made again).

    In the run's ctranslate2/ directory; where the run cannot be written (a
    read-only or archived run), in a temporary directory removed at exit.
    """
    wanted = depends_on(model, hp)
    name = f"{os.path.basename(checkpoint)}-{stamp.digest(wanted)}"
    parent = os.path.join(run_directory, ENGINE_DIR)
    final = os.path.join(parent, name)
    if _complete(final, wanted):
        return final
    try:
        files.check_writable_dir(parent, "the run's ctranslate2/ directory")
    except ValueError as err:
        logging.warning("%s; converting into a temporary directory instead.", err)
        parent = _TEMPORARY_PARENT.name
        final = os.path.join(parent, name)
    files.remove_incomplete(parent)
    if tf.io.gfile.exists(final):  # half-made or damaged (not _complete): made again
        logging.warning("The conversion %s is incomplete or damaged; converting again.", final)
        files.remove_tree(final)
    temporary = files.incomplete_name(final, hidden=True)
    try:
        ctranslate2_model.write(model, tokens, wanted["output_positions"], temporary)
        _stamp(temporary, wanted)
        try:
            files.rename_dir(temporary, final, last=(STAMP_FILE,))
        except tf.errors.OpError:
            if not _complete(final, wanted):  # not another engine's finished conversion
                raise
    finally:
        if tf.io.gfile.exists(temporary):
            files.remove_tree(temporary)
    logging.info("Converted %s for CTranslate2 into %s.", checkpoint, final)
    return final


def _stamp(directory: str, wanted: dict) -> None:
    """Writes STAMP_FILE: what the conversion depends on, and each file's digest,
    so a cut, missing or overwritten file is seen before use."""
    digests = {
        name: _file_digest(os.path.join(directory, name)) for name in tf.io.gfile.listdir(directory)
    }
    stamp.keep(os.path.join(directory, STAMP_FILE), wanted, {"sha256": digests})


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with tf.io.gfile.GFile(path, "rb") as f:
        while chunk := f.read(files.READ_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def _complete(directory: str, wanted: dict) -> bool:
    """Whether `directory` holds a whole conversion of what `wanted` names: its
    stamp, and every file it names with its digest (a conversion stamped by
    sizes only, as older ones are, is made again)."""
    try:
        kept = stamp.kept_body(os.path.join(directory, STAMP_FILE), wanted)
        if kept is None:
            return False
        digests = kept["sha256"]
        return "model.bin" in digests and all(
            _file_digest(os.path.join(directory, name)) == digest
            for name, digest in digests.items()
        )
    except (ValueError, AttributeError, KeyError, TypeError, tf.errors.NotFoundError):
        return False
