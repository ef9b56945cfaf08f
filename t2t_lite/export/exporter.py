"""What t2t-export does: a trained run -> export_dir/<version>/, atomically.

Two formats: a SavedModel (TF Serving; text in, text out) or a CTranslate2
model directory (the Transformer only).
"""

import contextlib
import json
import logging as py_logging
import os
import tempfile

import keras
import tensorflow as tf
import tensorflow_text
from absl import logging

from t2t_lite import experiment as experiment_lib
from t2t_lite import files, run_dir
from t2t_lite import hparams as hparams_lib
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.export import ctranslate2_model, serving

# Beside the model in a directory export (CTranslate2, Keras).
FLAT_METADATA_FILE = "t2t_lite_export.json"
# Beside the SavedModel; TF Serving's loader ignores assets.extra except for warmup.
METADATA_FILE = os.path.join("assets.extra", FLAT_METADATA_FILE)
DEFAULT_DECODE_HPARAMS = "beam_size=4,alpha=0.6"
SAVED_MODEL, CTRANSLATE2, KERAS = "saved_model", "ctranslate2", "keras"
FORMATS = (SAVED_MODEL, CTRANSLATE2, KERAS)
KERAS_FILE = "model.keras"  # with the vocabulary (vocab.txt) and FLAT_METADATA_FILE
# An export is written as <export_dir>/.incomplete-<owner tag><version>
# (files.incomplete_name, hidden from a server's listing), then renamed.


def decode_hparams(overrides: str) -> decoder_lib.DecodeHParams:
    """The search an export holds: beam or greedy (sampling is refused)."""
    hp = hparams_lib.override(decoder_lib.DecodeHParams(), DEFAULT_DECODE_HPARAMS)
    hp = decoder_lib.decode_hparams(overrides, hp)
    hparams_lib.require(
        hp.temperature == 0 and hp.top_k == 0,
        "temperature, top_k",
        "an export serves beam or greedy search; sampling is not exported",
    )
    return hp


@contextlib.contextmanager
def _logging_kept():
    """Undoes what saving does to Python logging (it sets absl's logger to
    WARNING and adds a root handler), so later INFO lines still show."""
    absl_logger = logging.get_absl_logger()
    level, handlers = absl_logger.level, list(py_logging.getLogger().handlers)
    try:
        yield
    finally:
        absl_logger.setLevel(level)
        py_logging.getLogger().handlers[:] = handlers


def versions(export_dir: str) -> list[int]:
    """The versions (numeric subdirectories) already in export_dir."""
    if not tf.io.gfile.isdir(export_dir):
        return []
    names = [name.rstrip("/") for name in tf.io.gfile.listdir(export_dir)]
    return sorted(int(name) for name in names if name.isdigit())


def export(
    output_dir: str,
    export_dir: str,
    checkpoint_path: str = "",
    overrides: str = "",
    version: int = 0,
    data_dir: str = "",
    export_format: str = SAVED_MODEL,
    xla_max_rows: int = 0,
) -> str:
    """Writes export_dir/<version> (default: one past the newest) and returns its path.

    The export is written under a hidden temporary name in export_dir and
    renamed into place when complete, so a server watching export_dir never
    sees half an export; an existing version is never overwritten.
    """
    if export_format not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {export_format!r}")
    if xla_max_rows < 0 or (xla_max_rows and export_format != SAVED_MODEL):
        raise ValueError(
            f"--xla_max_rows must be >= 0, and 0 unless --format={SAVED_MODEL}, got {xla_max_rows}"
        )
    hp = decode_hparams(overrides)
    with files.made_dir_removed_on_failure(export_dir):
        return _export(
            output_dir,
            export_dir,
            checkpoint_path,
            hp,
            version,
            data_dir,
            export_format,
            xla_max_rows,
        )


def _export(
    output_dir: str,
    export_dir: str,
    checkpoint_path: str,
    hp,
    version: int,
    data_dir: str,
    export_format: str,
    xla_max_rows: int,
) -> str:
    """`export` once its options are checked."""
    files.check_writable_dir(export_dir, "--export_dir")
    existing = versions(export_dir)
    version = version or (existing[-1] + 1 if existing else 1)
    if version < 1:
        raise ValueError(f"--version must be >= 1, got {version}")
    final = os.path.join(export_dir, str(version))
    if tf.io.gfile.exists(final):
        raise ValueError(f"{final} exists; pick another --version (existing: {existing})")
    experiment = experiment_lib.Experiment.load(output_dir)
    if export_format == CTRANSLATE2:
        ctranslate2_model.check_mappable(experiment.model, experiment.input_encoding)
    problem, model, path = run_dir.open_run(output_dir, checkpoint_path)
    tokenizer = problem.graph_tokenizer(data_dir)
    files.remove_incomplete(export_dir)
    temporary = files.incomplete_name(final, hidden=True)
    metadata = {
        "format": export_format,
        "model": experiment.model,
        "hparams_set": experiment.hparams_set,
        "problem": problem.name,
        "checkpoint": files.absolute(path),
        "decode_hparams": hparams_lib.to_dict(hp),
        "tensorflow": tf.__version__,
    }
    try:
        if export_format == SAVED_MODEL:
            metadata["xla_max_rows"] = xla_max_rows
            constraint = problem.decode_constraint(hp)
            module = serving.ServingModule(
                model, tokenizer, hp, problem.vocab_size, xla_max_rows, constraint
            )
            _write_saved_model(temporary, module, metadata)
            last = "saved_model.pb"
        elif export_format == KERAS:
            _write_keras(temporary, model, tokenizer.vocabulary(), metadata)
            last = KERAS_FILE
        else:
            _write_ctranslate2(temporary, model, tokenizer.vocabulary(), hp, metadata)
            last = "model.bin"
        files.rename_dir(temporary, final, last=(last,))
    finally:
        if tf.io.gfile.exists(temporary):
            files.remove_tree(temporary)
    logging.info("Exported %s (%s) to %s.", path, hp, final)
    return final


def _write_saved_model(temporary, module: serving.ServingModule, metadata: dict) -> None:
    with _logging_kept():
        tf.saved_model.save(module, temporary, signatures=module.signatures())
    metadata = {
        **metadata,
        "signatures": {
            serving.TEXT_SIGNATURE: "inputs: string [N] -> outputs: string [N], "
            "scores: float [N], status: string [N]",
            serving.IDS_SIGNATURE: "inputs: int32 [N, S] -> outputs: int32 [N, T], "
            "scores: float [N], status: string [N]",
        },
        "tensorflow_text": tensorflow_text.__version__,
    }
    files.write_atomically(
        os.path.join(temporary, METADATA_FILE), json.dumps(metadata, indent=2) + "\n"
    )


def _write_ctranslate2(temporary, model, tokens: list[str], hp, metadata: dict) -> None:
    # Room for the longest output plus EOS, after CTranslate2's start token.
    max_positions = hp.max_output_positions + 1
    ctranslate2_model.write(model, tokens, max_positions, temporary)
    metadata = {
        **metadata,
        "ctranslate2": ctranslate2_model.version(),
        # translate_batch options that decode as t2t-decode does with these decode hparams.
        "translate_options": ctranslate2_model.translate_options(hp),
    }
    files.write_atomically(
        os.path.join(temporary, FLAT_METADATA_FILE), json.dumps(metadata, indent=2) + "\n"
    )


def _write_keras(temporary, model, tokens: list[str], metadata: dict) -> None:
    """The model in Keras's own format (keras.models.load_model reads it back,
    the package imported), its vocabulary one token a line, and the metadata.
    Keras writes a local file: on other filesystems it is written locally, then
    copied."""
    tf.io.gfile.makedirs(temporary)
    with tempfile.TemporaryDirectory(prefix="t2t-keras-") as local:
        written = os.path.join(local, KERAS_FILE)
        model.save(written)
        tf.io.gfile.copy(written, os.path.join(temporary, KERAS_FILE))
    files.write_atomically(os.path.join(temporary, "vocab.txt"), "".join(t + "\n" for t in tokens))
    metadata = {**metadata, "keras": keras.__version__}
    del metadata["decode_hparams"]  # the file holds no search
    files.write_atomically(
        os.path.join(temporary, FLAT_METADATA_FILE), json.dumps(metadata, indent=2) + "\n"
    )
