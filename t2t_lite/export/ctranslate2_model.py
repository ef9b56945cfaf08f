"""A trained `transformer` as a CTranslate2 model directory (`t2t-export --format=ctranslate2`).

The mapping, layer by layer (Keras kernels are [in, out]; CTranslate2's
linear weights are [out, in]):

- the source embedding, target embedding and output projection (no bias):
  one shared matrix, or three with shared_embedding_and_softmax_weights=False;
  CTranslate2 scales embeddings by sqrt(C) as t2t_lite does; the embedding
  tables' PAD row is zeros, as t2t_lite embeds PAD;
- the timing signal as an explicit position table (tensor2tensor's
  [sin, cos] layout; a learned table's rows, its last repeated past its end)
  of `max_positions` rows, so no engine default is assumed;
- or, with max_relative_position=k and position_embedding=none, no table:
  each self-attention's relative key and value tables ([2k+1, depth], row
  k + clip(j - i, -k, k)), which CTranslate2 indexes as t2t_lite does, the
  cached decoding steps included;
- self-attention: query, key and value fused into one [3C, C] projection;
  encoder-decoder attention: the query, then key and value fused [2C, C];
  CTranslate2 scales queries by 1/sqrt(depth) as t2t_lite does;
- the FFN's two dense layers with their biases, ReLU;
- layer norms with t2t_lite's epsilon; pre-norm with the stacks' final norms,
  or post-norm (LayerNorm(x + f(x))) without;
- the decoder starts from a zero embedding at position 0 (t2t_lite's PAD
  start symbol is embedded as zeros) and EOS is appended to the source.

Only the Transformer maps: the Universal Transformer's recurrence (shared
weights, step signals) and ACT have no CTranslate2 equivalent.
"""

import os
import tempfile

import numpy as np
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.layers import embedding, transformer_layers

MODEL = "transformer"  # the only model family CTranslate2 can run


def _instead(flag: str) -> str:
    """What to do instead, for the program whose `flag` asked for CTranslate2."""
    if flag == "--format":
        return "export it as a SavedModel (--format=saved_model) instead"
    return "decode it with --engine=tensorflow"


def check_mappable(model_name: str, input_encoding: str = "tokens", flag: str = "--format") -> None:
    """Refuses a run whose model CTranslate2 cannot express (naming `flag`)."""
    if input_encoding != "tokens":
        raise ValueError(
            f"{flag}=ctranslate2: the run's inputs are encoded as {input_encoding!r}; only "
            "encoder-decoder Transformers over token sequences map to CTranslate2's "
            f"TransformerSpec; {_instead(flag)}"
        )
    if model_name != MODEL:
        instead = _instead(flag)
        raise ValueError(
            f"{flag}=ctranslate2: the run's model is {model_name!r}; only {MODEL!r} maps to "
            "CTranslate2 (the Universal Transformer's recurrence and ACT have no equivalent "
            f"there); {instead}"
        )


def library(flag: str = "--format"):
    """The ctranslate2 module; without the optional extra, one error naming `flag`."""
    try:
        import ctranslate2
    except ImportError:
        raise ValueError(
            f"{flag}=ctranslate2 needs the ctranslate2 package: pip install 't2t_lite[ctranslate2]'"
        ) from None
    return ctranslate2


def version() -> str:
    return library().__version__


def translate_options(hp) -> dict:
    """Translator.translate_batch options closest to t2t-decode with decode hparams `hp`.

    Exact but for two things CTranslate2 does not offer: its length penalty
    divides by length ** length_penalty (t2t_lite: GNMT's ((5 + length) / 6)
    ** alpha; equal at alpha = 0), and its output limit is one number for the
    batch (t2t_lite: each input's length + extra_length; t2t-decode's engine
    holds each input to its own, `ctranslate2_engine.Ctranslate2Decoder`).
    """
    return {
        "beam_size": hp.beam_size,
        "length_penalty": hp.alpha,
        # EOS is masked for the first min_length symbols in both (0: an empty output).
        "min_decoding_length": hp.min_length,
        "max_input_length": hp.max_source_positions,
        # Symbols, EOS not counted: t2t_lite forces EOS at its last output position.
        "max_decoding_length": hp.max_output_positions - 1,
    }


def _numpy(variable) -> np.ndarray:
    return np.asarray(tf.cast(variable, tf.float32).numpy(), np.float32)


def _embedding_table(layer) -> np.ndarray:
    """[V, C] as CTranslate2 reads it: t2t_lite embeds PAD (a hypothesis may
    pick it before EOS) as zeros, so its row is zeros here, not the softmax's."""
    table = _numpy(layer.weights_matrix).copy()
    table[sequences.PAD_ID] = 0.0
    return table


def _linear(spec, *dense_layers) -> None:
    """One CTranslate2 linear layer from Keras Dense layers fused along outputs."""
    spec.weight = np.concatenate([_numpy(d.kernel).T for d in dense_layers], axis=0)
    biases = [d.bias for d in dense_layers if d.bias is not None]
    if biases:
        spec.bias = np.concatenate([_numpy(b) for b in biases])


def _norm(spec, layer) -> None:
    spec.gamma, spec.beta = _numpy(layer.gamma), _numpy(layer.beta)


def _self_attention(spec, block) -> None:
    attention = block.self_attention
    _norm(spec.layer_norm, block.self_attention_residual.norm)
    _linear(spec.linear[0], attention.query, attention.key, attention.value)
    _linear(spec.linear[1], attention.output_projection)
    if attention.max_relative_position:
        # Shaw et al.'s tables, one row per clipped distance j - i + k, as
        # CTranslate2 indexes them: [2k+1, Dk] and [2k+1, D].
        spec.relative_position_keys = _numpy(attention.relative_keys)
        spec.relative_position_values = _numpy(attention.relative_values)


def _ffn(spec, block) -> None:
    _norm(spec.layer_norm, block.ffn_residual.norm)
    _linear(spec.linear_0, block.ffn.inner)
    _linear(spec.linear_1, block.ffn.outer)


def _inexpressible(hp) -> list[tuple[bool, str]]:
    """(whether the run uses it, what it is) for each option CTranslate2 lacks."""
    coupled = f"position_coupling={hp.position_coupling!r}"
    keys = f"{hp.attention_key_channels} wide and its values {hp.hidden_size}"
    scale = f"attention_length_scale={hp.attention_length_scale}"
    both = f"max_relative_position={hp.max_relative_position} with position_embedding={hp.position_embedding!r}"
    return [
        (hp.position_coupling != "none", f"the run's decoder positions are coupled ({coupled})"),
        (
            hp.position_every_layer,
            "the run adds positions before every layer (position_every_layer=True)",
        ),
        (hp.causal_encoder, "the run's encoder is causal (causal_encoder=True)"),
        (
            hp.attention_key_channels not in (0, hp.hidden_size),
            f"the run's queries and keys are {keys} (attention_key_channels)",
        ),
        (hp.attention_length_scale != 0, f"the run scales attention by the keys seen ({scale})"),
        (
            hp.max_relative_position != 0 and hp.position_embedding != "none",
            f"the run adds absolute positions to its relative ones ({both})",
        ),
    ]


def _position_table(model, max_positions: int) -> np.ndarray:
    """The absolute positions t2t_lite adds, as a table [P, C]."""
    hp = model.hparams
    if hp.position_embedding == "learned":  # past the table: its last row, as in t2t_lite
        return model.positions.signal(max_positions)[0].numpy()
    if hp.position_embedding == "none":  # a table of zeros adds nothing
        return np.zeros([max_positions, hp.hidden_size], np.float32)
    return embedding.timing_signal(max_positions, hp.hidden_size)[0].numpy()


def check_expressible(hp, flag: str = "--format") -> None:
    """Refuses Transformer hparams a CTranslate2 Transformer cannot express (naming `flag`)."""
    for refused, what in _inexpressible(hp):
        if refused:
            raise ValueError(
                f"{flag}=ctranslate2: {what}, which a CTranslate2 Transformer cannot "
                f"express; {_instead(flag)}"
            )


def build_spec(model, tokens: list[str], max_positions: int):
    """The CTranslate2 TransformerSpec of a built t2t_lite Transformer, vocabulary registered."""
    ct2 = library()
    hp = model.hparams
    pre_norm = hp.norm_position == "pre"
    check_expressible(hp)
    if len(tokens) != model.vocab_size or len(set(tokens)) != len(tokens):
        raise ValueError(
            f"the vocabulary has {len(tokens)} tokens ({len(set(tokens))} distinct); "
            f"the model has {model.vocab_size} ids"
        )
    relative = hp.max_relative_position != 0  # then no absolute positions (refused above)
    spec = ct2.specs.TransformerSpec.from_config(
        (hp.encoder_layers, hp.decoder_layers),
        hp.num_heads,
        with_relative_position=relative,
        pre_norm=pre_norm,
    )
    encoder, decoder = spec.encoder, spec.decoder
    encoder.embeddings[0].weight = _embedding_table(model.source_embedding)
    decoder.embeddings.weight = _embedding_table(model.embedding)
    decoder.projection.weight = _numpy(model.softmax.weights_matrix)
    if not relative:
        positions = _position_table(model, max_positions)  # [P, C]
        encoder.position_encodings.encodings = positions
        decoder.position_encodings.encodings = positions
    decoder.start_from_zero_embedding = True
    if pre_norm:
        _norm(encoder.layer_norm, model.encoder.final_norm)
        _norm(decoder.layer_norm, model.decoder.final_norm)
    for layer_spec, block in zip(encoder.layer, model.encoder.blocks, strict=True):
        _self_attention(layer_spec.self_attention, block)
        _ffn(layer_spec.ffn, block)
    for layer_spec, block in zip(decoder.layer, model.decoder.blocks, strict=True):
        _self_attention(layer_spec.self_attention, block)
        cross = block.cross_attention
        _norm(layer_spec.attention.layer_norm, block.cross_attention_residual.norm)
        _linear(layer_spec.attention.linear[0], cross.query)
        _linear(layer_spec.attention.linear[1], cross.key, cross.value)
        _linear(layer_spec.attention.linear[2], cross.output_projection)
        _ffn(layer_spec.ffn, block)
    spec.config.layer_norm_epsilon = transformer_layers.LAYER_NORM_EPSILON
    spec.config.add_source_eos = True
    spec.config.bos_token = tokens[sequences.PAD_ID]
    spec.config.eos_token = tokens[sequences.EOS_ID]
    spec.config.decoder_start_token = tokens[sequences.PAD_ID]
    spec.config.unk_token = tokens[sequences.PAD_ID]
    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tokens)
    spec.validate()
    return spec


def write(model, tokens: list[str], max_positions: int, directory: str) -> list[str]:
    """Writes the CTranslate2 model files into `directory` (any filesystem) -> their names.

    CTranslate2 saves to local disk only, so the files are made in a local
    temporary directory and copied through tf.io.gfile (the caller's
    directory is itself a temporary one, renamed into place when complete).
    """
    spec = build_spec(model, tokens, max_positions)
    with tempfile.TemporaryDirectory(prefix="t2t-ct2-") as local:
        try:
            spec.save(local)
        except OSError as err:  # its own writes name no file (a full disk, EFBIG)
            if err.filename:
                raise
            raise OSError(err.errno, err.strerror, os.path.join(local, "model.bin")) from err
        names = sorted(tf.io.gfile.listdir(local))
        tf.io.gfile.makedirs(directory)
        for name in names:
            tf.io.gfile.copy(os.path.join(local, name), os.path.join(directory, name), True)
    return names
