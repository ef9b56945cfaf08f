"""The Transformer encoder-decoder (Vaswani et al., 2017)."""

import functools

import keras
import tensorflow as tf

from t2t_lite import registry, sequences
from t2t_lite.layers import embedding, facts, masks, transformer_layers, universal
from t2t_lite.models import input_labels, positions, transformer_hparams


def shift_right(targets: tf.Tensor) -> tf.Tensor:
    """Decoder inputs: targets delayed one step, PAD (0) as the start symbol. [B, T]."""
    return tf.pad(targets, [[0, 0], [1, 0]])[:, :-1]  # [B, T]


@registry.MODELS.register("transformer")
class Transformer(keras.Model):
    """Encoder-decoder Transformer with one shared embedding/softmax matrix.

    `input_encoding` (sequences.INPUT_ENCODINGS, from the problem) decides
    what the encoder reads: "tokens", the source sequence; "facts", one
    position per fact (layers/facts.py, bAbI); "none", nothing: the model
    is decoder-only (no encoder, no encoder-decoder attention), a language
    model of the targets, as tensor2tensor built for has_inputs=False.
    """

    hparams_class = transformer_hparams.TransformerHParams
    # The offsets' seed generator exists only with offsets, unless a subclass
    # keeps one always (its checkpoints already hold it).
    always_has_seed_generator = False

    def __init__(
        self,
        hparams: transformer_hparams.TransformerHParams,
        vocab_size: int,
        input_encoding: str = "tokens",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if input_encoding not in sequences.INPUT_ENCODINGS:
            raise ValueError(
                f"input_encoding must be one of {sequences.INPUT_ENCODINGS}, got {input_encoding!r}"
            )
        if hparams.position_coupling != "none" and input_encoding != "tokens":
            raise ValueError(
                f"position_coupling={hparams.position_coupling!r} ties target positions to "
                f"source positions and needs a token source, not input_encoding={input_encoding!r}"
            )
        if hparams.position_eval == "spread" and input_encoding != "tokens":
            raise ValueError(
                "position_eval=spread spreads positions over the source's length and needs "
                f"a token source, not input_encoding={input_encoding!r}"
            )
        self.hparams = hparams
        self.vocab_size = vocab_size
        self.input_encoding = input_encoding
        self.embedding = embedding.SharedEmbedding(
            vocab_size, hparams.hidden_size, name="shared_embedding"
        )
        if not hparams.shared_embedding_and_softmax_weights:
            # Three matrices: source embedding, target embedding (self.embedding), softmax.
            self.separate_source = embedding.SharedEmbedding(
                vocab_size, hparams.hidden_size, name="source_embedding"
            )
            self.separate_softmax = embedding.SharedEmbedding(
                vocab_size, hparams.hidden_size, name="softmax"
            )
        if input_encoding == "facts":
            self.fact_embedding = facts.FactEmbedding(self.source_embedding, name="fact_embedding")
        if hparams.position_embedding == "learned":  # one table for encoder and decoder
            self.positions = embedding.LearnedPositions(
                hparams.max_length, hparams.hidden_size, name="positions"
            )
        self.input_dropout = keras.layers.Dropout(hparams.layer_prepostprocess_dropout)
        self.target_dropout = keras.layers.Dropout(hparams.layer_prepostprocess_dropout)
        self.encoder, self.decoder = self.make_stacks(self.block_config())
        if hparams.position_start_index != "none" or self.always_has_seed_generator:
            self.seed_generator = keras.random.SeedGenerator(0, name="position_start_seed")

    @property
    def source_embedding(self) -> embedding.SharedEmbedding:
        """The source's embedding: the one shared matrix, or its own."""
        if self.hparams.shared_embedding_and_softmax_weights:
            return self.embedding
        return self.separate_source

    @property
    def softmax(self) -> embedding.SharedEmbedding:
        """The output projection: the one shared matrix, or its own."""
        if self.hparams.shared_embedding_and_softmax_weights:
            return self.embedding
        return self.separate_softmax

    def make_stacks(
        self, config: transformer_layers.BlockConfig
    ) -> tuple[keras.layers.Layer, keras.layers.Layer]:
        """The encoder (None when decoder-only) and decoder: num_encoder_layers /
        num_decoder_layers blocks."""
        hp = self.hparams
        encoder = None
        if self.has_encoder:
            encoder = transformer_layers.Stack(
                tuple(
                    transformer_layers.EncoderBlock(config, name=f"layer_{i}")
                    for i in range(hp.encoder_layers)
                ),
                hp.norm_position,
                name="encoder",
            )
        decoder = transformer_layers.Stack(
            tuple(
                transformer_layers.DecoderBlock(
                    config, cross_attention=self.has_encoder, name=f"layer_{i}"
                )
                for i in range(hp.decoder_layers)
            ),
            hp.norm_position,
            name="decoder",
        )
        return encoder, decoder

    def block_config(self) -> transformer_layers.BlockConfig:
        hp = self.hparams
        return transformer_layers.BlockConfig(
            hidden_size=hp.hidden_size,
            filter_size=hp.filter_size,
            num_heads=hp.num_heads,
            norm_position=hp.norm_position,
            layer_prepostprocess_dropout=hp.layer_prepostprocess_dropout,
            attention_dropout=hp.attention_dropout,
            relu_dropout=hp.relu_dropout,
            attention_key_channels=hp.attention_key_channels,
            attention_length_scale=hp.attention_length_scale,
            attention_length_scale_learned=hp.attention_length_scale_learned,
            max_relative_position=hp.max_relative_position,
        )

    @property
    def has_encoder(self) -> bool:
        return self.input_encoding != "none"

    def dummy_features(self) -> dict[str, tf.Tensor]:
        """A one-row batch that builds every variable (checkpoints.build_model)."""
        targets = tf.ones([1, 2], tf.int32)
        if self.input_encoding == "facts":  # one (empty) fact, so the encoder runs
            return {
                "inputs": tf.constant([[sequences.FACT_END_ID, sequences.EOS_ID]]),
                "targets": targets,
            }
        return {"inputs": targets, "targets": targets}

    def embed_inputs(self, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """inputs [B, L] -> (encoder positions' embeddings [B, S, C], nonpadding [B, S]).

        S = L for tokens; for facts, S is the batch's largest fact count.
        """
        if self.input_encoding == "facts":
            return self.fact_embedding(inputs)
        return self.source_embedding.embed(inputs), masks.padding_mask(inputs)

    def empty_memory(self, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """A decoder-only model's "encoder output": [B, 0, C] and its bias [B, 1, 1, 0].

        Decoding code stays the same for both kinds (the batch size comes
        from it); blocks without encoder-decoder attention never read it.
        """
        batch_size = tf.shape(inputs)[0]
        encoded = tf.zeros([batch_size, 0, self.hparams.hidden_size], self.embedding.compute_dtype)
        return encoded, tf.zeros([batch_size, 1, 1, 0])

    def offset_shape(self) -> tuple[int, ...]:
        """The shape of one stack's offsets under random_per_step: one per stack."""
        return ()

    def position_starts(self, features, training: bool) -> tuple[tf.Tensor | int, tf.Tensor | int]:
        """The first position's index for the encoder and for the decoder.

        0 at evaluation and with position_start_index "none". In training,
        "random" draws one offset per batch in [0, position_start_max),
        shared by encoder and decoder, so a target keeps its relative
        position to the source; "random_per_step" is tensor2tensor's UT
        offsets: each stack its own (the UT: one per recurrence step,
        `offset_shape`), so positions carry nothing across the stacks;
        "randomized" draws each row's positions (`positions.draw_positions`: a sorted
        subset of [0, position_start_max) as long as the batch's longer side),
        one [B, K] table for encoder and decoder, which `place` maps every
        position index through (coupled ones included).
        At evaluation 0, or None under position_eval="spread": each stack
        then spreads them over the source's length (`evaluation_start`).
        """
        hp = self.hparams
        if not training and hp.position_eval == "spread":
            return None, None
        if not training or hp.position_start_index == "none":
            return 0, 0
        source = features["inputs"] if self.has_encoder else features["targets"]
        limit = hp.position_start_max or tf.shape(source)[1]
        if hp.position_start_index == "randomized":
            count = tf.maximum(tf.shape(source)[1], tf.shape(features["targets"])[1])
            table = positions.draw_positions(tf.shape(source)[0], count, limit, self.seed_generator)
            return table, table

        def draw(shape):
            return keras.random.randint(shape, 0, limit, dtype="int32", seed=self.seed_generator)

        if hp.position_start_index == "random":
            start = draw(())
            return start, start
        return draw(self.offset_shape()), draw(self.offset_shape())

    def decoder_positions(
        self,
        length: tf.Tensor | int,
        encoder_bias: tf.Tensor,
        start: tf.Tensor | int | None = None,
        rows: tf.Tensor | None = None,
        first: tf.Tensor | int = 0,
    ) -> tf.Tensor | int:
        """The decoder's positions for targets first..first+length-1 from `start`:
        start + first itself (consecutive positions) without coupling; with
        position_coupling="reverse", explicit positions [B, length]: for a
        source of n symbols, target t < n at start + n - 1 - t (the source
        symbol it reverses) and the EOS target t = n at start + n (the
        source's EOS), so every target, EOS included, reads the source at its
        own position; t > n continue at start + t. n is read off the encoder
        bias [B', 1, 1, S] (its zero entries are the symbols and EOS). `rows`:
        the number of decoder rows when they are hypotheses, rows / B'
        consecutive ones per source (beam search). start None: evaluation's
        (`evaluation_start`).
        """
        # [B]: each row's source positions (EOS included), read off the bias at most once.
        lengths = functools.cache(lambda: universal.source_lengths(encoder_bias, rows))
        if start is None:
            start = self.evaluation_start(lengths)
        if self.hparams.position_coupling != "reverse":
            if positions.is_explicit(start):  # randomized or spread positions: [B, length]
                return positions.place(start, first + tf.range(length)[tf.newaxis])
            return start + first
        symbols = lengths() - 1  # [B] without EOS
        n = symbols[:, tf.newaxis]  # [B, 1]
        steps = first + tf.range(length)[tf.newaxis]  # [1, length]
        return positions.place(start, tf.where(steps < n, n - 1 - steps, steps))  # [B, length]

    def evaluation_start(self, lengths) -> positions.Spread | int:
        """Evaluation's position start: 0 (consecutive positions), or with
        position_eval="spread" a Spread over lengths() [B], each row's source
        positions (EOS included)."""
        if self.hparams.position_eval != "spread":
            return 0
        return positions.Spread(lengths(), self.hparams.position_start_max)

    def encoder_positions(self, inputs: tf.Tensor, start: tf.Tensor | int | None = None):
        """The encoder's positions for inputs [B, S] from `start`: start itself
        (consecutive positions) unless position_coupling="addition", then
        explicit positions [B, S] that restart at start after each separator:
        "3 1 + 4 5 EOS" -> start + [0, 1, 2, 0, 1, 2] (the separator and EOS
        one past their number's last digit). start None: evaluation's.
        """
        if start is None:  # evaluation's; a spread counts each row's tokens [B]
            start = self.evaluation_start(
                lambda: tf.cast(tf.reduce_sum(masks.padding_mask(inputs), 1), tf.int32)
            )
        length = tf.shape(inputs)[1]
        if self.hparams.position_coupling != "addition":
            if positions.is_explicit(start):  # randomized or spread positions: [B, S]
                return positions.place(start, tf.range(length)[tf.newaxis])
            return start
        index = tf.range(length)  # [S]
        # A separator at j restarts the count at j + 1 (it ends its own number).
        after = tf.where(tf.equal(inputs, self.hparams.position_separator_id), index + 1, 0)
        before = index[:, tf.newaxis] < index[tf.newaxis]  # [S, S]: j < i
        restart = tf.reduce_max(
            tf.where(before[tf.newaxis], after[:, :, tf.newaxis], 0), axis=1
        )  # [B, S(j), S(i)] -> [B, S]: the newest restart before each position
        return positions.place(start, index[tf.newaxis] - restart)  # [B, S]

    def encode(
        self,
        inputs: tf.Tensor,
        training: bool = False,
        position_start: tf.Tensor | int | None = None,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """inputs [B, L] -> (encoded [B, S, C], encoder-decoder bias [B, 1, 1, S])."""
        if not self.has_encoder:
            return self.empty_memory(inputs)
        position_start = self.encoder_positions(inputs, position_start)
        x, nonpadding = self.embed_inputs(inputs)
        signal = tf.cast(self.position_signal(tf.shape(x)[1], position_start), x.dtype)
        x = self.input_dropout(x + signal, training=training)
        bias = masks.nonpadding_bias(nonpadding)
        again = signal if self.hparams.position_every_layer else None
        return self.encoder(x, self.encoder_self_bias(bias), training=training, signal=again), bias

    def encoder_self_bias(self, bias: tf.Tensor) -> tf.Tensor:
        """The encoder's self-attention bias from the padding bias [B, 1, 1, S]:
        itself, or [B, 1, S, S] hiding later positions too (causal_encoder)."""
        if not self.hparams.causal_encoder:
            return bias
        return tf.minimum(bias, masks.causal_bias(tf.shape(bias)[-1]))  # [B, 1, S, S]

    def decode(
        self,
        targets: tf.Tensor,
        encoded: tf.Tensor,
        encoder_bias: tf.Tensor,
        training: bool = False,
        position_start: tf.Tensor | int | None = None,
    ) -> tf.Tensor:
        """Teacher-forced decoding: targets [B, T] -> float32 logits [B, T, V]."""
        position_start = self.decoder_positions(tf.shape(targets)[1], encoder_bias, position_start)
        x = self.embedding.embed(shift_right(targets))
        signal = tf.cast(self.position_signal(tf.shape(x)[1], position_start), x.dtype)
        x = self.target_dropout(x + signal, training=training)
        self_bias = masks.causal_bias(tf.shape(targets)[1])
        again = signal if self.hparams.position_every_layer else None
        x = self.decoder(x, self_bias, encoded, encoder_bias, training=training, signal=again)
        return self.softmax.logits(x)

    def init_cache(
        self, encoded: tf.Tensor, encoder_bias: tf.Tensor, max_length: int | None
    ) -> dict:
        """Decoding state for up to max_length target positions (None: caches
        that grow by one position per step, for loops with shape invariants,
        `attention.shape_invariants`; not for XLA): the decoder
        stack's caches, with the encoder bias and the transposed softmax
        matrix among the static entries (sequences.STATIC_CACHE). Every other
        entry is batch-major, so beam search can gather it by beam.
        """
        cache = self.decoder.initial_cache(encoded, max_length)
        cache[sequences.STATIC_CACHE]["encoder_bias"] = encoder_bias
        cache[sequences.STATIC_CACHE]["softmax_kernel"] = self.softmax.softmax_kernel()
        return cache

    def embed_step(self, ids: tf.Tensor, position: tf.Tensor) -> tf.Tensor:
        """Decoder input ids [B] at `position` (a scalar, or [B, 1] coupled
        positions) -> [B, 1, C], with its timing signal."""
        x = self.embedding.embed(ids[:, tf.newaxis])  # [B, 1, C]
        return x + tf.cast(self.position_signal(1, position), x.dtype)  # [1 or B, 1, C] added

    def decode_step(self, ids: tf.Tensor, index: tf.Tensor, cache: dict) -> tuple[tf.Tensor, dict]:
        """The decoder input ids [B] at position `index` -> (float32 logits [B, V], cache).

        Position 0's input is PAD (0), as in teacher forcing; the logits are
        the prediction for the target at `index`. The decoder stack runs
        the step (its blocks, or its recurrence) on its own cache entries.
        """
        encoder_bias = cache[sequences.STATIC_CACHE]["encoder_bias"]
        position, hp = index, self.hparams
        if hp.position_coupling == "reverse" or hp.position_eval == "spread":  # [B, 1] per row
            position = self.decoder_positions(1, encoder_bias, rows=tf.shape(ids)[0], first=index)
        x = self.embed_step(ids, position)
        again = {}  # the UT's decoder (its own decode_step) takes no signal; it refuses the option
        if self.hparams.position_every_layer:
            signal = self.position_signal(1, position)  # [1 or B, 1, C]
            again = {"signal": tf.cast(signal, x.dtype)}
        x, cache = self.decoder.decode_step(x, index, cache, encoder_bias, position, **again)
        kernel = cache[sequences.STATIC_CACHE]["softmax_kernel"]
        return self.softmax.logits(x, kernel)[:, 0], cache

    def position_signal(self, length: tf.Tensor | int, start: tf.Tensor | int = 0) -> tf.Tensor:
        """Positions start..start+length-1 (or a [B, L] start of explicit positions)
        -> float32 [1 or B, L, C]: sinusoids, the learned table's rows, or zeros
        [1, L, C] with position_embedding="none"."""
        if self.hparams.position_embedding == "none":
            return tf.zeros([1, length, self.hparams.hidden_size])  # [1, L, C]
        if self.hparams.position_embedding == "learned":
            return self.positions.signal(length, start)
        return embedding.timing_signal(length, self.hparams.hidden_size, start=start)

    def call(self, features, training=False):
        return self.forward(features, training=training)[0]

    def forward(self, features, training=False) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """Logits [B, T, V] and auxiliary outputs (the input labels' loss, if on).

        The trainer calls this (`call` returns its logits): an auxiliary
        "loss" is added to the training loss and every other entry is a
        scalar metric it logs.
        """
        encoder_start, decoder_start = self.position_starts(features, training)
        encoded, bias = self.encode(features["inputs"], training, encoder_start)
        logits = self.decode(features["targets"], encoded, bias, training, decoder_start)
        return logits, input_labels.terms(self, features, encoded)
