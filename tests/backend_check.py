"""Run under KERAS_BACKEND=jax or torch by tests/test_backends.py: load a model
saved by TensorFlow, compute its logits on the saved features, then train it a
few `fit` steps. Prints one JSON line.

    KERAS_BACKEND=jax python tests/backend_check.py DIR
"""

import json
import os
import sys

import keras
import numpy as np

import t2t_lite.models  # noqa: F401  (registers the models for load_model)


def main(directory: str) -> None:
    saved = np.load(os.path.join(directory, "features.npz"))
    features = {"inputs": saved["inputs"], "targets": saved["targets"]}
    model = keras.models.load_model(os.path.join(directory, "model.keras"))
    logits, aux = model.logits_and_aux(features, training=False)
    result = {
        "backend": keras.backend.backend(),
        "logits": keras.ops.convert_to_numpy(logits).tolist(),
        "aux": {name: float(keras.ops.convert_to_numpy(value)) for name, value in aux.items()},
    }
    model.compile(
        keras.optimizers.Adam(3e-3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
    )
    history = model.fit(
        features, features["targets"], batch_size=len(features["targets"]), epochs=6, verbose=0
    )
    result["losses"] = [float(loss) for loss in history.history["loss"]]
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
