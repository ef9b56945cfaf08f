"""DecodeOptions: t2t-decode's settings, their defaults, choices and help.

Pure Python (no TensorFlow), so the binary defines its flags from it at import
time (`config_flags.define(DecodeOptions)`); `runner.run` carries them out.
"""

import dataclasses

LM_EVALS = ("lambada", "agreement")
ENGINES = ("tensorflow", "ctranslate2")


def _field(default, help_text: str, choices=None):
    return dataclasses.field(default=default, metadata={"help": help_text, "choices": choices})


@dataclasses.dataclass(frozen=True)
class DecodeOptions:
    """What to decode with which run, and where the outputs go."""

    output_dir: str | None = _field(
        None, "The t2t-train --output_dir (experiment.json, checkpoints)."
    )
    checkpoint_path: str = _field("", "A checkpoint prefix; default: the newest in output_dir.")
    decode_hparams: str = _field("", 'e.g. "beam_size=4,alpha=0.6,extra_length=50".')
    decode_from_file: str = _field("", "Input lines to decode.")
    decode_to_file: str = _field("", "Where to write outputs (default: <input>.decoded).")
    decode_interactive: bool = _field(False, "Decode lines typed on stdin until EOF.")
    decode_reference: str = _field("", "With --decode_from_file: print BLEU against this file.")
    data_dir: str = _field("", "Without an input file: decode this data's eval split.")
    eval_split: str = _field("", "The split to decode from --data_dir (default: dev).")
    max_examples: int = _field(-1, "Decode at most this many split examples (< 0: all).")
    lm_eval: str | None = _field(
        None,
        "Language models, with --decode_from_file: last-word accuracy and perplexity of "
        "passages (lambada), or ranking accuracy of prefix<TAB>correct<TAB>wrong verb lines "
        "(agreement); prints one JSON line, per-line results to --decode_to_file if given.",
        LM_EVALS,
    )
    engine: str = _field(
        "tensorflow",
        "ctranslate2: decode a Transformer run with CTranslate2 (converted into "
        "<output_dir>/ctranslate2/ on first use, reused while the checkpoint is unchanged; "
        "the ctranslate2 extra), same tokenization, decode hparams and outputs.",
        ENGINES,
    )
    xla_compile: bool | None = _field(
        None,
        "Compile the search with XLA (default: on for at most 32 rows, batch_size x beam_size).",
    )
