"""Concrete problems; importing this registers them."""

from t2t_lite.problems import (
    algorithmic,  # noqa: F401
    babi,  # noqa: F401
    learning_to_execute,  # noqa: F401
    parsing,  # noqa: F401
    text_files,  # noqa: F401
    translate_gettext,  # noqa: F401
    translate_tfds,  # noqa: F401
)
