"""Translation tables: the Transformer paper's Table 3 and the UT paper's Table 7.

A row is a variation of one base recipe (a small Transformer; the paper's
base is N=6, d=512, h=8, ff=2048): the same change, scaled to the base, with
the paper's figures beside it. Rows that change only decoding (greedy instead
of beam 4, the average of the last 5 checkpoints instead of the last one)
reuse the runs of the row they decode (`trains_as`). Each run is scored on a
split of the problem (dev by default; test once, for the final rows): its
perplexity (final evaluation, the model's distribution without label
smoothing, per subword) and sacrebleu's BLEU of the detokenized decodes.

  t2t-compare --problems=translate_gettext --models=table3 --seeds=1,2,3 \\
      --train_steps=3000 --data_dir=D --output_dir=O
"""

import dataclasses

from t2t_lite import checkpoints
from t2t_lite import run_dir as run_dir_lib
from t2t_lite.reproduction import greedy, seed_stats
from t2t_lite.reproduction.entries import Entry
from t2t_lite.training import averaging

BEAM = "beam_size=4,alpha=0.6"  # the paper's decoding
AVERAGE_LAST = 5  # the paper's base models: the average of the last 5 checkpoints
# The base recipe: transformer_tiny (N=2, d=128, h=4, ff=512, dropout 0.1,
# label smoothing 0.1) with a warmup its CPU budget leaves (docs/translation.md).
BASE_SET = "transformer_tiny"
BASE = "learning_rate_warmup_steps=800"
# A UT of the base's parameter count (8k vocabulary): one shared block per stack
# at d=156, ff=624 against two layers at d=128, ff=512 (1.93M against 1.94M).
UT_EQUAL = f"{BASE},hidden_size=156,filter_size=624,num_rec_steps=4"


@dataclasses.dataclass(frozen=True)
class Row:
    """One table row: a variation of the base, and the paper's (perplexity, BLEU)."""

    group: str
    label: str
    hparams: str = ""  # the row's overrides, after BASE
    paper: tuple[float | None, float | None] = (None, None)
    model: str = "transformer"
    hparams_set: str = BASE_SET
    decode: str = BEAM
    average: int = 0  # decode the average of the last N checkpoints (0: the last one)
    trains_as: str = ""  # decode the runs of that row instead of training new ones

    def entry(self) -> Entry:
        return Entry(self.label, self.model, self.hparams_set, "transformer", self.hparams)


# The Transformer paper, Table 3 (newstest2013 dev perplexity and BLEU), each
# row at this base's scale: 4x heads is 16 (the paper's 32 against 8), d_k
# halved is 16 (the paper's d_k=32 row), fewer and more layers 1 and 4 (the
# paper's 2 and 8 against 6), half and double width.
TABLE3 = {
    "t3_base": Row("base", "base (N=2, d=128, h=4, ff=512)", BASE, (4.92, 25.8)),
    "t3_heads1": Row("A", "1 head (d_k=128)", f"{BASE},num_heads=1", (5.29, 24.9)),
    "t3_heads16": Row("A", "16 heads (d_k=8)", f"{BASE},num_heads=16", (5.01, 25.4)),
    # (B): d_k halved (the paper's 16 against 64 per head is a quarter; 32 is half).
    "t3_keys16": Row("B", "d_k=16", f"{BASE},attention_key_channels=64", (5.01, 25.4)),
    "t3_layers1": Row("C", "N=1", f"{BASE},num_hidden_layers=1", (6.11, 23.7)),
    "t3_layers4": Row("C", "N=4", f"{BASE},num_hidden_layers=4", (4.88, 25.5)),
    "t3_width64": Row("C", "d=64 (d_k=16)", f"{BASE},hidden_size=64", (5.75, 24.5)),
    "t3_width256": Row("C", "d=256 (d_k=64)", f"{BASE},hidden_size=256", (4.66, 26.0)),
    "t3_dropout0": Row(
        "D",
        "dropout 0",
        f"{BASE},layer_prepostprocess_dropout=0,attention_dropout=0,relu_dropout=0",
        (5.77, 24.6),
    ),
    "t3_smoothing0": Row("D", "label smoothing 0", f"{BASE},label_smoothing=0", (4.67, 25.3)),
    "t3_learned": Row("E", "learned positions", f"{BASE},position_embedding=learned", (4.92, 25.7)),
    "t3_separate": Row(
        "recipe",
        "separate source, target and softmax matrices",
        f"{BASE},shared_embedding_and_softmax_weights=false",
    ),
    "t3_greedy": Row(
        "recipe",
        "greedy (base: beam 4, alpha 0.6)",
        BASE,
        decode="beam_size=1",
        trains_as="t3_base",
    ),
    "t3_average5": Row(
        "recipe",
        "average of the last 5 checkpoints",
        BASE,
        average=AVERAGE_LAST,
        trains_as="t3_base",
    ),
}
# The UT paper, Table 7 (WMT14 En-De test BLEU): Transformer base 28.0, UT base
# 28.9 at the same number of parameters. Compare these at equal training time
# (t2t-compare --train_minutes).
TABLE7 = {
    "t7_transformer": Row("7", "Transformer (base)", BASE, (None, 28.0)),
    "t7_ut": Row(
        "7",
        "UT, 4 steps, equal parameters",
        UT_EQUAL,
        (None, 28.9),
        "universal_transformer",
        "universal_transformer_tiny",
    ),
    "t7_ut_act": Row(
        "7",
        "UT + ACT (at most 8 steps), equal parameters",
        f"{UT_EQUAL},act_max_steps=8",
        (None, None),
        "universal_transformer",
        "adaptive_universal_transformer_tiny",
    ),
}
ROWS = {**TABLE3, **TABLE7}
TABLES = {"table3": list(TABLE3), "table7": list(TABLE7)}
# The row each table's variations are read against.
REFERENCE = {"table3": "t3_base", "table7": "t7_transformer"}


def is_translation(models: list[str]) -> bool:
    """Whether --models names translation rows (or tables); mixing kinds is an error."""
    kinds = {name in TABLES or name.startswith(("t3_", "t7_")) for name in models}
    if len(kinds) > 1:
        raise ValueError("--models: compare translation rows and other models separately")
    return kinds == {True}


def parse_rows(models: list[str]) -> list[str]:
    """--models names (rows, or "table3" / "table7" for all of one) -> row keys, in order."""
    keys = []
    for name in models:
        for key in TABLES.get(name, [name]):
            if key not in keys:
                keys.append(key)
    return keys


def training_entries(keys: list[str]) -> dict[str, Entry]:
    """The runs the rows need: one per row that trains (a decode-only row's own
    training row is added when it is not asked for)."""
    trained = {}
    for key in keys:
        source = ROWS[key].trains_as or key
        trained[source] = ROWS[source].entry()
    return trained


def score(row: Row, run_dir: str, data_dir: str, split: str) -> dict:
    """BLEU (and accuracies) of one run's decodes of `split` with the row's decoding."""
    checkpoint = averaging.newest_average(run_dir, row.average) if row.average else ""
    name = f"bleu_{'avg' if row.average else 'last'}_{row.decode.replace(',', '_')}"
    return greedy.evaluate(run_dir, data_dir, split, -1, row.decode, checkpoint, name)


def parameters(run_dir: str) -> int:
    """The trained model's parameter count (embeddings included)."""
    _, model, _ = run_dir_lib.open_run(run_dir)
    return int(sum(v.shape.num_elements() for v in model.trainable_variables))


@dataclasses.dataclass(frozen=True)
class Figures:
    """One run's figures in a row. perplexity: the final evaluation's on the split
    (None where it has none); steps and minutes: how far and how long it trained
    (a time budget's runs differ in steps; minutes 0 where unrecorded); ponder:
    the adaptive UT's mean (encoder, decoder) ponder time per token on the split,
    else None."""

    seed: int | None
    run_dir: str
    perplexity: float | None
    bleu: float
    params: int
    steps: int
    minutes: float
    ponder: tuple[float, float] | None = None


def trained_steps(run_dir: str) -> int:
    """The step of the run's newest checkpoint: how far it trained."""
    return checkpoints.step_of(checkpoints.latest(run_dir))


def table_rows(keys: list[str], trained: dict[str, dict], data_dir: str, split: str) -> list:
    """Per row key: (row, [Figures per seed]), from the trained rows' comparison
    results (runs.run's rows, by training key)."""
    table = []
    # Per run dir: (params, steps, minutes); decode-only rows share their training row's.
    trainings: dict[str, tuple[int, int, float]] = {}
    for key in keys:
        row = ROWS[key]
        source = trained[row.trains_as or key]
        figures = []
        for seed, run_dir, results in seed_stats.runs(source):
            decoded = score(row, run_dir, data_dir, split)
            metrics = results.get(split, {})
            ponder = None
            if "encoder_ponder_time" in metrics:
                ponder = (metrics["encoder_ponder_time"], metrics["decoder_ponder_time"])
            if run_dir not in trainings:
                steps = trained_steps(run_dir)
                minutes = run_dir_lib.trained_seconds(run_dir, steps) / 60.0
                trainings[run_dir] = (parameters(run_dir), steps, minutes)
            perplexity = metrics.get("perplexity")
            figures.append(
                Figures(seed, run_dir, perplexity, decoded["bleu"], *trainings[run_dir], ponder)
            )
        table.append((row, figures))
    return table


def _paper(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def markdown(table: list, split: str) -> str:
    """The rows beside the paper's: params, training steps and minutes, perplexity and BLEU,
    median [range] over seeds; with an adaptive row (Table 7), its ponder time per
    token, encoder / decoder. Then each variation against its reference row."""
    pondered = any(f.ponder is not None for _, figures in table for f in figures)
    ponder_head = f" {split} ponder time (enc / dec) |" if pondered else ""
    lines = [
        f"| group | variation | params | steps | train min | {split} PPL | {split} BLEU "
        "| paper PPL | paper BLEU |" + ponder_head,
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        + (" ---: |" if pondered else ""),
    ]
    for row, figures in table:
        params = seed_stats.median([f.params for f in figures])
        steps = seed_stats.spread([f.steps for f in figures], 0)
        recorded = [f.minutes for f in figures if f.minutes]
        minutes = seed_stats.spread(recorded, 1) if recorded else "-"
        ppl = [f.perplexity for f in figures if f.perplexity is not None]
        ppl_text = "-" if not ppl or row.trains_as else seed_stats.spread(ppl)
        bleu = seed_stats.spread([f.bleu for f in figures], 1)
        line = (
            f"| {row.group} | {row.label} | {params / 1e6:.2f}M | {steps} | {minutes} | {ppl_text} "
            f"| {bleu} "
            f"| {_paper(row.paper[0])} | {_paper(row.paper[1])} |"
        )
        if pondered:
            ponder = [f.ponder for f in figures if f.ponder is not None]
            line += (
                f" {seed_stats.spread([p[0] for p in ponder])} / "
                f"{seed_stats.spread([p[1] for p in ponder])} |"
                if ponder
                else " - |"
            )
        lines.append(line)
    versus = against_reference(table, split)
    return "\n".join(lines) + (f"\n\n{versus}" if versus else "")


def _reference(row: Row) -> str:
    """The key of the row a row is read against."""
    in_table3 = any(row is other for other in TABLE3.values())
    return REFERENCE["table3" if in_table3 else "table7"]


def _beyond(ours: list[float], base: list[float], paired: bool) -> str:
    """Whether a difference is larger than the seeds' spread: unpaired, the two
    ranges apart; paired (a decode-only row on the reference's own runs), every
    seed's difference of the median's sign."""
    if min(len(ours), len(base)) < 2:
        return "one seed"
    if paired:
        diffs = [a - b for a, b in zip(ours, base, strict=True)]
        side = seed_stats.median(diffs) > 0
        return "every seed" if all(d != 0 and (d > 0) == side for d in diffs) else "not every seed"
    apart = seed_stats.above(ours, base) or seed_stats.above(base, ours)
    return "apart" if apart else "overlap"


def _versus(ours: list[float], base: list[float], ours_paper, base_paper, paired, digits):
    """(our median difference, the paper's, whether its direction holds, beyond the spread)."""
    if not ours or not base:
        return "-", "-", "-", "-"
    delta = seed_stats.median(ours) - seed_stats.median(base)
    if ours_paper is None or base_paper is None:
        paper, direction = "-", "-"
    else:
        paper_delta = ours_paper - base_paper
        paper = f"{paper_delta:+.{digits}f}"
        direction = (
            "none in the paper"
            if paper_delta == 0
            else ("yes" if delta * paper_delta > 0 else "no")
        )
    return f"{delta:+.{digits}f}", paper, direction, _beyond(ours, base, paired)


def against_reference(table: list, split: str) -> str:
    """Each variation against its table's reference row (Table 3's base, Table 7's
    Transformer), median minus median, beside the paper's difference: whether the
    paper's direction holds and whether the difference is beyond the seeds' spread.
    "" when the table holds no reference row."""
    present = {id(row): figures for row, figures in table}
    lines = []
    for row, figures in table:
        key = _reference(row)
        reference = ROWS[key]
        if row is reference or id(reference) not in present:
            continue
        base = present[id(reference)]
        paired = row.trains_as == key
        if paired:  # the same runs, seed for seed
            by_seed = {f.seed: f for f in base}
            base = [by_seed[f.seed] for f in figures]
        ppl = _versus(
            [] if row.trains_as else [f.perplexity for f in figures if f.perplexity is not None],
            [f.perplexity for f in base if f.perplexity is not None],
            row.paper[0],
            reference.paper[0],
            paired,
            2,
        )
        bleu = _versus(
            [f.bleu for f in figures],
            [f.bleu for f in base],
            row.paper[1],
            reference.paper[1],
            paired,
            1,
        )
        lines.append(
            f"| {row.label} | {reference.label} | {ppl[0]} | {ppl[1]} | {bleu[0]} | {bleu[1]} "
            f"| {ppl[2]} / {bleu[2]} | {ppl[3]} / {bleu[3]} |"
        )
    if not lines:
        return ""
    head = (
        f"| variation | minus | {split} PPL | paper PPL | {split} BLEU | paper BLEU "
        "| the paper's direction (PPL / BLEU) | beyond the seeds' spread (PPL / BLEU) |"
    )
    return "\n".join([head, "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |", *lines])
