"""What a comparison compares: the models' entries and the tables they form.

An entry is a display label, a registered model, an hparams set and
overrides; `t2t-compare --models` names entries. Each entry names
the row of the paper's tables (`paper`) it is set beside.
"""

import dataclasses
import math

from t2t_lite.data import problem as problem_lib
from t2t_lite.reproduction.paper import task_of

# Offsets shared by encoder and decoder, below 400: past the 1..200 test positions
# of the length-20 problems, and covering the 1..400 of the length-40 ones.
OFFSETS = "position_start_index=random,position_start_max=400"
# Randomized positions (Ruoss et al. 2023): each training example's positions a
# sorted random subset of [0, 400), the length-40 problems' longest test input.
RANDOMIZED = "position_start_index=randomized,position_start_max=400"
# Evaluation reads an n-position input at floor(k * 400 / n), the mean of
# training's sorted draws, instead of 0..n-1 (rare in training).
SPREAD_EVAL = "position_eval=spread"
# universal_transformer_algorithmic_tiny's depth (recurrence steps) and width.
UT_SHAPE = "num_hidden_layers=4,hidden_size=64,filter_size=256"
# The UT's one block unshared once: a Transformer with the UT set's weights.
UT_PARAMS = "num_hidden_layers=1,hidden_size=64,filter_size=256"
# Depth that grows with the input (issue of the UT's own edge; docs/length_depth.md):
# ceil(a * n) + b steps for n source positions, capped at LENGTH_DEPTH_CAP (past
# the 401 positions of the length-40 problems' test inputs), moved by up to
# LENGTH_DEPTH_RANDOM in training, the input re-added at every step; the
# decoder keeps the UT set's 4 steps (it reads what the encoder computed, and
# a decoder as deep as a 400-symbol source would run 200 steps per symbol).
LENGTH_DEPTH_A, LENGTH_DEPTH_B, LENGTH_DEPTH_RANDOM = 0.5, 1, 1
LENGTH_DEPTH_CAP, DECODER_STEPS = 208, 4


def length_depth(a: float, b: int) -> str:
    """ceil(a * n) + b encoder steps (moved by up to LENGTH_DEPTH_RANDOM in
    training), the input re-added every step, a fixed decoder."""
    return (
        f"rec_steps_per_symbol={a},rec_steps_offset={b},"
        f"rec_steps_random={LENGTH_DEPTH_RANDOM},rec_input_every_step=True,"
        f"rec_decoder_steps={DECODER_STEPS}"
    )


LENGTH_DEPTH = length_depth(LENGTH_DEPTH_A, LENGTH_DEPTH_B)
ORDERLESS_TASKS = ("parity", "sort")
# State tracking (docs/length_depth.md, round 16): relative positions only, a
# causal encoder, labels on every input position, and a length curriculum.
STATE_RECIPE = (
    "position_embedding=none,max_relative_position=2,causal_encoder=True,"
    "input_label_loss_weight=1.0,curriculum_start_length=3,curriculum_steps_per_length=500"
)
# The wavefront's block: the state normalized, no step signal (the input every
# step comes with `length_depth`).
WAVEFRONT_BLOCK = "rec_state_norm=True,step_timing_signal_type=none"
# The wavefront: n + 1 steps per position (moved by up to 1 in training), each
# position running only its last.
WAVEFRONT_A, WAVEFRONT_B = 1.0, 1
WAVEFRONT = (
    f"{length_depth(WAVEFRONT_A, WAVEFRONT_B)},{WAVEFRONT_BLOCK},"
    f"rec_steps_by_position=True,rec_steps_window=1,num_rec_steps={LENGTH_DEPTH_CAP}"
)


@dataclasses.dataclass(frozen=True)
class Entry:
    """A model to compare: a display label, a registered model, hparams set and overrides."""

    label: str
    model: str
    hparams_set: str
    paper_row: str  # key into paper.PAPER_TABLE4's (and babi_report.PAPER_TABLE1's) rows
    hparams: str = ""
    babi_hparams_set: str = ""  # the set for bAbI problems ("": not for bAbI)
    coupled: bool = False  # position coupling for the problem's task (`hparams_for`)
    # Positions chosen by the task (`task_positions`): none, or randomized (and coupled).
    by_task: bool = False
    # (a, b): encoder layers = a length-scaled UT's steps, ceil(a * n) + b, at
    # the problem's longest training input; decoder layers = its decoder's steps.
    depth_matched: tuple[float, int] | None = None

    def hparams_for(self, key: str, problem: str) -> str:
        """The entry's overrides for `problem`: with `coupled`, the coupling of its
        task (reverse, or addition with the problem's separator), an error for
        others; with `by_task`, `task_positions`; with `depth_matched`, the
        layers of `matched_layers`."""
        parts = [self.hparams]
        if self.coupled:
            coupling = _coupling(problem)
            if coupling is None:
                raise ValueError(
                    f"--models: {key} couples positions for reverse and addition problems "
                    f"only, not {problem}"
                )
            parts.append(coupling)
        if self.by_task:
            parts.append(task_positions(problem))
        if self.depth_matched:
            depth = matched_layers(problem, *self.depth_matched)
            layers = f"num_encoder_layers={depth},num_decoder_layers="
            parts.append(f"{layers}{DECODER_STEPS}")
        return ",".join(part for part in parts if part)

    def hparams_set_for(self, problem: str) -> str:
        """The hparams set for `problem`: bAbI problems (fact encoding) get their own."""
        if problem_lib.get(problem).input_encoding != "facts":
            return self.hparams_set
        if not self.babi_hparams_set:
            raise ValueError(f"--models: {self.label!r} has no bAbI configuration")
        return self.babi_hparams_set


ENTRIES = {
    "transformer": Entry(
        "Transformer",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        babi_hparams_set="transformer_babi_tiny",
    ),
    "universal_transformer": Entry(
        "UT",
        "universal_transformer",
        "universal_transformer_algorithmic_tiny",
        "universal_transformer",
        babi_hparams_set="universal_transformer_babi_tiny",
    ),
    "adaptive_universal_transformer": Entry(
        "UT + ACT",
        "universal_transformer",
        "adaptive_universal_transformer_algorithmic_tiny",
        "universal_transformer",
        babi_hparams_set="adaptive_universal_transformer_babi_tiny",
    ),
    # The paper's trick for its algorithmic tasks: positions start at a random
    # offset in training, so the test's longer lengths meet trained positions.
    "universal_transformer_offsets": Entry(
        "UT, random offsets",
        "universal_transformer",
        "universal_transformer_algorithmic_tiny",
        "universal_transformer",
        OFFSETS,
    ),
    # The same offsets for the Transformer: does the trick alone explain the UT's gain?
    "transformer_offsets": Entry(
        "Transformer, random offsets",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        OFFSETS,
    ),
    # The paper's own code (tensor2tensor): each stack, and each recurrence
    # step, its own offset below the batch's length.
    "universal_transformer_per_step": Entry(
        "UT, per-step offsets (paper)",
        "universal_transformer",
        "universal_transformer_algorithmic_tiny",
        "universal_transformer",
        "position_start_index=random_per_step",
    ),
    # Beyond the paper (Cho et al. 2024): reverse puts target t at the position of
    # the source symbol it reverses, EOS at the source's EOS; addition gives digits
    # of equal significance one position. docs/reproduction.md, round 3.
    "universal_transformer_coupled": Entry(
        "UT, coupled positions",
        "universal_transformer",
        "universal_transformer_algorithmic_tiny",
        "universal_transformer",
        OFFSETS,
        coupled=True,
    ),
    "transformer_coupled": Entry(
        "Transformer, coupled positions",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        OFFSETS,
        coupled=True,
    ),
    # What the UT has but shared weights: its depth and width (4 layers, d=64,
    # ff 256) and the position signal before every layer, with coupling. On
    # addition this learns the training lengths where transformer_coupled does not.
    "transformer_ut_shape_coupled": Entry(
        "Transformer, UT's shape, coupled positions at every layer",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        f"{OFFSETS},{UT_SHAPE},position_every_layer=True",
        coupled=True,
    ),
    # Coupled positions drawn at random in training (docs/length_depth.md): the
    # distances of ten-times-longer inputs are seen while training on short ones.
    "universal_transformer_randomized": Entry(
        "UT, randomized coupled positions",
        "universal_transformer",
        "universal_transformer_algorithmic_tiny",
        "universal_transformer",
        RANDOMIZED,
        coupled=True,
    ),
    "transformer_randomized": Entry(
        "Transformer, randomized coupled positions",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        RANDOMIZED,
        coupled=True,
    ),
    "transformer_ut_shape_randomized": Entry(
        "Transformer, UT's shape, randomized coupled positions at every layer",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        f"{RANDOMIZED},{UT_SHAPE},position_every_layer=True",
        coupled=True,
    ),
    # The UT's parameters unshared once (1 + 1 layers, d = 64), randomized coupled
    # positions: the same-size Transformer beside universal_transformer_randomized.
    "transformer_equal_params_randomized": Entry(
        "Transformer, UT's parameters (1 layer), randomized coupled positions",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        f"{RANDOMIZED},{UT_PARAMS}",
        coupled=True,
    ),
    # The UT's own edge (docs/length_depth.md): one table on parity, copy, reverse
    # and addition, positions as each task needs them (`task_positions`).
    "ut_length_depth": Entry(
        "UT, depth ceil(n/2)+1, input every step",
        "universal_transformer",
        "universal_transformer_algorithmic_tiny",
        "universal_transformer",
        f"{LENGTH_DEPTH},num_rec_steps={LENGTH_DEPTH_CAP}",
        by_task=True,
    ),
    "adaptive_ut_length_depth": Entry(
        "UT + ACT, budget ceil(n/2)+1, input every step",
        "universal_transformer",
        "adaptive_universal_transformer_algorithmic_tiny",
        "universal_transformer",
        f"{LENGTH_DEPTH},act_max_steps={LENGTH_DEPTH_CAP}",
        by_task=True,
    ),
    "ut_fixed_depth": Entry(
        "UT, 4 steps",
        "universal_transformer",
        "universal_transformer_algorithmic_tiny",
        "universal_transformer",
        by_task=True,
    ),
    # The UT's one block unshared once: the same parameters (but the step signal).
    "transformer_equal_params": Entry(
        "Transformer, UT's parameters (1 layer)",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        UT_PARAMS,
        by_task=True,
    ),
    "transformer_equal_compute": Entry(
        "Transformer, UT's width, as many layers as its steps at the training length",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        "hidden_size=64,filter_size=256",
        by_task=True,
        depth_matched=(LENGTH_DEPTH_A, LENGTH_DEPTH_B),
    ),
    "transformer_by_task": Entry(
        "Transformer (d = 128, 2 + 2), the task's positions",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        by_task=True,
    ),
    # State tracking (parity, S3): the wavefront UT against the same block at 4
    # steps and Transformers with the same positions, labels and curriculum.
    "ut_wavefront": Entry(
        "UT, wavefront: n+1 steps, one a position",
        "universal_transformer",
        "universal_transformer_algorithmic_tiny",
        "universal_transformer",
        f"{STATE_RECIPE},{WAVEFRONT}",
    ),
    "ut_relative_fixed": Entry(
        "UT, 4 steps, the wavefront's block",
        "universal_transformer",
        "universal_transformer_algorithmic_tiny",
        "universal_transformer",
        f"{STATE_RECIPE},{WAVEFRONT_BLOCK},rec_input_every_step=True",
    ),
    "transformer_relative": Entry(
        "Transformer (d = 128, 2 + 2), relative positions",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        STATE_RECIPE,
    ),
    "transformer_relative_equal_params": Entry(
        "Transformer, UT's parameters (1 layer), relative positions",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        f"{STATE_RECIPE},{UT_PARAMS}",
    ),
    "transformer_relative_equal_compute": Entry(
        "Transformer, UT's width, as many layers as the wavefront's steps",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        f"{STATE_RECIPE},hidden_size=64,filter_size=256",
        depth_matched=(WAVEFRONT_A, WAVEFRONT_B),
    ),
}
LENGTH_TABLE = (
    "ut_length_depth",
    "ut_fixed_depth",
    "transformer_equal_params",
    "transformer_equal_compute",
    "transformer_by_task",
)


STATE_TABLE = (
    "ut_wavefront",
    "ut_relative_fixed",
    "transformer_relative",
    "transformer_relative_equal_params",
    "transformer_relative_equal_compute",
)
TABLES = {"length_table": LENGTH_TABLE, "state_table": STATE_TABLE}


def _coupling(problem: str) -> str | None:
    """The position coupling of `problem`'s task (reverse, addition), else None."""
    task = task_of(problem)
    if task == "reverse":
        return "position_coupling=reverse"
    if task == "addition":
        separator = problem_lib.get(problem).separator_id
        return f"position_coupling=addition,position_separator_id={separator}"
    return None


def task_positions(problem: str) -> str:
    """Positions as the task needs them, the best found for every family
    (docs/length_depth.md): none for parity and sort, whose answer does not
    depend on where a symbol is, with a causal encoder for parity (its order
    is what lets step t carry the parity of the first t bits along; a full
    encoder without positions reads a multiset); for the others randomized
    positions, coupled for reverse and addition, read at evaluation spread
    over the range as training draws them."""
    task = task_of(problem)
    if task == "parity":
        return "position_embedding=none,causal_encoder=True"
    if task in ORDERLESS_TASKS:
        return "position_embedding=none"
    return ",".join(part for part in (RANDOMIZED, _coupling(problem), SPREAD_EVAL) if part)


def matched_layers(problem: str, a: float, b: int) -> int:
    """A length-scaled UT's steps, ceil(a * n) + b, at `problem`'s longest
    training input, its EOS included: a Transformer as deep does its compute."""
    n = problem_lib.get(problem).max_length("train")
    return math.ceil(a * n) + b


def parse_entries(names: list[str]) -> list[Entry]:
    """Names of ENTRIES (or of TABLES: their entries) -> entries; an unknown
    name is an error listing the known ones."""
    names = [key for name in names for key in TABLES.get(name, [name])]
    unknown = [n for n in names if n not in ENTRIES]
    if unknown:
        raise ValueError(
            f"--models: unknown {unknown}; known: {', '.join(ENTRIES)}, or {' or '.join(TABLES)}"
        )
    return [ENTRIES[n] for n in names]
