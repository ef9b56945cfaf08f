"""The Transformer encoder-decoder (Vaswani et al., 2017).

The forward and training pass (`call`, `forward`, `encode`, `decode`) is
keras.ops, so it runs on every Keras backend; the cached decoding steps
(`init_cache`, `embed_step`, `decode_step`) serve t2t_lite's TensorFlow search.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from t2t_lite import hparams as hparams_lib
from t2t_lite import registry, sequences
from t2t_lite.layers import embedding, facts, masks, nesting, policy, transformer_layers
from t2t_lite.models import input_labels, positions, transformer_hparams

# The largest vocabulary a model is made for: far above any subword or word
# vocabulary, far below a size whose embedding no machine holds (a .keras
# file's config is checked against it before a variable is made).
MAX_VOCAB_SIZE = 1 << 22


def _is_count(value) -> bool:
    """An int (a numpy integer too), not a bool."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def shift_right(targets):
    """Decoder inputs: targets delayed one step, PAD (0) as the start symbol. [B, T]."""
    return ops.pad(targets, [[0, 0], [1, 0]])[:, :-1]  # [B, T]


@registry.MODELS.register("transformer")
@keras.saving.register_keras_serializable(package="t2t_lite")
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
        if not _is_count(vocab_size) or not 1 <= vocab_size <= MAX_VOCAB_SIZE:
            raise ValueError(
                f"vocab_size must be an int from 1 to {MAX_VOCAB_SIZE:,}, got {vocab_size!r}"
            )
        if input_encoding not in sequences.INPUT_ENCODINGS:
            raise ValueError(
                f"input_encoding must be one of {sequences.INPUT_ENCODINGS}, got {input_encoding!r}"
            )
        if hparams.input_word_dropout and input_encoding != "tokens":
            raise ValueError(
                f"input_word_dropout={hparams.input_word_dropout} replaces input tokens; the "
                f"problem's inputs are encoded as {input_encoding!r} (set it to 0)"
            )
        self.hparams = hparams
        self.vocab_size = int(vocab_size)
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
        if hparams.input_word_dropout:  # only then: checkpoints without it stay as they were
            self.word_dropout_seed = keras.random.SeedGenerator(1, name="word_dropout_seed")
        seed = None
        if hparams.position_start_index != "none" or self.always_has_seed_generator:
            self.seed_generator = seed = keras.random.SeedGenerator(0, name="position_start_seed")
        # Where each symbol sits (models/positions.py); the model turns positions into signals.
        self.position_policy = positions.Policy(hparams, input_encoding, self.offset_shape(), seed)
        if kwargs.get("dtype") is not None:  # a policy for the model: for every layer it made
            policy.hand_down(self)

    # Keras serialization: the hparams as a plain dict; model.save("m.keras"),
    # keras.models.load_model and keras.models.clone_model rebuild the model.

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "hparams": hparams_lib.to_dict(self.hparams),
            "vocab_size": self.vocab_size,
            "input_encoding": self.input_encoding,
        }

    @classmethod
    def from_config(cls, config: dict) -> "Transformer":
        config = dict(config)
        if not isinstance(config.get("hparams"), dict):
            raise ValueError(
                f"{cls.__name__}'s config has no 'hparams' dict (a .keras file this package "
                "did not write, or one edited by hand)"
            )
        hparams = hparams_lib.from_dict(cls.hparams_class, config.pop("hparams"))
        return cls(hparams, **config)

    def export(self, filepath, format="tf_saved_model", **kwargs):
        """Keras's export traces `call` on features without a vocabulary or a
        search: refused, naming the export that serves this model."""
        raise ValueError(
            f"{type(self).__name__}.export: export a trained run with t2t-export (a SavedModel "
            "that serves text in, text out, with cached greedy or beam search) or "
            "t2t-export --format=ctranslate2; model.save('m.keras') keeps the Keras model"
        )

    def get_build_config(self) -> dict:
        return {"dummy_batch": True}  # the variables are made by a dummy batch

    def build_from_config(self, config: dict) -> None:
        """Keras's load: the variables first, so a .keras file's weights have their places."""
        del config
        self.build_variables()

    def build_variables(self) -> None:
        """Creates every variable with a tiny dummy batch.

        Keras builds a layer without a build() of its own by first running its
        call() symbolically (a graph trace of the whole forward pass: about 2 s
        of a 2.3 s build for a 2-layer Transformer), then runs it for real. The
        container layers (blocks, stacks, the model) create their sublayers in
        __init__, and every layer holding weights creates them in its build(),
        so the eager dummy batch alone creates every variable: containers are
        marked built and the leaves build as the batch reaches them.
        """
        for layer in nesting.nested(self, include_self=True):
            if type(layer).build is keras.layers.Layer.build:  # no build() of its own
                layer.built = True
        self(self.dummy_features(), training=False)

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

    def dummy_features(self) -> dict:
        """A one-row batch that builds every variable (checkpoints.build_model)."""
        targets = ops.ones((1, 2), "int32")
        if self.input_encoding == "facts":  # one (empty) fact, so the encoder runs
            inputs = np.array([[sequences.FACT_END_ID, sequences.EOS_ID]], np.int32)
            return {"inputs": ops.convert_to_tensor(inputs), "targets": targets}
        return {"inputs": targets, "targets": targets}

    def embed_inputs(self, inputs, training: bool = False):
        """inputs [B, L] -> (encoder positions' embeddings [B, S, C], nonpadding [B, S]).

        S = L for tokens; for facts, S is the batch's largest fact count.
        In training, input_word_dropout replaces tokens by the unknown token.
        """
        if self.input_encoding == "facts":
            return self.fact_embedding(inputs)
        nonpadding = masks.padding_mask(inputs)
        rate = self.hparams.input_word_dropout
        if training and rate:
            draw = keras.random.uniform(ops.shape(inputs), seed=self.word_dropout_seed)
            dropped = (draw < rate) & (inputs > sequences.EOS_ID)  # words, not EOS or PAD
            inputs = ops.where(dropped, ops.full_like(inputs, sequences.UNKNOWN_ID), inputs)
        return self.source_embedding.embed(inputs), nonpadding

    def empty_memory(self, inputs):
        """A decoder-only model's "encoder output": [B, 0, C] and its bias [B, 1, 1, 0].

        Decoding code stays the same for both kinds (the batch size comes
        from it); blocks without encoder-decoder attention never read it.
        """
        batch_size = ops.shape(inputs)[0]
        shape = (batch_size, 0, self.hparams.hidden_size)
        return ops.zeros(shape, self.embedding.compute_dtype), ops.zeros((batch_size, 1, 1, 0))

    def offset_shape(self) -> tuple[int, ...]:
        """The shape of one stack's offsets under random_per_step: one per stack."""
        return ()

    def encode(self, inputs, training: bool = False, position_start=None):
        """inputs [B, L] -> (encoded [B, S, C], encoder-decoder bias [B, 1, 1, S])."""
        if not self.has_encoder:
            return self.empty_memory(inputs)
        position_start = self.position_policy.encoder(inputs, position_start)
        x, nonpadding = self.embed_inputs(inputs, training)
        signal = ops.cast(self.position_signal(ops.shape(x)[1], position_start), x.dtype)
        x = self.input_dropout(x + signal, training=training)
        bias = masks.nonpadding_bias(nonpadding)
        again = signal if self.hparams.position_every_layer else None
        return self.encoder(x, self.encoder_self_bias(bias), training=training, signal=again), bias

    def encoder_self_bias(self, bias):
        """The encoder's self-attention bias from the padding bias [B, 1, 1, S]:
        itself, or [B, 1, S, S] hiding later positions too (causal_encoder)."""
        if not self.hparams.causal_encoder:
            return bias
        return ops.minimum(bias, masks.causal_bias(ops.shape(bias)[-1]))  # [B, 1, S, S]

    def decode(self, targets, encoded, encoder_bias, training: bool = False, position_start=None):
        """Teacher-forced decoding: targets [B, T] -> float32 logits [B, T, V]."""
        position_start = self.position_policy.decoder(
            ops.shape(targets)[1], encoder_bias, position_start
        )
        x = self.embedding.embed(shift_right(targets))
        signal = ops.cast(self.position_signal(ops.shape(x)[1], position_start), x.dtype)
        x = self.target_dropout(x + signal, training=training)
        self_bias = masks.causal_bias(ops.shape(targets)[1])
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
        position = index
        if self.position_policy.per_row_in_decoding():  # [B, 1] per row
            position = self.position_policy.decoder(
                1, encoder_bias, rows=tf.shape(ids)[0], first=index
            )
        x = self.embed_step(ids, position)
        again = {}  # the UT's decoder (its own decode_step) takes no signal; it refuses the option
        if self.hparams.position_every_layer:
            signal = self.position_signal(1, position)  # [1 or B, 1, C]
            again = {"signal": tf.cast(signal, x.dtype)}
        x, cache = self.decoder.decode_step(x, index, cache, encoder_bias, position, **again)
        kernel = cache[sequences.STATIC_CACHE]["softmax_kernel"]
        return self.softmax.logits(x, kernel)[:, 0], cache

    def position_signal(self, length, start=0):
        """Positions start..start+length-1 (or a [B, L] start of explicit positions)
        -> float32 [1 or B, L, C]: sinusoids, the learned table's rows, or zeros
        [1, L, C] with position_embedding="none"."""
        if self.hparams.position_embedding == "none":
            return ops.zeros((1, length, self.hparams.hidden_size))  # [1, L, C]
        if self.hparams.position_embedding == "learned":
            return self.positions.signal(length, start)
        return embedding.timing_signal(length, self.hparams.hidden_size, start=start)

    def call(self, features, training=False):
        """The logits; an auxiliary loss (ACT's ponder cost, the input labels')
        is added with `add_loss`, so Keras's `fit` trains on what t2t-train does."""
        logits, aux = self.logits_and_aux(features, training=training)
        if "loss" in aux:
            self.add_loss(aux["loss"])
        return logits

    def logits_and_aux(self, features, training=False) -> tuple:
        """Logits [B, T, V] and auxiliary outputs (the input labels' loss, if on).

        The trainer calls this (`call` returns its logits): an auxiliary
        "loss" is added to the training loss and every other entry is a
        scalar metric it logs.
        """
        encoder_start, decoder_start = self.position_policy.starts(features, training)
        encoded, bias = self.encode(features["inputs"], training, encoder_start)
        logits = self.decode(features["targets"], encoded, bias, training, decoder_start)
        return logits, input_labels.terms(self, features, encoded)
