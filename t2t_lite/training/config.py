"""TrainConfig: t2t-train's loop settings, their defaults, choices and help.

Pure Python (no TensorFlow), so binaries can define their flags from it at
import time: `config_flags.define(TrainConfig)` makes one flag per field
with the field's default, choices and help.
"""

import dataclasses

STRATEGIES = ("default", "one_device", "mirrored", "multi_worker")
# --mixed_precision -> Keras dtype policy. Variables, logits and the loss stay float32.
PRECISIONS = {"none": "float32", "fp16": "mixed_float16", "bf16": "mixed_bfloat16"}


def _field(default, help_text: str, choices=None):
    return dataclasses.field(default=default, metadata={"help": help_text, "choices": choices})


def split_metric(text: str) -> tuple[str, str]:
    """--keep_best's SPLIT/METRIC -> (split, metric); a ValueError saying the form."""
    split, slash, metric = text.partition("/")
    if not (slash and split and metric) or "/" in metric:
        raise ValueError(
            f"--keep_best={text!r}: expected SPLIT/METRIC, e.g. valid_long/sequence_accuracy"
        )
    return split, metric


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Loop settings (t2t-train's flags), as opposed to model hparams."""

    train_steps: int = _field(1000, "Total training steps (resume counts from the checkpoint).")
    eval_steps: int = _field(100, "Batches per periodic evaluation (< 0: whole split).")
    local_eval_frequency: int = _field(
        500, "Evaluate every N steps (and checkpoint, unless --save_checkpoints_* is set)."
    )
    save_checkpoints_steps: int = _field(
        0, "Checkpoint every N steps, whatever the evaluation cadence (0: at each evaluation)."
    )
    save_checkpoints_secs: int = _field(
        0, "Also checkpoint when this many seconds have passed since the last save (0: off)."
    )
    train_minutes: float = _field(
        0.0,
        "Time budget: stop with a checkpoint and a final evaluation once training has run "
        "this many minutes in all (resumes included), or at --train_steps (0: no budget).",
    )
    eval_splits: tuple[str, ...] = _field(
        (),
        "Splits evaluated at every checkpoint, --eval_steps batches each (default: the "
        "problem's eval split, dev), e.g. dev,valid_long to choose settings on long sequences.",
    )
    keep_checkpoint_max: int = _field(5, "Checkpoints to keep.")
    keep_best: str = _field(
        "",
        "SPLIT/METRIC, e.g. valid_long/sequence_accuracy: also keep the checkpoint whose "
        "periodic evaluation of SPLIT (evaluated at every one, and at the last step) has "
        "the best METRIC (loss, perplexity: lowest; others: highest) in <output_dir>/best, "
        "and evaluate it at the end into metrics_best.json ('': off).",
    )
    log_step_count_steps: int = _field(100, "Progress line every N steps.")
    random_seed: int = _field(
        1, "Seed for initialisation, dropout and shuffling (data a trainer generates uses seed 1)."
    )
    xla_compile: bool = _field(False, "Compile the forward/backward step with XLA.")
    strategy: str = _field(
        "default",
        "tf.distribute strategy; multi_worker reads the cluster from TF_CONFIG.",
        STRATEGIES,
    )
    devices: tuple[str, ...] = _field(
        (), "Devices for one_device/mirrored (default: all local GPUs)."
    )
    mixed_precision: str = _field(
        "none",
        "Compute in float16 (with loss scaling) or bfloat16; variables stay float32.",
        tuple(PRECISIONS),
    )
    accumulation_steps: int = _field(
        1, "Sum the gradients of N micro-batches (batch_size tokens each) per update."
    )
    eval_bleu_examples: int = _field(
        100,
        "Text problems: BLEU of greedy decodes of N eval examples spread over the split (0: off).",
    )

    def __post_init__(self):
        for key in (
            "train_steps",
            "local_eval_frequency",
            "keep_checkpoint_max",
            "log_step_count_steps",
            "accumulation_steps",
        ):
            if getattr(self, key) < 1:
                raise ValueError(f"--{key} must be >= 1, got {getattr(self, key)}")
        for key in ("save_checkpoints_steps", "save_checkpoints_secs", "train_minutes"):
            if not getattr(self, key) >= 0:
                raise ValueError(f"--{key} must be >= 0 (0: off), got {getattr(self, key)}")
        if not 0 <= self.random_seed < 2**31:
            raise ValueError(f"--random_seed must be in [0, 2**31), got {self.random_seed}")
        if self.eval_bleu_examples < 0:
            raise ValueError(f"--eval_bleu_examples must be >= 0, got {self.eval_bleu_examples}")
        if self.keep_best:
            split_metric(self.keep_best)
        if self.eval_steps == 0:
            raise ValueError("--eval_steps must be positive, or negative for the whole split")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"--strategy={self.strategy!r} is not one of {', '.join(STRATEGIES)}")
        if self.mixed_precision not in PRECISIONS:
            raise ValueError(
                f"--mixed_precision={self.mixed_precision!r} is not one of {', '.join(PRECISIONS)}"
            )
