"""Models and their hparams sets; importing this registers them."""

from t2t_lite.models import transformer, transformer_hparams  # noqa: F401
