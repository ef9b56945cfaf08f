"""The Universal Transformer (Dehghani et al., 2019), with or without ACT."""

import dataclasses

import keras
import tensorflow as tf
from keras import ops

from t2t_lite import registry
from t2t_lite.layers import act, facts, masks, transformer_layers, universal, wavefront
from t2t_lite.models import input_labels, transformer, universal_transformer_hparams

UTHParams = universal_transformer_hparams.UniversalTransformerHParams


@registry.MODELS.register("universal_transformer")
@keras.saving.register_keras_serializable(package="t2t_lite")
class UniversalTransformer(transformer.Transformer):
    """Encoder and decoder each apply one shared block recurrently.

    recurrence_type "basic" applies it num_rec_steps times; "act" lets ACT
    decide per position, up to act_max_steps, and adds the ponder cost
    act_loss_weight * (mean N + R over non-pad positions) of the encoder and
    of the decoder to the training loss (`forward`'s auxiliary "loss").
    """

    hparams_class = UTHParams
    always_has_seed_generator = True  # every UT checkpoint holds it

    def __init__(self, hparams: UTHParams, vocab_size: int, input_encoding: str = "tokens", **kw):
        if hparams.length_depth and input_encoding == "none":
            raise ValueError(
                f"rec_steps_per_symbol={hparams.rec_steps_per_symbol} scales the depth with "
                "the input's length, and a decoder-only problem (input_encoding='none') has no input"
            )
        super().__init__(hparams, vocab_size, input_encoding, **kw)

    def block_config(self) -> transformer_layers.BlockConfig:
        return dataclasses.replace(
            super().block_config(), transition=self.hparams.transformer_ffn_type
        )

    def make_stacks(
        self, config: transformer_layers.BlockConfig
    ) -> tuple[keras.layers.Layer, keras.layers.Layer]:
        """One shared encoder block (none when decoder-only) and one shared
        decoder block, each recurrent.

        Sublayer names carry the stack's name: the stacks are applied with a
        callable, outside Keras's __call__, so no name scope does it for them.
        """
        hp = self.hparams
        depth = None
        if hp.length_depth:
            depth = universal.LengthDepth(
                hp.rec_steps_per_symbol,
                hp.rec_steps_offset,
                hp.rec_steps_random,
                hp.max_steps,
                hp.rec_steps_by_position,
                hp.rec_steps_window,
            )
        self.length_depth = depth
        stacks = [None] if not self.has_encoder else []
        blocks = (
            ("encoder", transformer_layers.EncoderBlock, {}),
            ("decoder", transformer_layers.DecoderBlock, {"cross_attention": self.has_encoder}),
        )
        for name, block_class, options in blocks[len(stacks) :]:
            steps, max_steps, stack_depth = hp.num_rec_steps, hp.max_steps, depth
            if name == "decoder" and hp.length_depth and hp.rec_decoder_steps:
                steps = max_steps = hp.rec_decoder_steps  # a fixed decoder (ACT: at most)
                stack_depth = None
            halting = (
                act.AdaptiveComputationTime(
                    max_steps,
                    hp.act_epsilon,
                    hp.act_type,
                    hp.act_halting_bias_init,
                    hp.act_halting_kernel_init,
                    name=f"{name}_act",
                )
                if hp.adaptive
                else None
            )
            stacks.append(
                universal.UniversalStack(
                    block_class(config, name=f"{name}_block", **options),
                    steps,
                    universal.StepSignal(
                        hp.step_timing_signal_type,
                        max_steps,
                        hp.hidden_size,
                        name=f"{name}_step_signal",
                    ),
                    hp.norm_position,
                    halting,
                    name=name,
                    final_norm_name=f"{name}_final_norm",
                    depth=stack_depth,
                    use_positions=hp.position_embedding != "none",
                    input_every_step=hp.rec_input_every_step,
                    state_norm=hp.rec_state_norm,
                )
            )
        return stacks[0], stacks[1]

    def offset_shape(self) -> tuple[int, ...]:
        """Under random_per_step, one offset per recurrence step (see Transformer)."""
        return (self.hparams.max_steps,)

    def encode_with_stats(
        self,
        inputs: tf.Tensor,
        training: bool = False,
        position_start: tf.Tensor | int | None = None,
        jitter: tf.Tensor | None = None,
    ) -> tuple[tf.Tensor, tf.Tensor, act.PonderStats | None]:
        """inputs [B, L] -> (encoded [B, S, C], bias [B, 1, 1, S], ponder stats or None).

        S = L for tokens, the fact count for facts; a decoder-only model
        returns its empty memory and no stats. jitter [B]: training's moves
        of the length-scaled steps (`forward`).
        """
        if not self.has_encoder:
            return (*self.empty_memory(inputs), None)
        position_start = self.position_policy.encoder(inputs, position_start)
        x, nonpadding = self.embed_inputs(inputs, training)  # [B, S, C], [B, S]
        bias = masks.nonpadding_bias(nonpadding)
        x = self.input_dropout(x, training=training)
        lengths = ops.sum(ops.cast(nonpadding, "int32"), 1)  # [B]
        row_steps = self.encoder.row_steps(lengths, jitter, ops.shape(x)[1])  # [B] or [B, S]
        if wavefront.applies(self.encoder, self.hparams.causal_encoder, position_start):
            # The masked loop's outputs, one position at a time (layers/wavefront.py).
            encoded = wavefront.encode(self.encoder, x, bias, row_steps, position_start, training)
            return encoded, bias, None
        self_bias = self.encoder_self_bias(bias)  # the masked loop's [B, 1, S, S] under causal
        mask = nonpadding[..., None]  # [B, S, 1]
        encoded, stats = self.encoder.apply(
            x,
            lambda h: self.encoder.block(h, self_bias, mask, training=training),
            position_start,
            nonpadding,
            training=training,
            row_steps=row_steps,
        )
        return encoded, bias, stats

    def decode_with_stats(
        self,
        targets: tf.Tensor,
        encoded: tf.Tensor,
        encoder_bias: tf.Tensor,
        training: bool = False,
        position_start: tf.Tensor | int | None = None,
        jitter: tf.Tensor | None = None,
    ) -> tuple[tf.Tensor, act.PonderStats | None]:
        """Teacher-forced: targets [B, T] -> (float32 logits [B, T, V], ponder stats or None).

        Target padding is treated as halted; causal attention keeps real
        positions from seeing it.
        """
        position_start = self.position_policy.decoder(
            ops.shape(targets)[1], encoder_bias, position_start
        )
        decoder_inputs = transformer.shift_right(targets)
        self_bias = masks.causal_bias(ops.shape(targets)[1])
        x = self.target_dropout(self.embedding.embed(decoder_inputs), training=training)
        decoded, stats = self.decoder.apply(
            x,
            lambda h: self.decoder.block(h, encoded, self_bias, encoder_bias, training=training),
            position_start,
            masks.padding_mask(targets),
            training=training,
            row_steps=self.decoder.row_steps(universal.source_lengths(encoder_bias), jitter),
        )
        return self.softmax.logits(decoded), stats

    def encode(
        self,
        inputs: tf.Tensor,
        training: bool = False,
        position_start: tf.Tensor | int | None = None,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        encoded, bias, _ = self.encode_with_stats(inputs, training, position_start)
        return encoded, bias

    def decode(
        self,
        targets: tf.Tensor,
        encoded: tf.Tensor,
        encoder_bias: tf.Tensor,
        training: bool = False,
        position_start: tf.Tensor | int | None = None,
    ) -> tf.Tensor:
        return self.decode_with_stats(targets, encoded, encoder_bias, training, position_start)[0]

    def embed_step(self, ids: tf.Tensor, position: tf.Tensor) -> tf.Tensor:
        """Decoder input ids [B] -> [B, 1, C]; the stack adds position and step signals."""
        return self.embedding.embed(ids[:, tf.newaxis])  # [B, 1, C]

    def logits_and_aux(self, features, training=False) -> tuple:
        """Logits [B, T, V]; under ACT also the ponder cost ("loss") and ponder
        metrics; with input labels their loss (added to any ponder cost) and accuracy."""
        encoder_start, decoder_start = self.position_policy.starts(features, training)
        jitter = None
        if training and self.length_depth is not None:  # one draw per row, both stacks
            batch_size = ops.shape(features["targets"])[0]
            jitter = self.length_depth.jitter(batch_size, self.seed_generator)
        encoded, bias, encoder_stats = self.encode_with_stats(
            features["inputs"], training, encoder_start, jitter
        )
        logits, decoder_stats = self.decode_with_stats(
            features["targets"], encoded, bias, training, decoder_start, jitter
        )
        labelled = input_labels.terms(self, features, encoded)
        if decoder_stats is None:
            return logits, labelled
        sides = [("decoder", decoder_stats, masks.padding_mask(features["targets"]))]
        if encoder_stats is not None:
            sides.insert(0, ("encoder", encoder_stats, self.encoder_nonpadding(features["inputs"])))
        return logits, input_labels.merged(self.ponder_aux(sides), labelled)

    def ponder_aux(self, sides: list) -> dict:
        """ACT's auxiliary outputs for (name, stats, nonpadding [B, S]) per stack:
        each one's mean ponder time and step count, and the ponder cost "loss"."""
        aux = {}
        ponder = []
        for name, stats, nonpadding in sides:
            ponder.append(stats.mean_ponder_time(nonpadding))
            aux[f"{name}_ponder_time"] = ponder[-1]
            aux[f"{name}_act_steps"] = ops.cast(stats.steps, "float32")
        aux["loss"] = self.hparams.act_loss_weight * sum(ponder[1:], ponder[0])
        return aux

    def encoder_nonpadding(self, inputs: tf.Tensor) -> tf.Tensor:
        """[B, S] 1.0 at the encoder's real positions (tokens, or facts)."""
        if self.input_encoding == "facts":
            return facts.fact_structure(inputs)[2]
        return masks.padding_mask(inputs)
