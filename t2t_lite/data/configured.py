"""Problems that read the user's files: what t2t-datagen was given (paths and
options) is kept in the data dir, `<data_dir>/<problem><config_suffix>`, so
that t2t-train and t2t-decode find the same files again without the flags."""

import json
import os

import tensorflow as tf

from t2t_lite import files


class ConfiguredByFiles:
    """A mixin for a Problem: `write_config` at datagen time, `_config` after."""

    config_suffix = ".files.json"
    reads = "your files"  # what the problem reads, for the message below
    datagen_flags = "--train_files=..."  # the flags a first t2t-datagen needs

    def config_path(self, data_dir: str) -> str:
        return os.path.join(data_dir, f"{self.name}{self.config_suffix}")

    def write_config(self, data_dir: str, config: dict) -> None:
        files.write_atomically(self.config_path(data_dir), json.dumps(config, indent=2))

    def _config(self, data_dir: str) -> dict:
        path = self.config_path(data_dir)
        if not tf.io.gfile.exists(path):
            raise ValueError(
                f"problem {self.name!r} reads {self.reads}: run t2t-datagen "
                f"--problem={self.name} --data_dir={data_dir} {self.datagen_flags} first"
            )
        try:
            config = json.loads(files.read_text(path))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not t2t-datagen's configuration ({err})") from None
        if not isinstance(config, dict):
            raise ValueError(f"{path}: not t2t-datagen's configuration (not a JSON object)")
        return config
