"""An experiment: model, problem and resolved hparams, saved as JSON in the run dir."""

import dataclasses
import json
import os
from typing import Any

import keras
import tensorflow as tf

# Imported for their registrations: the built-in models, hparams sets and problems.
import t2t_lite.models
import t2t_lite.problems  # noqa: F401
from t2t_lite import files, registry, sequences
from t2t_lite import hparams as hparams_lib
from t2t_lite.data import problem as problem_lib

EXPERIMENT_FILE = "experiment.json"


@dataclasses.dataclass(frozen=True)
class Experiment:
    """What t2t-train resolved from its flags; later binaries read it back."""

    model: str
    problem: str
    hparams_set: str
    hparams: Any
    # What the model's encoder reads (sequences.INPUT_ENCODINGS), the
    # problem's at resolve time; files written before it existed read "tokens".
    input_encoding: str = "tokens"

    @classmethod
    def resolve(
        cls, model: str, problem: str, hparams_set: str, overrides: str = ""
    ) -> "Experiment":
        """Looks up names and applies "k=v,..." overrides; errors name the culprit."""
        model_class = registry.MODELS.get(model)
        input_encoding = registry.PROBLEMS.get(problem).input_encoding
        hp = registry.HPARAMS.get(hparams_set)()
        if not isinstance(hp, model_class.hparams_class):
            raise ValueError(
                f"hparams set {hparams_set!r} makes {type(hp).__name__}, but model {model!r} "
                f"needs {model_class.hparams_class.__name__}"
            )
        hp = hparams_lib.override(hp, overrides)
        labels = getattr(hp, "input_label_loss_weight", 0.0) > 0
        if labels and not registry.PROBLEMS.get(problem).has_input_labels:
            raise ValueError(
                f"input_label_loss_weight: problem {problem!r} has no input labels "
                "(problems with has_input_labels, e.g. algorithmic_parity_binary40 or "
                "algorithmic_permute_three20); set it to 0"
            )
        if (
            getattr(model_class, "tags_inputs", False)
            and not registry.PROBLEMS.get(problem).aligned_targets
        ):
            raise ValueError(
                f"model {model!r} tags each input position, and problem {problem!r}'s targets "
                "are not aligned with its inputs (problems with aligned_targets, e.g. "
                "parsing_from_files_labels); use an encoder-decoder model (transformer)"
            )
        return cls(model, problem, hparams_set, hp, input_encoding)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "problem": self.problem,
            "hparams_set": self.hparams_set,
            "hparams": hparams_lib.to_dict(self.hparams),
            "input_encoding": self.input_encoding,
        }

    def save(self, output_dir: str) -> None:
        """Writes experiment.json atomically."""
        path = os.path.join(output_dir, EXPERIMENT_FILE)
        files.write_atomically(path, json.dumps(self.to_dict(), indent=2, sort_keys=True))

    @classmethod
    def load(cls, output_dir: str) -> "Experiment":
        """Reads experiment.json back; a missing file or key is a clear error."""
        path = os.path.join(output_dir, EXPERIMENT_FILE)
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(
                f"{path} not found: is {output_dir!r} a t2t-train --output_dir?"
            )
        try:
            data = json.loads(files.read_text(path))
            _check_types(data)
            model_class = registry.MODELS.get(data["model"])
            hp = hparams_lib.from_dict(model_class.hparams_class, data["hparams"])
            encoding = data.get("input_encoding", "tokens")
            if encoding not in sequences.INPUT_ENCODINGS:
                raise ValueError(f"input_encoding must be one of {sequences.INPUT_ENCODINGS}")
            return cls(data["model"], data["problem"], data["hparams_set"], hp, encoding)
        except (KeyError, ValueError, json.JSONDecodeError) as err:
            raise ValueError(f"{path}: not a valid experiment file ({err})") from None

    def check_matches(self, output_dir: str) -> None:
        """Refuses to resume a run dir that holds a different experiment."""
        if not tf.io.gfile.exists(os.path.join(output_dir, EXPERIMENT_FILE)):
            return
        saved = Experiment.load(output_dir).to_dict()
        mine = self.to_dict()
        keys = ("model", "problem", "hparams_set", "input_encoding")
        diffs = [k for k in keys if saved[k] != mine[k]]
        diffs += [
            f"hparams.{k}"
            for k in sorted(mine["hparams"])
            if saved["hparams"].get(k) != mine["hparams"][k]
        ]
        if diffs:
            raise ValueError(
                f"{output_dir!r} holds a different experiment (differs in: {', '.join(diffs)}); "
                "use a new --output_dir or the same flags"
            )

    def build_problem(self) -> problem_lib.Problem:
        return problem_lib.get(self.problem)

    def build_model(self, vocab_size: int) -> keras.Model:
        return registry.MODELS.get(self.model)(self.hparams, vocab_size, self.input_encoding)


# experiment.json's keys and the JSON types they hold.
_KEY_TYPES = {"model": str, "problem": str, "hparams_set": str, "hparams": dict}


def _check_types(data) -> None:
    """A hand-edited or foreign experiment.json: the first wrong key is a ValueError."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    for key, kind in _KEY_TYPES.items():
        if key in data and not isinstance(data[key], kind):
            expected = "an object" if kind is dict else "a string"
            raise ValueError(f"{key!r} must be {expected}, got {json.dumps(data[key])}")
