"""Transformer hparams and its named sets (tensor2tensor's names)."""

import dataclasses
import math
from typing import ClassVar

from t2t_lite import hparams as hparams_lib
from t2t_lite import registry, sequences

POSITION_STARTS = ("none", "random", "random_per_step", "randomized")
POSITION_EVALS = ("consecutive", "spread")
# Decoder positions tied to the source positions they read (position coupling,
# Cho et al. 2024): "none", target t at position t; "reverse", target t < n at
# n - 1 - t for a source of n symbols (the source symbol it copies) and the EOS
# target at n (the source's EOS); "addition", source positions restart at 0
# after each position_separator_id token, so with little-endian numbers the
# digits of equal significance, and the target digit they sum to, share a
# position (McLeish et al. 2024's per-number index, Cho et al.'s coupling).
POSITION_COUPLINGS = ("none", "reverse", "addition")
# Upper bounds far past any published setting (transformer_big: 6 layers, 4,096
# tokens per batch; the deepest Transformers: ~1,000 layers): a value above one
# is a typo, and building or batching it would grow memory for minutes before
# failing. Each is refused with one line instead.
POSITION_EMBEDDINGS = ("sinusoid", "learned", "none")
LIMITS = {
    "hidden_size": 2**16,
    "filter_size": 2**18,
    "num_heads": 2**10,
    "num_hidden_layers": 2**10,
    "num_encoder_layers": 2**10,
    "num_decoder_layers": 2**10,
    "batch_size": 2**22,
    "max_length": 2**20,
}


@dataclasses.dataclass(frozen=True)
class TransformerHParams:
    """Transformer hyperparameters; field names follow tensor2tensor."""

    # Keys added after runs were written without them: the value each had then.
    KEYS_ADDED: ClassVar[dict] = {
        "length_bucket_step": 2.0,
        "learning_rate_decay_steps": 0,
        "input_word_dropout": 0.0,
    }

    hidden_size: int = 512
    filter_size: int = 2048
    num_heads: int = 8
    num_hidden_layers: int = 6
    # 0 means "use num_hidden_layers", as in tensor2tensor.
    num_encoder_layers: int = 0
    num_decoder_layers: int = 0
    # "pre": x + f(norm(x)) with a final norm (tensor2tensor);
    # "post": norm(x + f(x)) (the paper).
    norm_position: str = "pre"
    layer_prepostprocess_dropout: float = 0.1
    attention_dropout: float = 0.1
    relu_dropout: float = 0.1
    label_smoothing: float = 0.1
    # lr = constant * min(1, step/warmup) * rsqrt(max(step, warmup)) * rsqrt(hidden_size)
    learning_rate_constant: float = 2.0
    learning_rate_warmup_steps: int = 8000
    # tensor2tensor's linear_decay: over the last this many steps of
    # --train_steps the rate falls linearly towards 0 (0: off).
    learning_rate_decay_steps: int = 0
    optimizer_adam_beta1: float = 0.9
    optimizer_adam_beta2: float = 0.997
    optimizer_adam_epsilon: float = 1e-9
    clip_grad_norm: float = 0.0  # 0: no clipping
    # Training examples longer than this (inputs or targets, EOS included) are dropped.
    max_length: int = 256
    # Tokens per batch (per replica), padding included.
    batch_size: int = 4096
    # Length buckets' growth (tensor2tensor's name): padded lengths 8, then each
    # the last times this, at least one more (sequences.bucket_lengths); 2 doubles.
    length_bucket_step: float = sequences.LENGTH_BUCKET_STEP
    # A length curriculum (0: off): at training step t, examples longer than
    # curriculum_start_length + t // curriculum_steps_per_length (inputs or
    # targets, EOS included, as max_length measures them) are skipped, so
    # training starts on the shortest examples and admits one position more
    # every curriculum_steps_per_length steps.
    curriculum_start_length: int = 0
    curriculum_steps_per_length: int = 0
    # In training, positions start at a random offset in [0, position_start_max)
    # (0: the batch's source length, as in tensor2tensor): "random", one offset
    # per batch shared by encoder and decoder; "random_per_step",
    # tensor2tensor's UT offsets, a fresh one per stack (and, in the UT, per
    # recurrence step); "randomized", randomized positions (Ruoss et al. 2023):
    # each example's positions are a sorted random subset of
    # [0, position_start_max), so order is kept and the distances between
    # positions range as far as the longest test input's (coupled positions
    # map through the same subset). See positions.Policy.starts.
    position_start_index: str = "none"
    position_start_max: int = 0
    # Evaluation's positions after randomized training: "consecutive" (0, 1, 2,
    # ...), or "spread" like training's draws (Ruoss et al. draw them at test
    # time too): index k of a source of n positions at floor(k * max / n), for
    # encoder and decoder alike; deterministic, so cached decoding stays exact.
    position_eval: str = "consecutive"
    # "reverse": decoder position t < n is n - 1 - t and EOS's is n (plus the offset),
    # n the source's symbol count, in training and evaluation alike; see
    # positions.Policy.decoder.
    position_coupling: str = "none"
    # "addition": the source token id after which positions restart (the
    # algorithmic addition problems' "+", their separator_id).
    position_separator_id: int = -1
    # The Transformer's position signal is added at the input only (False, the
    # paper's); True adds it again before every layer, as the UT adds it before
    # every recurrence step (Transformer only; see transformer_layers.Stack).
    position_every_layer: bool = False
    # Width of the attention's query and key projections (tensor2tensor's name;
    # 0: hidden_size): per head num_heads divides it into d_k, values keep
    # hidden_size / num_heads (the paper's Table 3 (B)).
    attention_key_channels: int = 0
    # Scalable softmax (Nakanishi 2025; 0: off): each head's attention logits are
    # multiplied by s_h * log(n), n the keys its query sees (padding and future
    # positions excluded), s_h learned and initialised to 1 / log(L): the
    # scale is 1 at n = L. A longer input than training's then sharpens the
    # attention as much as it widens it, instead of flattening it.
    attention_length_scale: int = 0
    # False: the factor is max(1, log(n) / log(L)), fixed (log-length scaling):
    # attention is the plain softmax up to L keys and sharpens past them, so a
    # run trains exactly as without it and only longer inputs see a change.
    attention_length_scale_learned: bool = True
    # Relative positions in self-attention (Shaw et al. 2018; tensor2tensor's
    # transformer_relative): k > 0 learns one key and one value vector per
    # distance in [-k, k] (farther ones clipped to +-k), so attention can pick
    # "the previous position" the same way at every position and length; 0: off.
    max_relative_position: int = 0
    # "sinusoid" (the paper's timing signal) or "learned": a trained table of
    # max_length position vectors (Table 3 (E); later positions read its last row);
    # "none": no position signal (order only through the decoder's causal mask).
    position_embedding: str = "sinusoid"
    # The encoder's self-attention sees only earlier source positions (and its
    # own), as a decoder-only looped model does (Fan et al. 2025); with
    # position_embedding=none that mask is the only order the encoder has.
    causal_encoder: bool = False
    # An auxiliary loss on the encoder's positions (0: off): the encoder's
    # output at each input position, through the softmax, predicts that
    # position's label (the problem's `input_labels`, e.g. the state reached
    # so far), weighted by this against the targets' loss (a mean per label).
    input_label_loss_weight: float = 0.0
    # Word dropout (Iyyer et al. 2015; 0: off): in training, each input token
    # is replaced by the unknown token (sequences.UNKNOWN_ID, word and subword
    # vocabularies' [UNK]) with this probability, so a model over a small
    # treebank learns to read a word from its context, as it must read the
    # words it never saw. Token inputs only.
    input_word_dropout: float = 0.0
    # One matrix for source embedding, target embedding and softmax (the paper's);
    # False: three (tensor2tensor's name).
    shared_embedding_and_softmax_weights: bool = True

    def __post_init__(self):
        require = hparams_lib.require
        for key, limit in LIMITS.items():
            require(
                getattr(self, key) <= limit,
                key,
                f"must be <= {limit:,}, got {getattr(self, key):,}",
            )
        require(self.hidden_size > 0, "hidden_size", "must be positive")
        require(
            self.num_heads > 0 and self.hidden_size % self.num_heads == 0,
            "num_heads, hidden_size",
            f"num_heads={self.num_heads} must divide hidden_size={self.hidden_size}",
        )
        require(
            self.attention_key_channels >= 0
            and self.attention_key_channels % self.num_heads == 0
            and self.attention_key_channels <= LIMITS["hidden_size"],
            "attention_key_channels",
            f"must be 0 (hidden_size) or a multiple of num_heads={self.num_heads} up to "
            f"{LIMITS['hidden_size']:,}, got {self.attention_key_channels}",
        )
        require(
            self.attention_length_scale == 0 or 2 <= self.attention_length_scale <= 10**6,
            "attention_length_scale",
            f"must be 0 (off) or a length L in 2..1,000,000 (the scale is 1 at L keys), "
            f"got {self.attention_length_scale}",
        )
        require(
            0 <= self.max_relative_position <= LIMITS["max_length"],
            "max_relative_position",
            f"must be 0 (off) or a distance up to {LIMITS['max_length']:,}, "
            f"got {self.max_relative_position}",
        )
        require(
            self.position_embedding in POSITION_EMBEDDINGS,
            "position_embedding",
            f"must be one of {POSITION_EMBEDDINGS}, got {self.position_embedding!r}",
        )
        require(0.0 <= self.input_word_dropout < 1.0, "input_word_dropout", "must be in [0, 1)")
        require(self.filter_size > 0, "filter_size", "must be positive")
        require(self.num_hidden_layers > 0, "num_hidden_layers", "must be positive")
        require(
            self.num_encoder_layers >= 0 and self.num_decoder_layers >= 0,
            "num_encoder_layers, num_decoder_layers",
            "must be >= 0 (0 means num_hidden_layers)",
        )
        require(
            self.position_start_index in POSITION_STARTS,
            "position_start_index",
            f"must be one of {POSITION_STARTS}, got {self.position_start_index!r}",
        )
        require(self.position_start_max >= 0, "position_start_max", "must be >= 0")
        require(
            self.position_start_index != "randomized" or self.position_start_max > 0,
            "position_start_index, position_start_max",
            "position_start_index=randomized draws positions from [0, position_start_max): "
            "set position_start_max to at least the longest input to be read (e.g. 400)",
        )
        require(
            self.position_eval in POSITION_EVALS,
            "position_eval",
            f"must be one of {POSITION_EVALS}, got {self.position_eval!r}",
        )
        require(
            self.position_eval == "consecutive" or self.position_start_index == "randomized",
            "position_eval, position_start_index",
            "position_eval=spread spreads evaluation's positions as randomized training "
            "draws them: it needs position_start_index=randomized",
        )
        require(
            self.position_coupling in POSITION_COUPLINGS,
            "position_coupling",
            f"must be one of {POSITION_COUPLINGS}, got {self.position_coupling!r}",
        )
        require(
            self.position_coupling == "none" or self.position_start_index != "random_per_step",
            "position_coupling, position_start_index",
            "coupled positions need one offset shared by encoder and decoder "
            "(position_start_index=none, random or randomized), not random_per_step",
        )
        require(
            (self.position_coupling == "addition") == (self.position_separator_id >= 0),
            "position_coupling, position_separator_id",
            "position_coupling=addition needs position_separator_id >= 0 (the separator "
            "token's id), and only it takes one",
        )
        require(
            self.norm_position in ("pre", "post"),
            "norm_position",
            f"must be 'pre' or 'post', got {self.norm_position!r}",
        )
        for key in (
            "layer_prepostprocess_dropout",
            "attention_dropout",
            "relu_dropout",
            "label_smoothing",
        ):
            require(0.0 <= getattr(self, key) < 1.0, key, "must be in [0, 1)")
        require(
            math.isfinite(self.learning_rate_constant) and self.learning_rate_constant > 0,
            "learning_rate_constant",
            f"must be a positive finite number, got {self.learning_rate_constant}",
        )
        require(
            math.isfinite(self.input_label_loss_weight) and self.input_label_loss_weight >= 0,
            "input_label_loss_weight",
            f"must be >= 0 and finite (0: off), got {self.input_label_loss_weight}",
        )
        require(
            math.isfinite(self.clip_grad_norm) and self.clip_grad_norm >= 0,
            "clip_grad_norm",
            f"must be >= 0 and finite (0: no clipping), got {self.clip_grad_norm}",
        )
        for key in ("optimizer_adam_beta1", "optimizer_adam_beta2"):
            require(0.0 <= getattr(self, key) < 1.0, key, "must be in [0, 1)")
        require(
            0.0 < self.optimizer_adam_epsilon < 1.0, "optimizer_adam_epsilon", "must be in (0, 1)"
        )
        for key in ("learning_rate_warmup_steps", "learning_rate_decay_steps"):
            require(getattr(self, key) >= 0, key, "must be >= 0")
        require(self.max_length >= 2, "max_length", "must be >= 2 (a symbol and EOS)")
        require(
            1.0 <= self.length_bucket_step <= 1024.0,
            "length_bucket_step",
            f"must be in [1, 1024] (1.1: fine buckets, 2: doubling), got {self.length_bucket_step}",
        )
        require(
            self.curriculum_start_length == 0
            or (2 <= self.curriculum_start_length and self.curriculum_steps_per_length > 0),
            "curriculum_start_length, curriculum_steps_per_length",
            "a curriculum needs a start length >= 2 (a symbol and EOS) and steps per "
            f"length > 0, got {self.curriculum_start_length} and "
            f"{self.curriculum_steps_per_length}",
        )
        require(
            self.batch_size >= self.max_length,
            "batch_size, max_length",
            f"a batch of {self.batch_size} tokens cannot hold one example of "
            f"max_length={self.max_length}",
        )

    @property
    def encoder_layers(self) -> int:
        return self.num_encoder_layers or self.num_hidden_layers

    @property
    def decoder_layers(self) -> int:
        return self.num_decoder_layers or self.num_hidden_layers


@registry.HPARAMS.register("transformer_base")
def transformer_base() -> TransformerHParams:
    """The paper's base model (N=6, d=512, ff=2048, h=8), pre-norm as in tensor2tensor."""
    return TransformerHParams()


@registry.HPARAMS.register("transformer_base_v1")
def transformer_base_v1() -> TransformerHParams:
    """The paper exactly: post-norm, residual dropout only, warmup 4000, beta2 0.98."""
    return dataclasses.replace(
        transformer_base(),
        norm_position="post",
        attention_dropout=0.0,
        relu_dropout=0.0,
        learning_rate_constant=1.0,
        learning_rate_warmup_steps=4000,
        optimizer_adam_beta2=0.98,
    )


@registry.HPARAMS.register("transformer_big")
def transformer_big() -> TransformerHParams:
    """The paper's big model: d=1024, ff=4096, h=16, dropout 0.3."""
    return dataclasses.replace(
        transformer_base(),
        hidden_size=1024,
        filter_size=4096,
        num_heads=16,
        layer_prepostprocess_dropout=0.3,
    )


@registry.HPARAMS.register("transformer_small")
def transformer_small() -> TransformerHParams:
    """tensor2tensor's small set: 2 layers, d=256, ff=1024, h=4."""
    return dataclasses.replace(
        transformer_base(), num_hidden_layers=2, hidden_size=256, filter_size=1024, num_heads=4
    )


@registry.HPARAMS.register("transformer_tiny")
def transformer_tiny() -> TransformerHParams:
    """tensor2tensor's tiny set: 2 layers, d=128, ff=512, h=4."""
    return dataclasses.replace(
        transformer_base(), num_hidden_layers=2, hidden_size=128, filter_size=512, num_heads=4
    )


@registry.HPARAMS.register("transformer_test")
def transformer_test() -> TransformerHParams:
    """Test-sized: 2 layers, d=16, ff=32, h=2, no dropout, small batches."""
    return dataclasses.replace(
        transformer_base(),
        num_hidden_layers=2,
        hidden_size=16,
        filter_size=32,
        num_heads=2,
        layer_prepostprocess_dropout=0.0,
        attention_dropout=0.0,
        relu_dropout=0.0,
        learning_rate_warmup_steps=100,
        max_length=64,
        batch_size=256,
    )


@registry.HPARAMS.register("transformer_algorithmic_tiny")
def transformer_algorithmic_tiny() -> TransformerHParams:
    """transformer_tiny tuned to learn the algorithmic problems in minutes on a CPU.

    No dropout, a short warmup with constant 1, and 2048-token batches
    (lengths 1..40 plus EOS fit max_length 48) in doubling length buckets,
    with which the algorithmic tables were measured.
    """
    return dataclasses.replace(
        transformer_tiny(),
        layer_prepostprocess_dropout=0.0,
        attention_dropout=0.0,
        relu_dropout=0.0,
        learning_rate_constant=1.0,
        learning_rate_warmup_steps=400,
        max_length=48,
        batch_size=2048,
        length_bucket_step=2.0,
    )


@registry.HPARAMS.register("transformer_babi_tiny")
def transformer_babi_tiny() -> TransformerHParams:
    """bAbI at CPU scale: transformer_tiny's dimensions (d=128, 2 layers).

    Stories of up to 51 facts (the question included) are up to 664 tokens
    long; the encoder sees one position per fact. Learning-rate constant
    0.5, chosen on task 2's dev split: with 1.0 the UT stayed on the answer
    prior's plateau for 2,000 steps (docs/babi.md). Doubling length buckets,
    with which the bAbI tables were measured.
    """
    return dataclasses.replace(
        transformer_tiny(),
        learning_rate_constant=0.5,
        learning_rate_warmup_steps=400,
        max_length=664,
        batch_size=4096,
        length_bucket_step=2.0,
    )


@registry.HPARAMS.register("transformer_parsing")
def transformer_parsing() -> TransformerHParams:
    """The Transformer paper's parsing model (section 6.3): 4 layers, d_model 1024
    (ff 4096 and 16 heads, as its big model), dropout 0.3, for WSJ trees of up
    to about 600 linearized symbols."""
    return dataclasses.replace(
        transformer_big(), num_hidden_layers=4, max_length=1024, batch_size=4096
    )


@registry.HPARAMS.register("transformer_parsing_cpu")
def transformer_parsing_cpu() -> TransformerHParams:
    """transformer_parsing at a width a CPU trains in an hour: 4 layers, d=128,
    ff=512, h=4; dropout 0.2, warmup 1,000, 2,048-token batches in doubling
    length buckets. A first budget, not tuned yet (docs/parsing.md)."""
    return dataclasses.replace(
        transformer_parsing(),
        hidden_size=128,
        filter_size=512,
        num_heads=4,
        layer_prepostprocess_dropout=0.2,
        learning_rate_warmup_steps=1000,
        batch_size=2048,
        length_bucket_step=2.0,
    )


@registry.HPARAMS.register("transformer_parsing_small")
def transformer_parsing_small() -> TransformerHParams:
    """The parsing recipe for a small treebank on a CPU: transformer_parsing's
    4 layers at d=256 (ff 1024, h=8), the paper's dropout 0.3 and label
    smoothing 0.1, warmup 1,000, 2,048-token batches (docs/parsing.md)."""
    return dataclasses.replace(
        transformer_parsing(),
        hidden_size=256,
        filter_size=1024,
        num_heads=8,
        learning_rate_warmup_steps=1000,
        batch_size=2048,
        length_bucket_step=2.0,
    )


@registry.HPARAMS.register("transformer_parsing_tagger")
def transformer_parsing_tagger() -> TransformerHParams:
    """The parsing recipe as a tagger (model transformer_encoder, problem
    parsing_from_files_labels: one label per word): transformer_parsing_small's
    width (d=256, ff 1024, h=8), dropout 0.3 and label smoothing 0.1, in an
    encoder of 4 layers, with word dropout 0.2 (chosen on dev against none and
    against attention and ReLU dropout 0.3: docs/parsing.md, round 4)."""
    return dataclasses.replace(transformer_parsing_small(), input_word_dropout=0.2)
