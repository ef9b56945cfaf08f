"""Package metadata for t2t_lite."""

import pathlib

import setuptools

setuptools.setup(
    name="t2t_lite",
    version="0.1.0",
    description=(
        "Transformer and Universal Transformer (with ACT) for TensorFlow 2 / "
        "Keras 3, driven the tensor2tensor way."
    ),
    long_description=pathlib.Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    # The problems/ folder installs as t2t_lite.problems: one import name, the project's own.
    packages=[*setuptools.find_packages(include=["t2t_lite", "t2t_lite.*"]), "t2t_lite.problems"],
    package_dir={"t2t_lite.problems": "problems"},
    # Console scripts into the package: an editable install follows the code
    # (bin/ holds launchers of the same modules, for a checkout).
    # tensor2tensor's program names run ours too (our flags): t2t-trainer,
    # t2t-decoder, t2t-avg-all, t2t-exporter.
    entry_points={
        "console_scripts": [
            f"{script}=t2t_lite.programs.{name}:run"
            for name, aliases in {
                "datagen": (),
                "train": ("t2t-trainer",),
                "compare": (),
                "decode": ("t2t-decoder",),
                "avg_checkpoints": ("t2t-avg-all",),
                "export": ("t2t-exporter",),
                "visualize": (),
                "evalb": (),
                "bleu": (),
            }.items()
            for script in (f"t2t-{name.replace('_', '-')}", *aliases)
        ]
    },
    install_requires=[
        "tensorflow>=2.21,<2.22",
        "keras>=3.10,<4",
        "tensorflow-text>=2.21,<2.22",
        # The subword vocabulary learner (compiled; its output runs in tf-text ops).
        "tokenizers>=0.21,<0.24",
        "tensorflow-datasets>=4.9,<5",
        "sacrebleu>=2.4,<3",
        "absl-py>=2.1,<3",
        "tensorboard>=2.20,<3",
        "numpy>=1.26,<3",
    ],
    extras_require={
        # The example client in examples/ (gRPC and REST requests to TF Serving).
        "serving": ["tensorflow-serving-api>=2.21,<2.22"],
        # t2t-visualize and t2t-compare's plots.
        "viz": ["matplotlib>=3.7,<4"],
        # t2t-export --format=ctranslate2, and the decoding benchmark's reference.
        "ctranslate2": ["ctranslate2>=4.5,<5"],
        # The layers and models on Keras's other backends (tests/test_backends.py, slow tier).
        # torch pinned: where the index has this release's CPU wheel (2.13.0+cpu) pip takes
        # it, where an open range would pick the newest release, a CUDA build of several GB.
        # Without it: pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
        "backends": ["jax>=0.4.30,<0.11", "torch==2.13.0"],
        "test": [
            # pytest 9.2 stops pytest-xdist's --dist=loadgroup from grouping
            # (pytest-xdist issue 1386): a trained fixture would train on both workers.
            "pytest>=8,<9.2",
            # The README's test command runs on two workers (-n 2).
            "pytest-xdist>=3.5,<4",
            "ruff>=0.6",
            "tensorflow-serving-api>=2.21,<2.22",
            "matplotlib>=3.7,<4",
            "ctranslate2>=4.5,<5",
        ],
    },
)
