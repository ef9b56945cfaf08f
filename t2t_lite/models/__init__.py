"""Models and their hparams sets; importing this registers them."""

from t2t_lite.models import (  # noqa: F401
    encoder_only,
    transformer,
    transformer_hparams,
    universal_transformer,
    universal_transformer_hparams,
)
