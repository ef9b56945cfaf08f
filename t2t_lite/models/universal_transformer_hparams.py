"""Universal Transformer hparams and its named sets (tensor2tensor's names)."""

import dataclasses
import math

from t2t_lite import hparams as hparams_lib
from t2t_lite import registry
from t2t_lite.layers import act, transition, universal
from t2t_lite.models import transformer_hparams

RECURRENCE_TYPES = ("basic", "act")


@dataclasses.dataclass(frozen=True)
class UniversalTransformerHParams(transformer_hparams.TransformerHParams):
    """Transformer hparams plus the recurrence's; names follow tensor2tensor.

    num_hidden_layers is not used: the depth is num_rec_steps ("basic") or
    decided per position by ACT up to act_max_steps ("act").
    """

    num_rec_steps: int = 6
    # "basic": num_rec_steps applications of the shared block; "act": ACT.
    recurrence_type: str = "basic"
    # The transition function: "fc" (position-wise FFN) or "sepconv".
    transformer_ffn_type: str = "fc"
    # "sinusoid" (paper eq. 6-7) or "learned" (an embedding per step).
    step_timing_signal_type: str = "sinusoid"
    # "accumulated": Graves' weighted sum of the states; "basic": the UT paper's
    # listing and tensor2tensor's interpolation (docs/universal_transformer.md).
    act_type: str = "accumulated"
    act_max_steps: int = 12
    act_epsilon: float = 0.01
    act_loss_weight: float = 0.01
    act_halting_bias_init: float = 1.0
    # The halting unit's kernel: "glorot_uniform" (tensor2tensor's default
    # dense initialiser) or "zeros" (every position starts at p = sigmoid(bias),
    # whatever the scale of its state: see act.HALTING_KERNEL_INITS).
    act_halting_kernel_init: str = "glorot_uniform"
    # Depth that grows with the input (Fan et al. 2025's looped transformers):
    # with rec_steps_per_symbol a > 0, a source of n encoder positions (EOS
    # included) gets ceil(a * n) + rec_steps_offset steps in both stacks
    # (under ACT: that many at most), capped at num_rec_steps (act_max_steps
    # under ACT), which then sizes the loops and the decoding cache. In
    # training each example's count moves by a uniform draw in
    # [-rec_steps_random, rec_steps_random] (at least 1 step). See
    # universal.LengthDepth.
    rec_steps_per_symbol: float = 0.0
    rec_steps_offset: int = 0
    rec_steps_random: int = 0
    # With rec_steps_per_symbol > 0: 0, the decoder's steps grow too; k > 0, the
    # decoder runs k steps (under ACT: at most k) whatever the input's length.
    rec_decoder_steps: int = 0
    # With rec_steps_per_symbol > 0 and a fixed decoder (rec_decoder_steps > 0),
    # fixed steps only: encoder position i (0-based) takes the steps a source of
    # i + 1 positions gets, ceil(a (i + 1)) + b (moved by its row's draw), and
    # keeps its state after them; with a causal encoder each position's output
    # is then the one its prefix alone gives, whatever follows it.
    rec_steps_by_position: bool = False
    # With rec_steps_by_position, w > 0: position i runs only the last w of
    # its steps and holds its input before them, so that a causal encoder's
    # positions finish one after another, each from its left neighbours'
    # finished states (a wavefront along the positions); 0: all of its steps.
    rec_steps_window: int = 0
    # Re-add the stack's input (the embedded tokens) before every step, as
    # looped transformers inject their input at every loop.
    rec_input_every_step: bool = False
    # Layer-normalize the state carried into every step, and the re-added input
    # (rec_input_every_step) with a norm of its own (pre-norm blocks only): a
    # pre-norm step adds its input and signals to an unnormalized state, whose
    # norm then grows with t, so that step t's update moves it by about 1/t
    # (docs/length_depth.md, round 13); normalized, it keeps one scale at every
    # step, and the input's own norm keeps it from drowning the state.
    rec_state_norm: bool = False

    def __post_init__(self):
        super().__post_init__()
        require = hparams_lib.require
        require(self.num_rec_steps >= 1, "num_rec_steps", "must be >= 1")
        for key in ("num_rec_steps", "act_max_steps"):  # the stacks' depth, as layers
            limit = transformer_hparams.LIMITS["num_hidden_layers"]
            require(getattr(self, key) <= limit, key, f"must be <= {limit:,}")
        require(
            self.position_embedding in ("sinusoid", "none"),
            "position_embedding",
            "must be sinusoid or none: the UT's positions are its per-step signals",
        )
        require(
            math.isfinite(self.rec_steps_per_symbol) and 0.0 <= self.rec_steps_per_symbol <= 64.0,
            "rec_steps_per_symbol",
            "must be in [0, 64] (0: a fixed number of steps)",
        )
        require(
            self.length_depth or (self.rec_steps_offset == 0 and self.rec_steps_random == 0),
            "rec_steps_offset, rec_steps_random",
            "apply only with rec_steps_per_symbol > 0",
        )
        require(
            abs(self.rec_steps_offset) <= self.max_steps,
            "rec_steps_offset",
            f"must be within the step cap ({self.max_steps}) either side of 0",
        )
        require(
            self.length_depth or self.rec_decoder_steps == 0,
            "rec_decoder_steps",
            "applies only with rec_steps_per_symbol > 0",
        )
        require(
            0 <= self.rec_decoder_steps <= self.max_steps,
            "rec_decoder_steps",
            f"must be in [0, {self.max_steps}] (the step cap)",
        )
        require(
            not self.rec_steps_by_position
            or (self.length_depth and self.rec_decoder_steps > 0 and not self.adaptive),
            "rec_steps_by_position",
            "needs rec_steps_per_symbol > 0 and a fixed decoder (rec_decoder_steps > 0), "
            "and fixed steps (recurrence_type=basic)",
        )
        require(
            self.rec_steps_window == 0
            or (self.rec_steps_by_position and 0 < self.rec_steps_window <= self.max_steps),
            "rec_steps_window",
            f"applies only with rec_steps_by_position=True, in [1, {self.max_steps}] (0: off)",
        )
        require(
            not (self.rec_state_norm and self.norm_position == "post"),
            "rec_state_norm",
            "applies only with norm_position=pre (a post-norm block ends with a norm)",
        )
        require(
            0 <= self.rec_steps_random <= self.max_steps,
            "rec_steps_random",
            f"must be in [0, {self.max_steps}] (the step cap)",
        )
        require(
            not self.position_every_layer,
            "position_every_layer",
            "is a Transformer option: the UT adds positions before every step already",
        )
        require(
            self.recurrence_type in RECURRENCE_TYPES,
            "recurrence_type",
            f"must be one of {RECURRENCE_TYPES}, got {self.recurrence_type!r}",
        )
        require(
            self.transformer_ffn_type in transition.TRANSITIONS,
            "transformer_ffn_type",
            f"must be one of {transition.TRANSITIONS}, got {self.transformer_ffn_type!r}",
        )
        require(
            self.step_timing_signal_type in universal.STEP_SIGNALS,
            "step_timing_signal_type",
            f"must be one of {universal.STEP_SIGNALS}, got {self.step_timing_signal_type!r}",
        )
        require(
            self.act_type in act.ACT_TYPES,
            "act_type",
            f"must be one of {act.ACT_TYPES}, got {self.act_type!r}",
        )
        require(self.act_max_steps >= 1, "act_max_steps", "must be >= 1")
        require(0.0 < self.act_epsilon < 1.0, "act_epsilon", "must be in (0, 1)")
        require(
            math.isfinite(self.act_loss_weight) and self.act_loss_weight >= 0.0,
            "act_loss_weight",
            "must be >= 0 and finite",
        )
        require(
            self.act_halting_kernel_init in act.HALTING_KERNEL_INITS,
            "act_halting_kernel_init",
            f"must be one of {act.HALTING_KERNEL_INITS}, got {self.act_halting_kernel_init!r}",
        )
        require(
            math.isfinite(self.act_halting_bias_init),
            "act_halting_bias_init",
            "must be finite",
        )

    @property
    def adaptive(self) -> bool:
        return self.recurrence_type == "act"

    @property
    def length_depth(self) -> bool:
        """Whether the number of steps grows with the input (rec_steps_per_symbol > 0)."""
        return self.rec_steps_per_symbol > 0.0

    @property
    def max_steps(self) -> int:
        """The most steps a position can take (sizes the step signal)."""
        return self.act_max_steps if self.adaptive else self.num_rec_steps


def _universal(base: transformer_hparams.TransformerHParams, **changes):
    """Carries a Transformer set's fields into UT hparams, then applies changes."""
    return UniversalTransformerHParams(**{**hparams_lib.to_dict(base), **changes})


def _adaptive(hp: UniversalTransformerHParams) -> UniversalTransformerHParams:
    # At most twice the fixed depth (tensor2tensor's base ratio). Its tiny set
    # derives act_max_steps from num_hidden_layers and gets 4 against the
    # fixed tiny set's 8 steps; here it is 16.
    return dataclasses.replace(hp, recurrence_type="act", act_max_steps=2 * hp.num_rec_steps)


@registry.HPARAMS.register("universal_transformer_base")
def universal_transformer_base() -> UniversalTransformerHParams:
    """transformer_base widened to d=1024, ff=4096, h=16 (one shared block), 6 steps."""
    return _universal(
        transformer_hparams.transformer_base(),
        hidden_size=1024,
        filter_size=4096,
        num_heads=16,
        layer_prepostprocess_dropout=0.3,
        num_rec_steps=6,
    )


@registry.HPARAMS.register("universal_transformer_small")
def universal_transformer_small() -> UniversalTransformerHParams:
    """transformer_base's dimensions (d=512), 6 steps."""
    return _universal(transformer_hparams.transformer_base(), num_rec_steps=6)


@registry.HPARAMS.register("universal_transformer_tiny")
def universal_transformer_tiny() -> UniversalTransformerHParams:
    """transformer_tiny's dimensions (d=128, ff=512, h=4), 8 steps."""
    return _universal(transformer_hparams.transformer_tiny(), num_rec_steps=8)


@registry.HPARAMS.register("universal_transformer_parsing_cpu")
def universal_transformer_parsing_cpu() -> UniversalTransformerHParams:
    """transformer_parsing_cpu's block (d=128, ff=512, h=4) shared over 4 steps:
    the Transformer's 4 layers as recurrence steps, a quarter of its weights."""
    return _universal(transformer_hparams.transformer_parsing_cpu(), num_rec_steps=4)


@registry.HPARAMS.register("universal_transformer_parsing_tagger")
def universal_transformer_parsing_tagger() -> UniversalTransformerHParams:
    """transformer_parsing_tagger's block (d=256, ff 1024, h=8, dropout 0.3,
    word dropout 0.2) shared over 4 steps (model universal_transformer_encoder): the tagger's
    4 layers as recurrence steps, at about the same cost a step. The parsing
    recipe (3,000 steps, the last 5 checkpoints averaged): above the Transformer
    tagger on dev on every seed (docs/parsing.md, round 5)."""
    return _universal(transformer_hparams.transformer_parsing_tagger(), num_rec_steps=4)


@registry.HPARAMS.register("universal_transformer_sepconv_base")
def universal_transformer_sepconv_base() -> UniversalTransformerHParams:
    """universal_transformer_base with the depthwise-separable convolution transition."""
    return dataclasses.replace(universal_transformer_base(), transformer_ffn_type="sepconv")


@registry.HPARAMS.register("universal_transformer_sepconv_tiny")
def universal_transformer_sepconv_tiny() -> UniversalTransformerHParams:
    """universal_transformer_tiny with the depthwise-separable convolution transition."""
    return dataclasses.replace(universal_transformer_tiny(), transformer_ffn_type="sepconv")


@registry.HPARAMS.register("adaptive_universal_transformer_base")
def adaptive_universal_transformer_base() -> UniversalTransformerHParams:
    """universal_transformer_base under ACT, at most 12 steps."""
    return _adaptive(universal_transformer_base())


@registry.HPARAMS.register("adaptive_universal_transformer_small")
def adaptive_universal_transformer_small() -> UniversalTransformerHParams:
    """universal_transformer_small under ACT, at most 12 steps."""
    return _adaptive(universal_transformer_small())


@registry.HPARAMS.register("adaptive_universal_transformer_tiny")
def adaptive_universal_transformer_tiny() -> UniversalTransformerHParams:
    """universal_transformer_tiny under ACT, at most 16 steps."""
    return _adaptive(universal_transformer_tiny())


@registry.HPARAMS.register("universal_transformer_test")
def universal_transformer_test() -> UniversalTransformerHParams:
    """Test-sized: transformer_test's dimensions, 3 steps."""
    return _universal(transformer_hparams.transformer_test(), num_rec_steps=3)


@registry.HPARAMS.register("adaptive_universal_transformer_test")
def adaptive_universal_transformer_test() -> UniversalTransformerHParams:
    """Test-sized under ACT, at most 4 steps."""
    return dataclasses.replace(universal_transformer_test(), recurrence_type="act", act_max_steps=4)


@registry.HPARAMS.register("universal_transformer_algorithmic_tiny")
def universal_transformer_algorithmic_tiny() -> UniversalTransformerHParams:
    """A UT that learns the algorithmic problems in minutes on a CPU.

    transformer_algorithmic_tiny's training settings, d=64, ff=256, h=4 and
    4 steps (about the Transformer set's step time on a CPU). The paper's
    random position offsets (position_start_index=random) are left off: at
    this scale they keep the model from learning reverse in 1,000 steps.
    """
    return _universal(
        transformer_hparams.transformer_algorithmic_tiny(),
        hidden_size=64,
        filter_size=256,
        num_rec_steps=4,
    )


@registry.HPARAMS.register("adaptive_universal_transformer_algorithmic_tiny")
def adaptive_universal_transformer_algorithmic_tiny() -> UniversalTransformerHParams:
    """universal_transformer_algorithmic_tiny under ACT, at most 8 steps."""
    return _adaptive(universal_transformer_algorithmic_tiny())


@registry.HPARAMS.register("universal_transformer_babi_tiny")
def universal_transformer_babi_tiny() -> UniversalTransformerHParams:
    """transformer_babi_tiny's settings, one shared block applied 4 times."""
    return _universal(transformer_hparams.transformer_babi_tiny(), num_rec_steps=4)


@registry.HPARAMS.register("adaptive_universal_transformer_babi_tiny")
def adaptive_universal_transformer_babi_tiny() -> UniversalTransformerHParams:
    """universal_transformer_babi_tiny under ACT, at most 8 steps.

    A zero halting kernel: with the dense default, fact sums saturate the
    halting unit at initialisation. Ponder cost weight 0.001: tied with 0.01
    on dev (docs/babi.md, runs A1-A3) and the encoder still ponders.
    """
    return dataclasses.replace(
        _adaptive(universal_transformer_babi_tiny()),
        act_halting_kernel_init="zeros",
        act_loss_weight=0.001,
    )
