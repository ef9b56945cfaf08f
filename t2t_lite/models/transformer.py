"""The Transformer encoder-decoder (Vaswani et al., 2017)."""

import keras
import tensorflow as tf

from t2t_lite import registry, sequences
from t2t_lite.layers import embedding, masks, transformer_layers
from t2t_lite.models import transformer_hparams


def shift_right(targets: tf.Tensor) -> tf.Tensor:
    """Decoder inputs: targets delayed one step, PAD (0) as the start symbol. [B, T]."""
    return tf.pad(targets, [[0, 0], [1, 0]])[:, :-1]  # [B, T]


@registry.MODELS.register("transformer")
class Transformer(keras.Model):
    """Encoder-decoder Transformer with one shared embedding/softmax matrix."""

    hparams_class = transformer_hparams.TransformerHParams

    def __init__(self, hparams: transformer_hparams.TransformerHParams, vocab_size: int, **kwargs):
        super().__init__(**kwargs)
        self.hparams = hparams
        self.vocab_size = vocab_size
        self.embedding = embedding.SharedEmbedding(
            vocab_size, hparams.hidden_size, name="shared_embedding"
        )
        self.input_dropout = keras.layers.Dropout(hparams.layer_prepostprocess_dropout)
        self.target_dropout = keras.layers.Dropout(hparams.layer_prepostprocess_dropout)
        self.encoder, self.decoder = self.make_stacks(self.block_config())

    def make_stacks(
        self, config: transformer_layers.BlockConfig
    ) -> tuple[keras.layers.Layer, keras.layers.Layer]:
        """The encoder and decoder: num_encoder_layers / num_decoder_layers blocks."""
        hp = self.hparams
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
                transformer_layers.DecoderBlock(config, name=f"layer_{i}")
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
        )

    def embed_with_timing(
        self, ids: tf.Tensor, dropout: keras.layers.Layer, training: bool
    ) -> tf.Tensor:
        """ids [B, L] -> embeddings plus timing signal, with dropout. [B, L, C]"""
        x = self.embedding.embed(ids)
        x = x + tf.cast(timing_signal_like(x), x.dtype)
        return dropout(x, training=training)

    def encode(self, inputs: tf.Tensor, training: bool = False) -> tuple[tf.Tensor, tf.Tensor]:
        """inputs [B, S] -> (encoded [B, S, C], encoder-decoder bias [B, 1, 1, S])."""
        bias = masks.padding_bias(inputs)
        x = self.embed_with_timing(inputs, self.input_dropout, training)
        return self.encoder(x, bias, training=training), bias

    def decode(
        self,
        targets: tf.Tensor,
        encoded: tf.Tensor,
        encoder_bias: tf.Tensor,
        training: bool = False,
    ) -> tf.Tensor:
        """Teacher-forced decoding: targets [B, T] -> float32 logits [B, T, V]."""
        decoder_inputs = shift_right(targets)
        x = self.embed_with_timing(decoder_inputs, self.target_dropout, training)
        self_bias = masks.causal_bias(tf.shape(targets)[1])
        x = self.decoder(x, self_bias, encoded, encoder_bias, training=training)
        return self.embedding.logits(x)

    def init_cache(
        self, encoded: tf.Tensor, encoder_bias: tf.Tensor, max_length: int | None
    ) -> dict:
        """Decoding state for up to max_length target positions (None: caches
        that grow by one position per step, for loops with shape invariants,
        `attention.shape_invariants`; not for XLA): the decoder
        stack's caches, with the encoder bias among the static entries
        (sequences.STATIC_CACHE). Every entry is batch-major, so beam search
        can gather it by beam.
        """
        cache = self.decoder.initial_cache(encoded, max_length)
        cache[sequences.STATIC_CACHE]["encoder_bias"] = encoder_bias
        return cache

    def embed_step(self, ids: tf.Tensor, index: tf.Tensor) -> tf.Tensor:
        """Decoder input ids [B] at position `index` -> [B, 1, C], with its timing signal."""
        x = self.embedding.embed(ids[:, tf.newaxis])  # [B, 1, C]
        signal = embedding.timing_signal(1, x.shape[-1], start=index)  # [1, 1, C]
        return x + tf.cast(signal, x.dtype)

    def decode_step(self, ids: tf.Tensor, index: tf.Tensor, cache: dict) -> tuple[tf.Tensor, dict]:
        """The decoder input ids [B] at position `index` -> (float32 logits [B, V], cache).

        Position 0's input is PAD (0), as in teacher forcing; the logits are
        the prediction for the target at `index`. The decoder stack runs
        the step (its blocks, or its recurrence) on its own cache entries.
        """
        x = self.embed_step(ids, index)
        encoder_bias = cache[sequences.STATIC_CACHE]["encoder_bias"]
        x, cache = self.decoder.decode_step(x, index, cache, encoder_bias)
        return self.embedding.logits(x)[:, 0], cache

    def call(self, features, training=False):
        return self.forward(features, training=training)[0]

    def forward(self, features, training=False) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """Logits [B, T, V] and auxiliary outputs (none for the Transformer).

        The trainer calls this (`call` returns its logits): an auxiliary
        "loss" is added to the training loss and every other entry is a
        scalar metric it logs.
        """
        encoded, bias = self.encode(features["inputs"], training=training)
        return self.decode(features["targets"], encoded, bias, training=training), {}


def timing_signal_like(x: tf.Tensor) -> tf.Tensor:
    """The timing signal for positions 0..L-1 of x [B, L, C] -> [1, L, C]."""
    return embedding.timing_signal(tf.shape(x)[1], x.shape[-1])
