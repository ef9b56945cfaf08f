"""The signatures of an export: text in, text out; padded ids in, ids out.

Both run the same graph: rows are truncated to max_input_length, EOS is
appended, the decoder's search (beam or greedy, fixed at export time) runs,
and each row's best hypothesis is cut at its EOS. A row that cannot be
decoded never fails the batch; its `status` says why:

- "ok": decoded;
- "truncated": longer than max_input_length; its first max_input_length
  tokens were decoded;
- "empty": no tokens; output "" (or no ids) with score 0.0;
- "invalid_utf8" (text only): not UTF-8; output "" with score REJECTED_SCORE;
- "unknown_token": a token outside the vocabulary (text) or an id outside
  [0, vocab_size) (ids); output "" with score REJECTED_SCORE.

A request of another shape (a scalar, a matrix of strings, a vector of ids)
or of more than MAX_REQUEST_ROWS rows fails as a whole with an
InvalidArgumentError naming `inputs` or the bound; the server stays up.
"""

import keras
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.data import decode_constraint, graph_tokenizer
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.decoding import search

OK, TRUNCATED, EMPTY = "ok", "truncated", "empty"
INVALID_UTF8, UNKNOWN_TOKEN = "invalid_utf8", "unknown_token"
# Finite (JSON has no infinities) and below any real score.
REJECTED_SCORE = search.NEG

# Rows of one request: the whole request is decoded as one batch, so its memory
# grows with the rows (about 0.15 MB a one-symbol row on the algorithmic export;
# longer rows cost more). Larger requests are refused, not run out of memory.
MAX_REQUEST_ROWS = 4096

TEXT_SIGNATURE = "serving_default"
IDS_SIGNATURE = "decode_ids"


class ServingModule(tf.Module):
    """A model, its problem's graph tokenizer and a search, as two tf.functions."""

    def __init__(
        self,
        model: keras.Model,
        tokenizer: graph_tokenizer.GraphTokenizer,
        hp: decoder_lib.DecodeHParams,
        vocab_size: int,
        xla_max_rows: int = 0,
        constraint: decode_constraint.Constraint | None = None,
    ):
        """xla_max_rows: searches of at most this many rows (inputs x beam_size)
        run XLA-compiled, their inputs padded to doubling row counts and lengths
        (few compiled shapes); TF Serving then needs --xla_cpu_compilation_enabled.
        0: never (stock TF Serving runs the graph as saved). constraint: what
        the search may write (a problem's decode_constraint: a parsing problem's trees),
        as t2t-decode's search."""
        super().__init__()
        # The model's variables are tracked, not the Keras model itself: saving
        # a tracked Keras model would also trace its own default signature.
        self.model_variables = list(model.variables)
        self.tokenizer = tokenizer
        self._decoder = decoder_lib.Decoder(model, hp, xla_compile=False, constraint=constraint)
        # Built only where `_search` can call it.
        self._xla_decoder = (
            decoder_lib.Decoder(model, hp, xla_compile=True, constraint=constraint)
            if xla_max_rows >= hp.beam_size
            else None
        )
        self._xla_max_rows = xla_max_rows
        self._beam_size = hp.beam_size
        self._max_input_length = hp.max_input_length
        self._vocab_size = vocab_size
        self.serve_text = tf.function(
            self._serve_text, input_signature=[tf.TensorSpec([None], tf.string, name="inputs")]
        )
        self.serve_ids = tf.function(
            self._serve_ids, input_signature=[tf.TensorSpec([None, None], tf.int32, name="inputs")]
        )

    def signatures(self) -> dict:
        return {TEXT_SIGNATURE: self.serve_text, IDS_SIGNATURE: self.serve_ids}

    def _serve_text(self, inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        """inputs [N] strings -> outputs [N] strings, scores [N], status [N]."""
        # The signature's shape is not enforced on every path (a direct call of a
        # loaded signature, a server's request): a scalar or a matrix is refused
        # here, at run time, instead of reaching kernels that assume [N].
        inputs = _checked(tf.ensure_shape(inputs, [None], name="inputs"))
        # Valid UTF-8 is unchanged by transcoding; anything else gains U+FFFD.
        transcoded = tf.strings.unicode_transcode(inputs, "UTF-8", "UTF-8", errors="replace")
        valid = tf.equal(transcoded, inputs)  # [N]
        # Only white space is "empty" (docs/export.md), whatever the tokenizer makes of it.
        blank = tf.equal(tf.strings.length(tf.strings.strip(inputs)), 0)  # [N]
        ids, known = self.tokenizer.tokenize(tf.where(valid & ~blank, inputs, ""))
        outputs, scores, status = self._decode(ids, known)
        return {
            "outputs": self.tokenizer.detokenize(outputs),
            "scores": tf.where(valid, scores, REJECTED_SCORE),
            "status": tf.where(valid, status, INVALID_UTF8),
        }

    def _serve_ids(self, inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        """inputs [N, S] ids (each row ends at its first PAD or EOS) -> ids [N, T], scores, status."""
        inputs = _checked(tf.ensure_shape(inputs, [None, None], name="inputs"))
        lengths = sequences.symbol_lengths(inputs)  # [N]
        ids = tf.RaggedTensor.from_tensor(inputs, lengths=lengths)  # [N, (symbols)]
        in_vocab = (inputs >= 0) & (inputs < self._vocab_size)  # [N, S]
        outputs, scores, status = self._decode(ids, tf.reduce_all(in_vocab, axis=1))
        return {"outputs": outputs.to_tensor(sequences.PAD_ID), "scores": scores, "status": status}

    def _decode(
        self, ids: tf.RaggedTensor, known: tf.Tensor
    ) -> tuple[tf.RaggedTensor, tf.Tensor, tf.Tensor]:
        """ids [N, (tokens)] without EOS, known [N] -> best ids [N, (out)], scores [N], status."""
        lengths = tf.cast(ids.row_lengths(), tf.int32)  # [N]
        truncated = lengths > self._max_input_length
        ids = ids[:, : self._max_input_length]
        accepted = known & (lengths > 0)  # rows the model decodes
        kept = tf.where(accepted, tf.minimum(lengths, self._max_input_length), 0)  # [N]
        dense = tf.where(
            accepted[:, tf.newaxis], ids.to_tensor(sequences.PAD_ID), sequences.PAD_ID
        )  # [N, S]
        dense = tf.pad(dense, [[0, 0], [0, 1]])  # [N, S + 1]: room for EOS
        dense += sequences.EOS_ID * tf.one_hot(
            kept, tf.shape(dense)[1], dtype=tf.int32
        )  # EOS at kept
        hypotheses, scores = tf.cond(  # an empty batch answers empty, without a search
            tf.shape(dense)[0] > 0,
            lambda: self._search(dense),
            lambda: (tf.zeros([0, 1, 1], tf.int32), tf.zeros([0, 1])),
        )  # [N, K, T], [N, K]
        best = hypotheses[:, 0]  # [N, T]
        out_lengths = sequences.symbol_lengths(best)  # [N]
        outputs = tf.RaggedTensor.from_tensor(best, lengths=tf.where(accepted, out_lengths, 0))
        status = tf.where(
            ~known, UNKNOWN_TOKEN, tf.where(lengths == 0, EMPTY, tf.where(truncated, TRUNCATED, OK))
        )
        scores = tf.where(accepted, scores[:, 0], tf.where(known, 0.0, REJECTED_SCORE))
        return outputs, scores, status

    def _search(self, dense: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """dense [N, S] -> the decoder's search; XLA-compiled for few enough rows."""
        if self._xla_max_rows < self._beam_size:
            return self._decoder.search_ids(dense)
        rows, length = tf.shape(dense)[0], tf.shape(dense)[1]

        def compiled():
            padded_rows = _doubling(rows, 1)
            # Filler rows are empty inputs (EOS only), as t2t-decode's batches.
            filler = tf.one_hot(tf.zeros([padded_rows - rows], tf.int32), length, dtype=tf.int32)
            padded = tf.concat([dense, filler * sequences.EOS_ID], axis=0)  # [N', S]
            padded = tf.pad(
                padded, [[0, 0], [0, _doubling(length, sequences.BUCKET_MULTIPLE) - length]]
            )
            hypotheses, scores = self._xla_decoder.search(padded)  # [N', K, T'], [N', K]
            return hypotheses[:rows], scores[:rows]

        return tf.cond(
            rows * self._beam_size <= self._xla_max_rows,
            compiled,
            lambda: self._decoder.search_ids(dense),
        )


def _checked(inputs: tf.Tensor) -> tf.Tensor:
    """inputs, once their row count is within MAX_REQUEST_ROWS (else an InvalidArgumentError)."""
    within = tf.debugging.assert_less_equal(
        tf.shape(inputs)[0],
        MAX_REQUEST_ROWS,
        message=f"a request holds at most {MAX_REQUEST_ROWS} rows; send more in several requests",
    )
    with tf.control_dependencies([within]):
        return tf.identity(inputs)


def _doubling(n: tf.Tensor, smallest: int) -> tf.Tensor:
    """The smallest of smallest * 2**i (i >= 0) that is >= n."""
    sizes = tf.constant([smallest * 2**i for i in range(31 - smallest.bit_length())])
    return tf.gather(sizes, tf.argmax(tf.cast(sizes >= n, tf.int32), output_type=tf.int32))
