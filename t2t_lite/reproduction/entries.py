"""What a comparison compares: the models' entries and the UT paper's figures.

An entry is a display label, a registered model, an hparams set and
overrides; `t2t-compare --models` names entries. The paper's Table 4
(algorithmic tasks, train length 40, test length 400) and Tables 5 and 6
(Learning to Execute) give the figures each row is set beside.
"""

import dataclasses

from t2t_lite.data import problem as problem_lib

# UT paper, Table 4 (train length 40, test length 400): (char-acc, seq-acc).
PAPER_TABLE4 = {
    "copy": {"transformer": (0.53, 0.03), "universal_transformer": (0.91, 0.35)},
    "reverse": {"transformer": (0.13, 0.06), "universal_transformer": (0.96, 0.46)},
    "addition": {"transformer": (0.07, 0.0), "universal_transformer": (0.34, 0.02)},
}
TASKS = {
    "identity": "copy",
    "reverse": "reverse",
    "addition": "addition",
    "parity": "parity",
    "sort": "sort",
}
# UT paper, Tables 5 (memorization) and 6 (program evaluation), Learning to
# Execute test sets: (char-acc, seq-acc).
PAPER_LTE = {
    "lte_copy": {"transformer": (0.98, 0.63), "universal_transformer": (1.0, 1.0)},
    "lte_double": {"transformer": (0.94, 0.55), "universal_transformer": (1.0, 1.0)},
    "lte_reverse": {"transformer": (0.81, 0.26), "universal_transformer": (1.0, 1.0)},
    "lte_program": {"transformer": (0.71, 0.29), "universal_transformer": (0.89, 0.63)},
    "lte_control": {"transformer": (0.93, 0.66), "universal_transformer": (1.0, 1.0)},
    "lte_addition": {"transformer": (1.0, 1.0), "universal_transformer": (1.0, 1.0)},
}
# Offsets shared by encoder and decoder, below 400: past the 1..200 test positions
# of the length-20 problems, and covering the 1..400 of the length-40 ones.
OFFSETS = "position_start_index=random,position_start_max=400"
# universal_transformer_algorithmic_tiny's depth (recurrence steps) and width.
UT_SHAPE = "num_hidden_layers=4,hidden_size=64,filter_size=256"


@dataclasses.dataclass(frozen=True)
class Entry:
    """A model to compare: a display label, a registered model, hparams set and overrides."""

    label: str
    model: str
    hparams_set: str
    paper_row: str  # key into PAPER_TABLE4's (and babi_report.PAPER_TABLE1's) rows
    hparams: str = ""
    babi_hparams_set: str = ""  # the set for bAbI problems ("": not for bAbI)
    coupled: bool = False  # position coupling for the problem's task (`hparams_for`)

    def hparams_for(self, key: str, problem: str) -> str:
        """The entry's overrides for `problem`: with `coupled`, the coupling of its
        task (reverse, or addition with the problem's separator); an error for others."""
        if not self.coupled:
            return self.hparams
        task = task_of(problem)
        if task == "reverse":
            coupling = "position_coupling=reverse"
        elif task == "addition":
            separator = problem_lib.get(problem).separator_id
            coupling = f"position_coupling=addition,position_separator_id={separator}"
        else:
            raise ValueError(
                f"--models: {key} couples positions for reverse and addition problems "
                f"only, not {problem}"
            )
        return ",".join(part for part in (self.hparams, coupling) if part)

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
}


def task_of(problem: str) -> str | None:
    """algorithmic_reverse_decimal20 -> "reverse", lte_copy -> "LTE copy"; else None."""
    parts = problem.split("_")
    if len(parts) == 3 and parts[0] == "algorithmic":
        return TASKS.get(parts[1])
    if problem in PAPER_LTE:
        return f"LTE {parts[1]}"
    return None


def paper_figures(problem: str, paper_row: str) -> tuple[float | None, float | None]:
    """The paper's (char-acc, seq-acc) for a problem and model row, or (None, None)."""
    table = PAPER_LTE.get(problem) or PAPER_TABLE4.get(task_of(problem), {})
    return table.get(paper_row, (None, None))


def parse_entries(names: list[str]) -> list[Entry]:
    """Names of ENTRIES -> entries; an unknown name is an error listing the known ones."""
    unknown = [n for n in names if n not in ENTRIES]
    if unknown:
        raise ValueError(f"--models: unknown {unknown}; known: {', '.join(ENTRIES)}")
    return [ENTRIES[n] for n in names]
